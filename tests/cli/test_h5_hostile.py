"""Small hostile HDF5 inputs, for cm and probe: each is exit 2 with a message naming the file, the
dataset and what is wrong, quickly, and before anything is allocated for the declared shape:
- declared shapes the file's storage does not hold: a contiguous dataset created and never written
  (a 5 KB file declaring 2^40 x 4), a chunked one none of whose chunks were written (2^27 x 4), one
  whose writer stopped half-way (the first missing chunk's rows are named, also among 131,072 chunks);
- declared shapes too large for memory to read (small gzip "bombs" of zeros, chunks written
  directly; RMDIAG_MEMORY_LIMIT stands for a small machine): a 1-D dataset read whole, and a
  [P, R] / [N, d] dataset whose rows one rank would hold;
- types: a 1-D dataset of float64[4] arrays (not a [P, 4] matrix), an enum other than h5py's
  booleans (h5py's booleans are read: a positive control);
- links: a dangling soft link, soft links in a loop, an external link to a missing file;
- a positive control: a file with a user block gives the same outputs as without one;
- corrupt variable-length string heaps (string users of cm): an object larger than its collection,
  a collection larger than the file, a reference to a missing object, a string length that differs
  from its object's, a superblock declaring the file's end inside the collection, characters
  declared 1 GiB wide in the string type (HDF5 1.10 would
  copy past its buffers on each of these, or loop forever on a free-space object of size 0, or
  follow a reference to something that is no collection, or read other bytes than the check did,
  or size each string's buffer by the width). Under
  the asan preset these also show that no code runs on a heap HDF5 overwrote: the sanitizers stay
  silent.
Each case runs `validate`; the storage cases also `run`."""
import os
import time
import zlib

from rdtest import *

d = scratch("h5_hostile")
rng = np.random.default_rng(5)
P, R = 40, 3
N, D = 60, 4
TASKS = {"t": {"classes": [[0], [1]]}}
SEE = "see docs/reference.md, 'HDF5 inputs'"


def cm_file(f, skip=()):
    if "rc" not in skip:
        f["cm/reward_chosen"] = rng.normal(size=(P, R))
    if "rr" not in skip:
        f["cm/reward_rejected"] = rng.normal(size=(P, R))
    if "in_train" not in skip:
        f["cm/in_train"] = np.tile(np.array([[1, 0, 1]], np.uint8), (P, 1))
    if "user" not in skip:
        f["cm/user"] = np.arange(P)


def probe_file(f, skip=()):
    if "X" not in skip:
        f["probe/t/X"] = rng.normal(size=(N, D)).astype(np.float32)
    if "label" not in skip:
        f["probe/t/label"] = (np.arange(N) % 2).astype(np.int32)
    if "split" not in skip:
        f["probe/t/split"] = np.array([0] * 40 + [1] * 10 + [2] * 10, np.uint8)


def job_for(kind):
    return ({"name": "x", "kind": "cm", "input": "in.h5", "bootstrap": 0} if kind == "cm" else
            {"name": "x", "kind": "probe", "input": "in.h5", "tasks": TASKS, "mode": "lbfgs", "l2_grid": [1e-2]})


def case(name, kind, build, expect, cmds=("validate",), env=None, max_kb=None, patch=None):
    cd = os.path.join(d, name)
    os.makedirs(cd, exist_ok=True)
    with h5py.File(os.path.join(cd, "in.h5"), "w") as f:
        build(f)
    if patch:
        patch(os.path.join(cd, "in.h5"))
    size = os.path.getsize(os.path.join(cd, "in.h5"))
    if max_kb:
        check(size <= max_kb * 1024, f"{name}: the input is small ({size} bytes)")
    jp = write_job(os.path.join(cd, "job.json"), [job_for(kind)], output_dir="out")
    for cmd in cmds:
        t0 = time.time()
        code, _, err = run([cmd, jp], env=env, timeout=60)
        secs = time.time() - t0
        check(code == 2, f"{name} ({cmd}): exit {code}, expected 2 ({err.strip()})")
        lines = [l for l in err.splitlines() if l.startswith("rmdiag: error:")]
        check(len(lines) == 1, f"{name} ({cmd}): one error line, got {err!r}")
        for e in expect:
            check(e in err, f"{name} ({cmd}): message should contain {e!r}: {err.strip()}")
        check(outputs_in(os.path.join(cd, "out")) == [], f"{name} ({cmd}): nothing written")
        check("Sanitizer" not in err and "runtime error:" not in err, f"{name} ({cmd}): sanitizers silent: {err}")
        # a start-up of the binary takes about a second on a loaded 2-core machine; what matters is
        # that nothing of the declared size is read or allocated (that took 30 to 50 s before)
        check(secs < 20, f"{name} ({cmd}): quick ({secs:.1f} s)")
        print(f"{name} ({cmd}): exit {code} in {secs:.2f} s")


# ---- declared shapes without storage ----------------------------------------------------------

def cm_contig_huge(f):
    cm_file(f, skip=("rc",))
    f.create_dataset("cm/reward_chosen", shape=(2**40, 4), dtype="f8")   # h5py allocates nothing


case("cm_contig_unwritten", "cm", cm_contig_huge, max_kb=10, cmds=("validate", "run"),
     expect=["in.h5: dataset /cm/reward_chosen declares shape [1099511627776, 4] but stores no data", SEE])


def probe_contig_huge(f):
    probe_file(f, skip=("X", "label"))
    f.create_dataset("probe/t/X", shape=(2**33, 4), dtype="f4")
    f.create_dataset("probe/t/label", shape=(2**33,), dtype="i8")


case("probe_contig_unwritten", "probe", probe_contig_huge, max_kb=10, cmds=("validate", "run"),
     expect=["in.h5: dataset /probe/t/X declares shape [8589934592, 4] but stores no data", SEE])


def probe_label_unwritten(f):
    probe_file(f, skip=("label",))
    f.create_dataset("probe/t/label", shape=(N,), dtype="i8")


case("probe_label_unwritten", "probe", probe_label_unwritten, cmds=("validate", "run"),
     expect=["in.h5: dataset /probe/t/label declares shape [60] but stores no data"])


def cm_chunked_huge(f):
    cm_file(f, skip=("rc",))
    f.create_dataset("cm/reward_chosen", shape=(2**27, 4), dtype="f8", chunks=(1024, 4))


case("cm_chunked_unwritten", "cm", cm_chunked_huge, max_kb=10, cmds=("validate", "run"),
     expect=["in.h5: dataset /cm/reward_chosen declares shape [134217728, 4] but only 0 of its 131072 chunks were "
             "ever written (the first missing one holds rows 0..1023)", "fill value"])


def probe_chunked_huge(f):
    probe_file(f, skip=("X",))
    f.create_dataset("probe/t/X", shape=(2**27, 4), dtype="f4", chunks=(4096, 4))


case("probe_chunked_unwritten", "probe", probe_chunked_huge, max_kb=10, cmds=("validate", "run"),
     expect=["in.h5: dataset /probe/t/X declares shape [134217728, 4] but only 0 of its 32768 chunks"])


def cm_partial(f):
    cm_file(f, skip=("in_train",))
    ds = f.create_dataset("cm/in_train", shape=(P, R), dtype="u1", chunks=(10, R))
    ds[:20] = 1   # the writer stopped after two of four chunks


case("cm_partial", "cm", cm_partial, cmds=("validate", "run"),
     expect=["in.h5: dataset /cm/in_train declares shape [40, 3] but only 2 of its 4 chunks were ever written "
             "(the first missing one holds rows 20..29)"])


def cm_stopped_late(f):
    cm_file(f, skip=("in_train",))
    ds = f.create_dataset("cm/in_train", shape=(2**17, R), dtype="u1", chunks=(1, R))
    ds[:100000] = 1   # the writer stopped after 100,000 of 131,072 one-row chunks


# the first missing chunk is found through the chunk index in about a second (finding it by walking
# the index from its first chunk for each chunk, as HDF5 1.10's chunk query does, took over a minute)
case("cm_stopped_late", "cm", cm_stopped_late,
     expect=["in.h5: dataset /cm/in_train declares shape [131072, 3] but only 100000 of its 131072 chunks were ever "
             "written (the first missing one holds rows 100000..100000)"])


def probe_partial(f):
    probe_file(f, skip=("X",))
    ds = f.create_dataset("probe/t/X", shape=(N, D), dtype="f4", chunks=(16, D))
    ds[:16] = 1
    ds[32:48] = 1


case("probe_partial", "probe", probe_partial,
     expect=["in.h5: dataset /probe/t/X declares shape [60, 4] but only 2 of its 4 chunks were ever written "
             "(the first missing one holds rows 16..31)"])


# ---- declared shapes too large for memory ------------------------------------------------------

def bomb(f, path, shape, chunks, dtype):
    """A gzip-compressed dataset of zeros, every chunk written directly (the same compressed bytes):
    a few KB on disk for any declared size."""
    ds = f.create_dataset(path, shape=shape, dtype=dtype, chunks=chunks, compression="gzip")
    blob = zlib.compress(np.zeros(chunks, dtype).tobytes(), 9)
    for i in range(0, shape[0], chunks[0]):
        ds.id.write_direct_chunk((i,) + (0,) * (len(shape) - 1), blob)


LIMIT = {"RMDIAG_MEMORY_LIMIT": "256M"}


def cm_bomb_users(f):
    cm_file(f, skip=("rc", "rr", "in_train", "user"))
    Pb = 2**25
    for name in ("reward_chosen", "reward_rejected"):
        bomb(f, f"cm/{name}", (Pb, 2), (2**20, 2), "f8")
    bomb(f, "cm/in_train", (Pb, 2), (2**20, 2), "u1")
    bomb(f, "cm/user", (Pb,), (2**20,), "i8")


case("cm_memory_users", "cm", cm_bomb_users, env=LIMIT, max_kb=2048,
     expect=["in.h5: dataset /cm/user declares shape [33554432]: reading it needs 512.0 MiB of memory, more than "
             "the 256.0 MiB this process may use (RMDIAG_MEMORY_LIMIT)", SEE])


def cm_bomb_rows(f):
    cm_file(f, skip=("rc", "rr", "in_train", "user"))
    Pb, Rb = 2**21, 64
    for name in ("reward_chosen", "reward_rejected"):
        bomb(f, f"cm/{name}", (Pb, Rb), (2**14, Rb), "f4")
    bomb(f, "cm/in_train", (Pb, Rb), (2**14, Rb), "u1")
    bomb(f, "cm/user", (Pb,), (2**18,), "i8")


case("cm_memory_rows", "cm", cm_bomb_rows, env=LIMIT, max_kb=2048, cmds=("run",),
     expect=["in.h5: dataset /cm/reward_chosen declares shape [2097152, 64]: holding this rank's rows of the "
             "[P, R] datasets needs 1.1 GiB of memory, more than the 256.0 MiB"])


def probe_bomb_labels(f):
    Nb = 2**25
    bomb(f, "probe/t/X", (Nb, 2), (2**20, 2), "f4")
    bomb(f, "probe/t/label", (Nb,), (2**20,), "i8")
    bomb(f, "probe/t/split", (Nb,), (2**20,), "u1")


case("probe_memory_labels", "probe", probe_bomb_labels, env=LIMIT, max_kb=2048,
     expect=["in.h5: dataset /probe/t/label declares shape [33554432]: reading it needs 512.0 MiB of memory"])


def probe_bomb_rows(f):
    Nb, Db = 2**13, 2**10   # 32 MiB of features; a rank holds its training rows (80 %)
    bomb(f, "probe/t/X", (Nb, Db), (2**6, Db), "f4")
    f["probe/t/label"] = (np.arange(Nb) % 2).astype(np.int8)
    f["probe/t/split"] = np.where(np.arange(Nb) % 10 < 8, 0, np.where(np.arange(Nb) % 10 < 9, 1, 2)).astype(np.uint8)


case("probe_memory_rows", "probe", probe_bomb_rows, env={"RMDIAG_MEMORY_LIMIT": "8M"}, max_kb=1024, cmds=("run",),
     expect=["in.h5: dataset /probe/t/X declares shape [8192, 1024]: holding this rank's feature rows needs 25.6 MiB",
             "more than the 8.0 MiB this process may use (RMDIAG_MEMORY_LIMIT)"])

cd = os.path.join(d, "bad_limit")
os.makedirs(cd, exist_ok=True)
with h5py.File(os.path.join(cd, "in.h5"), "w") as f:
    cm_file(f)
code, _, err = run(["validate", write_job(os.path.join(cd, "job.json"), [job_for("cm")])],
                   env={"RMDIAG_MEMORY_LIMIT": "lots"})
check(code == 2 and "RMDIAG_MEMORY_LIMIT=lots: expected a number of bytes" in err, f"a bad limit is named: {err}")


# ---- types --------------------------------------------------------------------------------------

def array_dataset(f, path, data):
    """A 1-D dataset whose elements are arrays (h5py itself reads it back as a 2-D array)."""
    ds = f.create_dataset(path, shape=data.shape[:1], dtype=np.dtype((data.dtype, data.shape[1:])))
    ds.id.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data), mtype=ds.id.get_type())


def cm_array(f):
    cm_file(f, skip=("rc",))
    array_dataset(f, "cm/reward_chosen", rng.normal(size=(P, 4)))


case("cm_array", "cm", cm_array,
     expect=["in.h5: dataset /cm/reward_chosen has an array type (each element an array [4] of 8-byte floats; "
             "store a dataset with one more dimension instead), expected float32 or float64 [P, R]"])


def probe_array(f):
    probe_file(f, skip=("X",))
    array_dataset(f, "probe/t/X", rng.normal(size=(N, D)).astype(np.float32))


case("probe_array", "probe", probe_array,
     expect=["in.h5: dataset /probe/t/X has an array type (each element an array [4]"])

ENUM = h5py.enum_dtype({"NO": 0, "YES": 1}, basetype="u1")


def cm_enum(f):
    cm_file(f, skip=("in_train",))
    f.create_dataset("cm/in_train", data=np.ones((P, R), np.uint8), dtype=ENUM)


case("cm_enum", "cm", cm_enum, expect=["in.h5: dataset /cm/in_train has an enum type (of enums only h5py's booleans, "
                                       "FALSE = 0 and TRUE = 1, are read), expected uint8 (or boolean) 0/1 flags"])


def probe_enum(f):
    probe_file(f, skip=("label",))
    f.create_dataset("probe/t/label", data=(np.arange(N) % 2).astype(np.int8),
                     dtype=h5py.enum_dtype({"FALSE": 0, "TRUE": 1, "MAYBE": 2}, basetype="i1"))


case("probe_enum", "probe", probe_enum, expect=["in.h5: dataset /probe/t/label has an enum type"])

# h5py's booleans are read as 0/1 (positive control: the same inputs with bool in_train run)
cd = os.path.join(d, "cm_bool")
os.makedirs(cd, exist_ok=True)
with h5py.File(os.path.join(cd, "in.h5"), "w") as f:
    cm_file(f, skip=("in_train",))
    f["cm/in_train"] = np.tile(np.array([[True, False, True]]), (P, 1))
code, _, err = run(["run", write_job(os.path.join(cd, "job.json"), [job_for("cm")])])
check(code == 0, f"h5py booleans are read ({err.strip()})")
if code == 0:
    r = load_report(os.path.join(cd, "out", "x.json"))["result"]
    check(r["n_tm_defined"] == P and r["n_tg_defined"] == P, "h5py booleans: two training runs and one held out")


# ---- links --------------------------------------------------------------------------------------

def links(kind, target):
    grp, name = ("cm", "user") if kind == "cm" else ("probe/t", "label")

    def build(f):
        (cm_file if kind == "cm" else probe_file)(f, skip=(name,))
        if target == "dangling":
            f[f"{grp}/{name}"] = h5py.SoftLink(f"/{grp}/nothing")
        elif target == "loop":
            f[f"{grp}/{name}"] = h5py.SoftLink(f"/{grp}/a")
            f[f"{grp}/a"] = h5py.SoftLink(f"/{grp}/{name}")
        else:
            f[f"{grp}/{name}"] = h5py.ExternalLink("nowhere.h5", "/data")
    return build, f"/{grp}/{name}"


for kind in ("cm", "probe"):
    for target, what in (("dangling", 'is a soft link leading to "/{g}/nothing", which does not exist'),
                         ("loop", 'is a soft link in a loop (it leads back to "{p}")'),
                         ("external", 'is an external link to "/data" in file "nowhere.h5", which cannot be opened')):
        build, path = links(kind, target)
        g = path.rsplit("/", 1)[0].lstrip("/")
        case(f"{kind}_link_{target}", kind, build,
             expect=[f"in.h5: dataset {path} cannot be reached: {path} " + what.format(g=g, p=path)])


# ---- corrupt variable-length string heaps -------------------------------------------------------
# The users are 40 variable-length strings, stored contiguously: element i is 16 bytes at the
# dataset's offset (length u32, collection address u64, object index u32); the collection starts
# "GCOL", version, 3 reserved bytes, its size (u64); then objects: index u16, references u16,
# 4 reserved bytes, size u64, the bytes padded to 8.

def cm_strings(f):
    cm_file(f, skip=("user",))
    f.create_dataset("cm/user", data=[f"user-{i:03d}" for i in range(P)], dtype=h5py.string_dtype())


def heap_patch(how):
    def patch(path):
        with h5py.File(path, "r") as f:
            off = f["cm/user"].id.get_offset()
        raw = bytearray(open(path, "rb").read())
        el = lambda i: off + 16 * i
        addr = int.from_bytes(raw[el(5) + 4:el(5) + 12], "little")
        check(raw[addr:addr + 4] == b"GCOL", "the strings live in a global heap collection")
        size = int.from_bytes(raw[addr + 8:addr + 16], "little")
        p = addr + 16
        objs = {}
        while p + 16 <= addr + size:   # walk the objects of the intact collection
            idx, osize = int.from_bytes(raw[p:p + 2], "little"), int.from_bytes(raw[p + 8:p + 16], "little")
            objs[idx] = p
            p += 16 + (osize + 7) // 8 * 8 if idx else osize
        idx5 = int.from_bytes(raw[el(5) + 12:el(5) + 16], "little")
        if how == "object_size":
            raw[objs[idx5] + 8 + 3] = 0x40                        # about 1 GiB in a 4 KiB collection
        elif how == "collection_size":
            raw[addr + 8 + 5] = 0x01                              # 2^40 bytes
        elif how == "missing_object":
            raw[el(5) + 12:el(5) + 16] = (999).to_bytes(4, "little")
        elif how == "length":
            raw[el(5):el(5) + 4] = (2).to_bytes(4, "little")       # 2 bytes, its object holds 8
        elif how == "free_space_zero":
            check(0 in objs, "the collection ends in free space")
            raw[objs[0] + 8:objs[0] + 16] = bytes(8)               # free space of size 0
        elif how == "not_a_collection":
            raw[el(5) + 4:el(5) + 12] = (off).to_bytes(8, "little")  # points at the strings' own data
        elif how == "char_width":
            # the string type's base (its characters, 1 byte) declared 1 GiB wide in the dataset's
            # datatype message: HDF5 would size each string's buffer by it
            pat = bytes.fromhex("1901010010000000" "1000000001000000")
            check(raw.count(pat) == 1, "one variable-length string datatype message")
            raw[raw.find(pat) + 15] = 0x40
        elif how == "declared_end":
            # the superblock (version 0: its end-of-file address at byte 40) declares the file to end
            # inside the collection: HDF5 reads nothing past that end, so the strings must be checked
            # against it, not against the bytes on disk
            check(raw[8] == 0 and int.from_bytes(raw[40:48], "little") == len(raw), "a version-0 superblock")
            raw[40:48] = (addr + 100).to_bytes(8, "little")
        open(path, "wb").write(bytes(raw))
    return patch


# A positive control: a file with a user block (HDF5 addresses then count from its end) is read, its
# strings checked and its rows mapped at the right places: the same report as the same data without
# one, with the users contiguous and chunked (HDF5 gives heap and chunk addresses from the base).
ub_rows = {"rc": rng.normal(size=(P, R)), "rr": rng.normal(size=(P, R))}
for chunks in (None, (8,)):
    res = {}
    for ub in (0, 512):
        cd = os.path.join(d, f"userblock_{ub}_{'chunked' if chunks else 'contiguous'}")
        os.makedirs(cd, exist_ok=True)
        with h5py.File(os.path.join(cd, "in.h5"), "w", userblock_size=ub) as f:
            f["cm/reward_chosen"] = ub_rows["rc"]
            f["cm/reward_rejected"] = ub_rows["rr"]
            f["cm/in_train"] = np.tile(np.array([[1, 0, 1]], np.uint8), (P, 1))
            f.create_dataset("cm/user", data=[f"user-{i % 7:03d}" for i in range(P)], dtype=h5py.string_dtype(),
                             chunks=chunks)
        jp = write_job(os.path.join(cd, "job.json"), [job_for("cm")], output_dir="out")
        code, _, err = run(["run", jp], timeout=60)
        check(code == 0, f"user block {ub}, users {'chunked' if chunks else 'contiguous'}: exit {code} ({err.strip()})")
        if code != 0:
            break
        with h5py.File(os.path.join(cd, "out", "x.h5"), "r") as f:
            res[ub] = {k: f["cm/" + k][()] for k in ("tm", "tg", "cm", "user_index")}
        res[ub]["result"] = load_report(os.path.join(cd, "out", "x.json"))["result"]
    if len(res) < 2:
        continue
    for k in ("tm", "tg", "cm", "user_index"):
        check(np.array_equal(res[0][k], res[512][k], equal_nan=True), f"user block: the same {k} ({chunks})")
    check(res[0]["result"] == res[512]["result"], f"user block: the same report ({chunks})")
    print(f"user block 512, users {'chunked' if chunks else 'contiguous'}: same outputs as without")

for how, what in (("object_size", "has an object of 1073741832 bytes that does not fit in it"),
                  ("collection_size", "declares 1099511631872 bytes, beyond the file"),
                  ("missing_object", "string 5 refers to heap object 999, which is missing or not of the string's "
                                     "length"),
                  ("length", "string 5 refers to heap object "),
                  ("free_space_zero", "that does not fit in it"),
                  ("not_a_collection", "string 5 points to a heap collection at byte"),
                  ("declared_end", "declares 4096 bytes, beyond the file"),
                  ("char_width", "their characters are declared 1073741825 bytes wide, expected 1")):
    case(f"cm_heap_{how}", "cm", cm_strings, patch=heap_patch(how), cmds=("validate", "run"),
         expect=["in.h5: dataset /cm/user: its variable-length strings are corrupt (", what, SEE])
done()
