#!/usr/bin/env python3
"""Proves that two builds of rmdiag produce byte-identical outputs: the check for a restructuring that
must change no result (files moved, functions split, code shared).

    python3 scripts/compare_builds.py OLD_RMDIAG NEW_RMDIAG [--work DIR] [--keep] [--quick] [--backend B]

1. Builds a corpus of inputs in a scratch folder (a fresh folder under build/ or the system temp
   folder, removed at the end unless --keep): the demo inputs exactly as scripts/make_demo_*.sh make
   them (run from a copy of the scripts, so nothing in the checkout changes), synthetic inputs from
   ../shared/peers/gen_inputs.py (small in several variants, and full size without probe features),
   and the real RewardBench and NumLeak files of ../shared/data imported as the real-data tests
   import them. Every importer call runs with both binaries into separate files, and the two .h5
   files must be identical byte for byte. Also generated features of two reward models (.npy and
   .safetensors, imported the same way) and a leakage panel with every optional part.
2. Writes job files for every report kind with a broad set of options (the demo jobs, the jobs of the
   real-data tests and more) and runs each with OLD as a plain process and with NEW as a plain process
   and on 3 ranks, on the same input files, into sibling folders (the job files are the same bytes).
3. Compares every .h5 byte for byte; every report .json as text after removing only the envelope
   fields that legitimately vary ("seconds"; "ranks" when the rank counts differ); stdout; stderr
   with timing masked and progress lines dropped; exit statuses.
4. Prints a table and "N outputs compared, all identical" (exit 0) or the number of differences
   (exit 1). Exit 2: usage errors.
The shared folder is ../shared beside the repository (RMDIAG_SHARED overrides it, as in the tests);
parts whose inputs are absent are skipped with a message. --backend (default cpu) is passed to every
run. The whole comparison takes about a minute on 2 cores; --quick (the demo jobs, three synthetic
variants, the real RewardBench jobs and Table 1) about half of that.
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "self,vader,tcp",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
NEW_RANKS = 3
COLUMNS = ("NEW, 1 rank", f"NEW, {NEW_RANKS} ranks")
TEE_FLAG = "--tee-import"          # internal: the importer stand-in the demo scripts call as $RMDIAG


def has_numpy_h5py(python):
    try:
        return subprocess.run([python, "-c", "import numpy, h5py"], capture_output=True).returncode == 0
    except OSError:
        return False


# ---- comparing ---------------------------------------------------------------------------------------------

def first_difference(a, b):
    """Offset of the first differing element of two sequences, or None when they are equal."""
    if a == b:
        return None
    n = min(len(a), len(b))
    lo, hi = 0, n            # binary search on equal prefixes: fast for multi-megabyte files
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def h5_first_object_difference(pa, pb):
    """Names the first HDF5 object (dataset, group or attribute) whose content differs, or says that the
    content agrees and only the file layout differs. None when h5py is missing or a file does not open."""
    try:
        import h5py
        import numpy as np
    except ImportError:
        return None

    def walk(f):
        out = {}

        def visit(name, obj):
            out["/" + name] = obj
        out["/"] = f
        f.visititems(visit)
        return out

    def attrs_of(obj):
        return sorted((k, repr(np.asarray(v).tolist()), str(np.asarray(v).dtype)) for k, v in obj.attrs.items())

    try:
        with h5py.File(pa, "r") as fa, h5py.File(pb, "r") as fb:
            oa, ob = walk(fa), walk(fb)
            for name in sorted(set(oa) | set(ob)):
                if name not in oa or name not in ob:
                    return f"{name} only in {'OLD' if name in oa else 'NEW'}"
                xa, xb = oa[name], ob[name]
                if type(xa) is not type(xb):
                    return f"{name}: a group in one file, a dataset in the other"
                if attrs_of(xa) != attrs_of(xb):
                    return f"{name}: attributes"
                if isinstance(xa, h5py.Dataset):
                    if xa.dtype != xb.dtype or xa.shape != xb.shape:
                        return f"{name}: {xa.dtype}{list(xa.shape)} vs {xb.dtype}{list(xb.shape)}"
                    if xa.chunks != xb.chunks or xa.compression != xb.compression:
                        return f"{name}: storage (chunks {xa.chunks} vs {xb.chunks})"
                    va, vb = xa[()], xb[()]
                    if isinstance(va, np.ndarray) and va.dtype.kind != "O":
                        same = va.tobytes() == vb.tobytes()
                    else:
                        same = repr(np.asarray(va).tolist()) == repr(np.asarray(vb).tolist())
                    if not same:
                        return f"{name}: values"
            return "same objects and values, file layout differs"
    except Exception as e:  # a truncated or foreign file: the byte offset alone must do
        return f"h5py: {e}"


def compare_files(pa, pb):
    """None when the two files are byte-identical, else what differs."""
    if not os.path.exists(pa) or not os.path.exists(pb):
        return "missing in " + " and ".join(w for w, p in (("OLD", pa), ("NEW", pb)) if not os.path.exists(p))
    with open(pa, "rb") as f:
        a = f.read()
    with open(pb, "rb") as f:
        b = f.read()
    off = first_difference(a, b)
    if off is None:
        return None
    msg = f"byte {off}" + (f" (sizes {len(a)} vs {len(b)})" if len(a) != len(b) else "")
    if pa.endswith(".h5"):
        obj = h5_first_object_difference(pa, pb)
        if obj:
            msg += f"; {obj}"
    return msg


class JsonSpans:
    """The text span of every object member and array element of a JSON text, with its path, read
    straight from the text (so the text itself, not a parsed copy, is what gets compared)."""

    def __init__(self, text):
        self.t, self.spans = text, []     # (path, start, value_end)
        self.i = 0
        self._value(())
        self._ws()
        if self.i != len(text):
            raise ValueError(f"text after the JSON value at offset {self.i}")

    def _ws(self):
        while self.i < len(self.t) and self.t[self.i] in " \t\r\n":
            self.i += 1

    def _string(self):
        start, t = self.i, self.t
        self.i += 1
        while t[self.i] != '"':
            self.i += 2 if t[self.i] == "\\" else 1
        self.i += 1
        return json.loads(t[start:self.i])

    def _value(self, path):
        self._ws()
        c = self.t[self.i]
        if c == "{":
            self.i += 1
            self._ws()
            if self.t[self.i] == "}":
                self.i += 1
                return
            while True:
                self._ws()
                start = self.i
                key = self._string()
                self._ws()
                if self.t[self.i] != ":":
                    raise ValueError(f"expected ':' at offset {self.i}")
                self.i += 1
                self._value(path + (key,))
                self.spans.append((path + (key,), start, self.i))
                self._ws()
                c = self.t[self.i]
                self.i += 1
                if c == "}":
                    return
                if c != ",":
                    raise ValueError(f"expected ',' or '}}' at offset {self.i - 1}")
        elif c == "[":
            self.i += 1
            self._ws()
            if self.t[self.i] == "]":
                self.i += 1
                return
            k = 0
            while True:
                self._ws()
                start = self.i
                self._value(path + (k,))
                self.spans.append((path + (k,), start, self.i))
                k += 1
                self._ws()
                c = self.t[self.i]
                self.i += 1
                if c == "]":
                    return
                if c != ",":
                    raise ValueError(f"expected ',' or ']' at offset {self.i - 1}")
        elif c == '"':
            self._string()
        else:
            start = self.i
            while self.i < len(self.t) and self.t[self.i] not in ",]} \t\r\n":
                self.i += 1
            if self.i == start:
                raise ValueError(f"unexpected {c!r} at offset {start}")

    def path_at(self, offset):
        """The path of the innermost member or element at `offset` (between members: the next one)."""
        best = None
        for path, s, e in self.spans:
            if s <= offset < e and (best is None or len(path) > len(best)):
                best = path
        if best is None:
            later = [(s, p) for p, s, _ in self.spans if s >= offset]
            best = min(later)[1] if later else ()
        return best

    def line_of(self, path):
        for p, s, _ in self.spans:
            if p == path:
                return self.t.count("\n", 0, s) + 1
        return None


def path_text(path):
    return "".join(f"[{p}]" if isinstance(p, int) else (("." if i else "") + p) for i, p in enumerate(path)) or "(top)"


def drop_envelope_fields(text, fields):
    """The report text without the envelope members `fields` of {"rmdiag": {...}}: each member is cut with
    its separator, everything else stays as written."""
    spans = JsonSpans(text).spans
    cuts = []
    for path, start, end in spans:
        if len(path) == 2 and path[0] == "rmdiag" and path[1] in fields:
            j = end
            while j < len(text) and text[j] in " \t\r\n":
                j += 1
            k = start - 1
            while text[k] in " \t\r\n":
                k -= 1
            if text[j] == ",":                 # a member followed by another: cut its leading space and comma
                cuts.append((k + 1, j + 1))
            elif text[k] == ",":               # the last member: cut the comma before it
                cuts.append((k, end))
            else:                              # the only member
                cuts.append((start, end))
    for s, e in sorted(cuts, reverse=True):
        text = text[:s] + text[e:]
    return text


def compare_reports(pa, pb, fields):
    if not os.path.exists(pa) or not os.path.exists(pb):
        return "missing in " + " and ".join(w for w, p in (("OLD", pa), ("NEW", pb)) if not os.path.exists(p))
    with open(pa, encoding="utf-8") as f:
        a = f.read()
    with open(pb, encoding="utf-8") as f:
        b = f.read()
    try:
        sa, sb = drop_envelope_fields(a, fields), drop_envelope_fields(b, fields)
    except (ValueError, IndexError) as e:
        return None if a == b else f"not JSON ({e}); {compare_text(a, b)}"
    off = first_difference(sa, sb)
    if off is None:
        return None
    path = JsonSpans(sa if off < len(sa) else sb).path_at(off)
    line = JsonSpans(a).line_of(path)
    return f"at {path_text(path)}" + (f" (line {line} of OLD's report)" if line else "")


def compare_text(a, b):
    if a == b:
        return None
    la, lb = a.splitlines(), b.splitlines()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "<end>"
        y = lb[i] if i < len(lb) else "<end>"
        if x != y:
            return f"line {i + 1}: {x.strip()[:70]!r} vs {y.strip()[:70]!r}"
    return "line endings"


TIME_RE = re.compile(r"done in [0-9.]+ s on [0-9]+ ranks?")
# the whole-file progress appended to a job's closing line: " [3/17 jobs, 0.4 s, about 1 s left]"; the
# estimate left can print as "-0" (the estimates summed in two orders differ in the last bit)
FILE_PROGRESS_RE = re.compile(r" \[[0-9]+/[0-9]+ jobs, [0-9.]+ s(, about -?[0-9]+ s left)?\]$")


def normalize_stderr(text, replacements=()):
    """stderr without what legitimately varies: progress and timing lines are dropped, the duration and
    rank count of a job's closing line are masked, run folders are replaced by placeholders."""
    for old, new in replacements:
        text = text.replace(old, new)
    keep = [FILE_PROGRESS_RE.sub("", TIME_RE.sub("done in <T> s on <R> ranks", line)) for line in text.splitlines()
            if not line.startswith(("[rmdiag] ", "[timing] "))]
    # jobs run on rank groups finish in any order: their lines are compared as a sorted list
    return "\n".join(sorted(keep))


# ---- results -----------------------------------------------------------------------------------------------

class Results:
    def __init__(self):
        self.rows = []       # [item, kind, {column: None (identical) | message | "-" (not compared)}]
        self.notes = []

    def add(self, item, kind, column, diff):
        for r in self.rows:
            if r[0] == item and r[1] == kind:
                r[2][column] = diff
                return
        self.rows.append([item, kind, {column: diff}])

    def note(self, msg):
        print(msg, flush=True)
        self.notes.append(msg)

    def counts(self):
        n = nd = 0
        for _, _, cells in self.rows:
            for v in cells.values():
                if v != "-":
                    n += 1
                    nd += v is not None
        return n, nd

    def print_table(self):
        w_item = max([len("item")] + [len(r[0]) for r in self.rows])
        w_kind = max([len("kind")] + [len(r[1]) for r in self.rows])
        width = 34

        def cell(v):
            if v == "-":
                return "-"
            if v is None:
                return "identical"
            s = "DIFFERENT: " + v
            return s if len(s) <= width else s[:width - 3] + "..."
        print()
        print(f"{'item':<{w_item}}  {'kind':<{w_kind}}  {COLUMNS[0]:<{width}}  {COLUMNS[1]}")
        print("-" * (w_item + w_kind + 2 * width + 6))
        for item, kind, cells in self.rows:
            print(f"{item:<{w_item}}  {kind:<{w_kind}}  {cell(cells.get(COLUMNS[0], '-')):<{width}}  "
                  f"{cell(cells.get(COLUMNS[1], '-'))}")
        diffs = [(item, kind, col, v) for item, kind, cells in self.rows for col, v in cells.items()
                 if v not in (None, "-")]
        if diffs:
            print("\ndifferences (OLD vs NEW):")
            for item, kind, col, v in diffs:
                print(f"  {item} [{kind}] {col}: {v}")


# ---- running rmdiag ----------------------------------------------------------------------------------------

class Runner:
    def __init__(self, old, new, work, backend, results):
        self.old, self.new, self.work, self.backend, self.res = old, new, work, backend, results
        self.env = dict(os.environ)
        self.env.update(MPI_ENV)
        self.mpiexec = os.environ.get("MPIEXEC") or shutil.which("mpiexec")

    def run(self, binary, args, ranks=0, cwd=None, env=None):
        cmd = [binary] + list(args)
        if ranks:
            cmd = [self.mpiexec, "-n", str(ranks)] + cmd
        try:
            p = subprocess.run(cmd, cwd=cwd, env=env or self.env, capture_output=True, text=True,
                               errors="replace", timeout=900)
        except subprocess.TimeoutExpired:
            return 124, "", f"{' '.join(cmd)}: no result after 900 s"
        return p.returncode, p.stdout, p.stderr

    # -- importers
    def import_both(self, item, args, old_out, new_out):
        """rmdiag import ARGS -o OUT with both binaries (OLD writes old_out, which the jobs then read)."""
        os.makedirs(os.path.dirname(old_out), exist_ok=True)
        os.makedirs(os.path.dirname(new_out), exist_ok=True)
        ro = self.run(self.old, ["import"] + list(args) + ["-o", old_out])
        rn = self.run(self.new, ["import"] + list(args) + ["-o", new_out])
        self.record_import(item, args[0], ro, rn, old_out, new_out, old_out)
        return ro[0] == 0

    def record_import(self, item, fmt, ro, rn, old_out, new_out, out_arg):
        kind = "import " + fmt
        if ro[0] != 0:
            self.res.add(item, kind, COLUMNS[0], f"OLD failed (exit {ro[0]}): {last_line(ro[2])}")
            return
        if old_out:
            self.res.add(item, kind, COLUMNS[0], compare_files(old_out, new_out))
        else:
            new_out = out_arg = "-o"      # a call without an output file: its messages only
        msgs = None
        if ro[0] != rn[0]:
            msgs = f"exit {ro[0]} vs {rn[0]}"
        else:
            for name, a, b in (("stdout", ro[1], rn[1]), ("stderr", ro[2], rn[2])):
                d = compare_text(a, b.replace(new_out, out_arg))
                if d:
                    msgs = f"{name} {d}"
                    break
        self.res.add(item + " (messages)", kind, COLUMNS[0], msgs)

    # -- job files
    def run_jobfile(self, name, doc):
        """Runs one job file with OLD (plain), NEW (plain) and NEW on NEW_RANKS ranks, and compares."""
        text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
        dirs = {}
        for who in ("old", "new", "new3"):
            d = os.path.join(self.work, "runs", who, name)
            os.makedirs(d)
            with open(os.path.join(d, "job.json"), "w", encoding="utf-8") as f:
                f.write(text)
            dirs[who] = d
        extra = ["--backend", self.backend]
        ro = self.run(self.old, ["run", os.path.join(dirs["old"], "job.json")] + extra)
        outs = {COLUMNS[0]: ("new", self.run(self.new, ["run", os.path.join(dirs["new"], "job.json")] + extra))}
        if self.mpiexec:
            outs[COLUMNS[1]] = ("new3", self.run(self.new, ["run", os.path.join(dirs["new3"], "job.json")] + extra,
                                                 ranks=NEW_RANKS))
        old_out = os.path.join(dirs["old"], doc["output_dir"])
        kinds = {j["name"]: j["kind"] for j in doc["jobs"]}
        for col, (who, rn) in outs.items():
            new_out = os.path.join(dirs[who], doc["output_dir"])
            if ro[0] != 0:
                self.res.add(f"{name}: stdout", "run", col, f"OLD failed (exit {ro[0]}): {last_line(ro[2])}")
                continue
            # stdout names the run's folder (the "more rows" hints): compared with it replaced too
            d = f"exit {ro[0]} vs {rn[0]}" if ro[0] != rn[0] else compare_text(ro[1].replace(dirs["old"], "<RUN>"),
                                                                                  rn[1].replace(dirs[who], "<RUN>"))
            self.res.add(f"{name}: stdout", "run", col, d)
            self.res.add(f"{name}: stderr", "run", col,
                         compare_text(normalize_stderr(ro[2], [(dirs["old"], "<RUN>")]),
                                      normalize_stderr(rn[2], [(dirs[who], "<RUN>")])))
            drop = ("seconds",) if who == "new" else ("seconds", "ranks")
            files = sorted(set(listdir(old_out)) | set(listdir(new_out)) |
                           {j + ext for j in kinds for ext in (".h5", ".json")})
            for fn in files:
                base, ext = os.path.splitext(fn)
                kind = kinds.get(base, "extra file")
                pa, pb = os.path.join(old_out, fn), os.path.join(new_out, fn)
                if ext == ".json" and base in kinds:
                    self.res.add(f"{name}/{fn}", kind, col, compare_reports(pa, pb, drop))
                else:
                    self.res.add(f"{name}/{fn}", kind, col, compare_files(pa, pb))


def listdir(d):
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def last_line(text):
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1][:200] if lines else ""


# ---- the importer stand-in for the demo scripts ------------------------------------------------------------

def tee_import(state_path, args):
    """Called as $RMDIAG by a copy of a demo script: runs OLD with the script's arguments (its output is
    what the script and the jobs see) and NEW with the same arguments but -o into a folder of its own, and
    logs both for the comparison. Exits with OLD's status."""
    with open(state_path) as f:
        st = json.load(f)
    seq = len(os.listdir(st["log"]))
    new_args, out_arg, new_out = list(args), None, None
    for i, a in enumerate(args[:-1]):
        if a in ("-o", "--output"):
            out_arg = args[i + 1]
            new_out = os.path.join(st["new_dir"], f"{seq:03d}_{os.path.basename(out_arg)}")
            new_args[i + 1] = new_out
    env = dict(os.environ)
    env.update(MPI_ENV)
    po = subprocess.run([st["old"]] + list(args), env=env, capture_output=True, text=True, errors="replace")
    pn = subprocess.run([st["new"]] + new_args, env=env, capture_output=True, text=True, errors="replace")
    with open(os.path.join(st["log"], f"{seq:03d}.json"), "w") as f:
        json.dump({"args": list(args), "out_arg": out_arg, "old_out": out_arg and os.path.abspath(out_arg),
                   "new_out": new_out, "old": [po.returncode, po.stdout, po.stderr],
                   "new": [pn.returncode, pn.stdout, pn.stderr]}, f)
    sys.stdout.write(po.stdout)
    sys.stderr.write(po.stderr)
    return po.returncode


# ---- the corpus --------------------------------------------------------------------------------------------

def corpus_demo(R, work, quick):
    """The demo inputs, made by copies of scripts/make_demo_*.sh (they write next to themselves), with the
    importer stand-in as $RMDIAG; the jobs of jobs/demo*.json on them, and more options."""
    root = os.path.join(work, "demo", "repo")
    os.makedirs(os.path.join(root, "scripts"))
    scripts = ["make_demo_data.sh", "make_demo_benchmark.sh", "make_demo_leakage.sh", "make_demo_probe.sh"]
    for s in scripts:
        shutil.copy2(os.path.join(REPO, "scripts", s), os.path.join(root, "scripts", s))
    log, new_dir, tmp = (os.path.join(work, "demo", x) for x in ("tee-log", "new-imports", "tmp"))
    for d in (log, new_dir, tmp):
        os.makedirs(d)
    state = os.path.join(work, "demo", "tee.json")
    with open(state, "w") as f:
        json.dump({"old": R.old, "new": R.new, "log": log, "new_dir": new_dir}, f)
    tee = os.path.join(work, "demo", "rmdiag")
    with open(tee, "w") as f:
        f.write(f"#!/bin/sh\nexec {sh_quote(sys.executable)} {sh_quote(os.path.abspath(__file__))} "
                f"{TEE_FLAG} {sh_quote(state)} \"$@\"\n")
    os.chmod(tee, 0o755)
    bench_dir = os.path.join(work, "demo", "bench")
    env = dict(R.env, RMDIAG=tee, DEMO_BENCHMARK_DIR=bench_dir, TMPDIR=tmp)
    data = os.path.join(root, "jobs", "data")
    for s in scripts:
        p = subprocess.run(["bash", os.path.join(root, "scripts", s)], env=env, capture_output=True, text=True)
        if p.returncode != 0:
            R.res.note(f"demo: {s} failed (exit {p.returncode}): {last_line(p.stderr)}")
        if s == "make_demo_data.sh":   # scripts/demo.sh imports the CSV itself
            R.import_both("demo/demo_pairs.h5", ["cm-csv", os.path.join(data, "demo_pairs.csv")],
                          os.path.join(data, "demo_pairs.h5"), os.path.join(new_dir, "demo_pairs.h5"))
    for fn in sorted(os.listdir(log)):
        with open(os.path.join(log, fn)) as f:
            e = json.load(f)
        item = "demo/" + (os.path.basename(e["out_arg"]) if e["out_arg"] else "rmdiag " + " ".join(e["args"])[:40])
        fmt = e["args"][1] if len(e["args"]) > 1 and e["args"][0] == "import" else " ".join(e["args"][:1])
        R.record_import(item, fmt, e["old"], e["new"], e["old_out"], e["new_out"], e["out_arg"])
    inputs = {"demo_pairs.h5": os.path.join(data, "demo_pairs.h5"), "demo_leak.h5": os.path.join(data, "demo_leak.h5"),
              "demo_probe.h5": os.path.join(data, "demo_probe.h5"),
              "demo_rb1.h5": os.path.join(bench_dir, "demo_rb1.h5"), "demo_rb2.h5": os.path.join(bench_dir, "demo_rb2.h5")}
    jobfiles = []
    for jf in (["demo.json"] if quick else ["demo.json", "demo_benchmark.json", "demo_leakage.json", "demo_probe.json"]):
        with open(os.path.join(REPO, "jobs", jf), encoding="utf-8") as f:
            doc = json.load(f)
        doc["output_dir"] = "out"
        for j in doc["jobs"]:
            j["input"] = inputs[os.path.basename(j["input"])]
        jobfiles.append((os.path.splitext(jf)[0], doc))
    P, RB1, RB2, L, PR = (inputs[k] for k in ("demo_pairs.h5", "demo_rb1.h5", "demo_rb2.h5", "demo_leak.h5",
                                               "demo_probe.h5"))
    tasks = {"harmlessness": {"classes": [[0, 1], [3, 4]]}, "helpfulness": {"classes": [[0, 1], [2], [3, 4]]}}
    jobs = [
        {"name": "cm-nobootstrap", "kind": "cm", "input": P, "bootstrap": 0,
         "strata": [{"covariate": "length_diff", "bins": 7}, {"covariate": "source", "bins": 2}]},
        {"name": "cm-plain", "kind": "cm", "input": P, "bootstrap": 250},
        {"name": "rb1-prior", "kind": "benchmark", "input": RB1, "scheme": "rewardbench-v1", "prior_sets": True,
         "bootstrap": 200, "compare": [["synthetic/demo-rm-0", "synthetic/demo-rm-2"]]},
        {"name": "rb1-custom-missing", "kind": "benchmark", "input": RB1, "allow_missing": True, "bootstrap": 100,
         "scheme": {"sections": {"Chatty": {"alpacaeval-easy": 1, "mt-bench-med": 2, "not-in-the-input": 1},
                                 "Code": {"hep-go": 1, "hep-rust": 1}, "Absent": {"nowhere": 1}}}},
        {"name": "rb2-custom-ties", "kind": "benchmark", "input": RB2, "bootstrap": 150, "compare": "all",
         "scheme": {"sections": {"Core": {"Factuality": 1, "Math": 2}, "Rest": {"Safety": 1, "Focus": 1, "Precise IF": 1},
                                 "T": {"Ties": 1}}, "item_rule": "tie-credit", "ties_subset": "Ties"}},
        {"name": "rb2-strict", "kind": "benchmark", "input": RB2, "bootstrap": 0,
         "scheme": {"sections": {"All": {"Factuality": 1, "Precise IF": 1, "Math": 1, "Safety": 1, "Focus": 1}},
                    "item_rule": "strict"}},
        {"name": "leak-options", "kind": "leakage", "input": L, "bootstrap": 300, "tolerance": 0.5,
         "tolerance_rule": "lt", "tolerance_compare": "float", "sign_zero": "exclude_zero_truth",
         "family": ["Alpha", "Beta"], "null_permutations": 500, "holdout_from": 200307},
        {"name": "probe-zeros-cosine", "kind": "probe", "input": PR, "tasks": tasks, "init": "zeros",
         "lr_grid": [0.1, 0.03], "seeds": [3, 5], "max_memory_mb": 1,
         "kmeans": {"k_per_class": 3, "iters": 20, "distance": "cosine", "tau": 2.5}},
        {"name": "probe-lbfgs-raw", "kind": "probe", "input": PR, "tasks": tasks, "mode": "lbfgs",
         "l2_grid": [1e-4, 0.05], "standardize": False, "tol": 1e-6, "max_iter": 50, "kmeans": False},
        {"name": "probe-one-task", "kind": "probe", "input": PR,
         "tasks": {"helpfulness": {"classes": [[0], [1], [2], [3], [4]]}},
         "kmeans": {"distance": "mahalanobis", "tau": {"quantile": 0.5}}},
    ]
    jobfiles.append(("demo_options", {"output_dir": "out", "seed": 7, "description": "demo inputs, more options",
                                      "jobs": jobs}))
    return jobfiles


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


SYNTH_VARIANTS = [  # name, seed, gen_inputs.py options
    ("synth-f32", 0, ["--size", "small"]),
    ("synth-f64-vlen", 1, ["--size", "small", "--dtype", "float64", "--vlen-strings"]),
    ("synth-chunked-f16", 2, ["--size", "small", "--chunked", "--probe-dtype", "float16"]),
    ("synth-f64-vlen-chunked", 3, ["--size", "small", "--dtype", "float64", "--vlen-strings", "--chunked"]),
    # full size without the probe features (0.6 GB): sums over more than one block, many shards per rank
    ("synth-full", 4, ["--size", "full", "--kinds", "cm,bench,bench2,leak"]),
]


def synth_jobs(h5):
    v1 = ["alpacaeval-easy", "alpacaeval-hard", "mt-bench-hard", "llmbar-natural", "refusals-dangerous",
          "donotanswer", "math-prm", "hep-cpp"]
    tasks = {"harmlessness": {"classes": [[0, 1], [3, 4]]}, "helpfulness": {"classes": [[0, 1], [2], [3, 4]]}}
    return [
        {"name": "cm", "kind": "cm", "input": h5, "bootstrap": 500,
         "strata": [{"covariate": "len_diff", "bins": 4}, {"covariate": "model_chosen", "categorical": True}]},
        {"name": "cm-bins", "kind": "cm", "input": h5, "bootstrap": 0, "strata": [{"covariate": "len_diff", "bins": 9}]},
        {"name": "rb1", "kind": "benchmark", "input": h5, "bootstrap": 300, "compare": "all"},
        {"name": "rb1-prior", "kind": "benchmark", "input": h5, "scheme": "rewardbench-v1", "prior_sets": True,
         "bootstrap": 0},
        {"name": "rb1-custom", "kind": "benchmark", "input": h5, "bootstrap": 100,
         "scheme": {"sections": {"A": {s: i + 1 for i, s in enumerate(v1[:4])}, "B": {s: 1 for s in v1[4:]}},
                    "item_rule": "tie-credit"},
         "compare": [["rm-00-synthetic", "modèle-récompense-ß"], ["constant-rm (all scores 0)", "rm-02-synthetic"]]},
        {"name": "rb2", "kind": "benchmark", "input": h5, "group": "/bench2", "scheme": "rewardbench-v2",
         "bootstrap": 300, "compare": "all"},
        {"name": "rb2-custom", "kind": "benchmark", "input": h5, "group": "/bench2", "bootstrap": 100,
         "scheme": {"sections": {"X": {"Factuality": 1, "Focus": 3}, "Y": {"Math": 1, "Ties": 1}},
                    "item_rule": "tie-credit", "ties_subset": "Ties"}},
        {"name": "leak", "kind": "leakage", "input": h5, "bootstrap": 300, "null_permutations": 300,
         "family": ["Mkt-RF", "SMB", "HML", "RMW", "CMA", "Mom"], "holdout_from": 198507},
        {"name": "leak-appendix", "kind": "leakage", "input": h5, "bootstrap": 100, "tolerance_rule": "lt",
         "tolerance_compare": "float", "sign_zero": "exclude_zero_truth", "family": ["Mkt-RF", "SMB"],
         "tolerance": 0.1},
        {"name": "probe", "kind": "probe", "input": h5, "tasks": tasks, "lr_grid": [0.05, 0.01], "seeds": [0, 1],
         "kmeans": {"k_per_class": 2, "distance": "euclidean", "tau": {"quantile": 0.9}}},
        {"name": "probe-lbfgs", "kind": "probe", "input": h5, "tasks": tasks, "mode": "lbfgs", "standardize": True,
         "l2_grid": [1e-3, 1e-1], "kmeans": {"distance": "mahalanobis", "tau": {"quantile": 0.8}}},
    ]


def corpus_synthetic(R, work, shared, py, quick):
    gen = os.path.join(shared, "peers", "gen_inputs.py")
    if not os.path.isfile(gen):
        R.res.note(f"synthetic inputs skipped: {gen} not found")
        return []
    if not py:
        R.res.note("synthetic inputs skipped: no Python with numpy and h5py")
        return []
    d = os.path.join(work, "synth")
    os.makedirs(d)
    jobfiles = []
    variants = [SYNTH_VARIANTS[i] for i in (0, 3, 4)] if quick else SYNTH_VARIANTS
    for name, seed, opts in variants:
        h5 = os.path.join(d, name + ".h5")
        p = subprocess.run([py, gen, h5, "--seed", str(seed)] + opts, capture_output=True, text=True)
        if p.returncode != 0:
            R.res.note(f"{name}: gen_inputs.py failed: {last_line(p.stderr)}")
            continue
        jobs = synth_jobs(h5)
        if "--kinds" in opts:
            kinds = opts[opts.index("--kinds") + 1].split(",")
            jobs = [j for j in jobs if {"cm": "cm", "benchmark": "bench2" if j.get("group") == "/bench2" else "bench",
                                        "leakage": "leak", "probe": "probe"}[j["kind"]] in kinds]
        jobfiles.append((name, {"output_dir": "out", "seed": 100 + seed,
                                "description": f"synthetic inputs (gen_inputs.py --seed {seed} {' '.join(opts)})",
                                "jobs": jobs}))
    return jobfiles


def corpus_leak_panel(R, work, tests):
    """A synthetic leakage input with every optional part (fictional series, ranking, signal, defense)
    from the leakage tests' generator."""
    sys.path.insert(0, tests)
    import leakdata
    h5 = os.path.join(work, "synth", "leak_panel.h5")
    os.makedirs(os.path.dirname(h5), exist_ok=True)
    leakdata.gen_panel(h5, seed=5)
    fam = ["S0", "S1", "S2", "S3", "S4"]
    return [("leak_panel", {"output_dir": "out", "seed": 11, "jobs": [
        {"name": "panel", "kind": "leakage", "input": h5, "bootstrap": 200, "family": fam, "null_permutations": 200,
         "holdout_from": 199507, "signal_series": "S0", "benign_attack": "benign"},
        {"name": "panel-lt", "kind": "leakage", "input": h5, "bootstrap": 0, "null_permutations": 0,
         "tolerance": 1.0, "tolerance_rule": "lt", "sign_zero": "exclude_zero_truth", "signal_series": "S1",
         "benign_attack": "a0"}]})]


def corpus_probe_models(R, work):
    """Two reward models' features written as .npy (float32, float16) and .safetensors (BF16) with CSV and
    JSONL labels, imported with both binaries; probe jobs with `models` and memory-bounded streaming."""
    import numpy as np
    d = os.path.join(work, "probe_models")
    os.makedirs(d)
    rng = np.random.default_rng(20261202)

    def feats(n, dim, classes, shift):
        lab = rng.integers(0, classes, n)
        mu = rng.normal(0, 0.35, (classes, dim))
        X = rng.normal(0, 1, (n, dim)) + mu[lab] + shift
        return X.astype(np.float32), lab

    def labels_csv(path, lab):
        names = ["train", "val", "test", "0", "1", "2", "validation", "dev"]
        with open(path, "w") as f:
            f.write("\ufefflabel,split\n")
            for i, l in enumerate(lab):
                sp = names[(i * 7) % 8] if i % 5 == 0 else str([0, 0, 0, 0, 0, 0, 0, 1, 1, 2][i % 10])
                lv = "NA" if i % 97 == 3 else ("" if i % 101 == 4 else str(int(l)))
                f.write(f"{lv},{sp}\n")

    def labels_jsonl(path, lab):
        with open(path, "w") as f:
            for i, l in enumerate(lab):
                sp = ["train", "train", "train", "train", "train", "train", "train", "validation", "validation", "test"][i % 10]
                f.write(json.dumps({"label": None if i % 89 == 7 else int(l), "split": sp}) + "\n")

    def safetensors_bf16(path, X, name):
        b = (np.ascontiguousarray(X, np.float32).view(np.uint32) >> 16).astype("<u2")
        hdr = json.dumps({"__metadata__": {"note": "synthetic"}, "other": {"dtype": "F32", "shape": [1, 1],
                          "data_offsets": [0, 4]}, name: {"dtype": "BF16", "shape": list(X.shape),
                                                          "data_offsets": [4, 4 + b.nbytes]}}).encode()
        hdr += b" " * (-len(hdr) % 8)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(hdr)) + hdr + np.float32(1.5).tobytes() + b.tobytes())

    X, lab = feats(6000, 96, 3, 0.2)             # rmA: 2.3 MB per task, beyond max_memory_mb 1 on one rank
    np.save(os.path.join(d, "a_honesty.npy"), X)
    labels_csv(os.path.join(d, "a_honesty.csv"), lab)
    X, lab = feats(6000, 96, 2, -0.1)
    np.save(os.path.join(d, "a_safety.npy"), X)
    labels_jsonl(os.path.join(d, "a_safety.jsonl"), lab)
    np.save(os.path.join(d, "a_infer.npy"), (rng.normal(0, 1.3, (400, 96))).astype(np.float32))
    X, lab = feats(1500, 48, 3, 0.0)             # rmB: other width, float16 and BF16
    np.save(os.path.join(d, "b_honesty.npy"), X.astype(np.float16))
    labels_jsonl(os.path.join(d, "b_honesty.jsonl"), lab)
    X, lab = feats(1500, 48, 2, 0.3)
    safetensors_bf16(os.path.join(d, "b_safety.safetensors"), X, "hidden")
    labels_csv(os.path.join(d, "b_safety.csv"), lab)
    safetensors_bf16(os.path.join(d, "b_infer.safetensors"), rng.normal(0, 1, (300, 48)).astype(np.float32), "hidden")
    j = lambda f: os.path.join(d, f)
    h5 = j("probe_models.h5")
    ok = R.import_both("probe_models/probe_models.h5", [
        "features", "--model", "rmA", "--task", "honesty", j("a_honesty.npy"), j("a_honesty.csv"),
        "--task", "safety", j("a_safety.npy"), j("a_safety.jsonl"), "--infer", j("a_infer.npy"),
        "--model", "rmB", "--tensor", "hidden", "--task", "honesty", j("b_honesty.npy"), j("b_honesty.jsonl"),
        "--task", "safety", j("b_safety.safetensors"), j("b_safety.csv"), "--infer", j("b_infer.safetensors")],
        h5, os.path.join(work, "new-imports", "probe_models.h5"))
    if not ok:
        return []
    tasks = {"honesty": {"classes": [[0], [1], [2]]}, "safety": {"classes": [[0], [1]]}}
    return [("probe_models", {"output_dir": "out", "seed": 3, "jobs": [
        {"name": "rms-mrmbench", "kind": "probe", "input": h5, "models": ["rmA", "rmB"], "tasks": tasks,
         "lr_grid": [0.02, 0.005], "seeds": [0, 1], "max_memory_mb": 1,
         "kmeans": {"k_per_class": 2, "iters": 25, "distance": "euclidean", "tau": {"quantile": 0.8}}},
        {"name": "rms-lbfgs", "kind": "probe", "input": h5, "models": ["rmA", "rmB"], "tasks": tasks, "mode": "lbfgs",
         "l2_grid": [1e-3, 1e-1], "standardize": True, "max_iter": 200,
         "kmeans": {"distance": "cosine", "tau": 0.4}},
        {"name": "rmA-only", "kind": "probe", "input": h5, "group": "/probe/rmA", "tasks": tasks, "init": "zeros",
         "lr_grid": [0.01], "kmeans": {"distance": "mahalanobis"}}]})]


def corpus_real_bench(R, work, data):
    """tests/benchmark/test_bench_real.py: the RewardBench 2 per-item files and the v1 per-subset accuracies."""
    D = os.path.join(data, "rewardbench")
    if not os.path.isdir(D):
        R.res.note(f"real RewardBench data skipped: {D} not found")
        return []
    d = os.path.join(work, "real")
    nd = os.path.join(work, "new-imports", "real")
    os.makedirs(d, exist_ok=True)
    v2 = ["rb2_LxzGordon__URM-LLaMa-3.1-8B.jsonl", "rb2_Skywork__Skywork-Reward-V2-Llama-3.1-8B.jsonl",
          "rb2_Skywork__Skywork-Reward-V2-Qwen3-8B.jsonl"]
    R.import_both("real/rb2.h5", ["rewardbench2"] + [os.path.join(D, f) for f in v2],
                  os.path.join(d, "rb2.h5"), os.path.join(nd, "rb2.h5"))
    pref = os.path.join(d, "pref-sets.json")
    with open(pref, "w") as f:
        json.dump({"model": "mightbe/Better-PairRM", "model_type": "Custom Classifier", "anthropic_helpful": 0.70,
                   "anthropic_hhh": 0.75, "shp": 0.72, "summarize": 0.726, "anthropic_harmless": 0.1,
                   "mtbench_gpt4": 0.1}, f)
    v1 = ["rb1_subset_metrics_Better-PairRM_reward-bench_24689cf.json", None,
          "rb1_subset_metrics_GPM_GPM-Gemma-2-2B.json", "rb1_subset_metrics_GPM_GPM-Gemma-2-9B.json",
          "rb1_subset_metrics_GPM_GPM-Gemma-2B.json", "rb1_subset_metrics_GPM_GPM-Llama-3.1-8B-Instruct.json",
          "rb1_subset_metrics_beaver-7b-v1.0-cost_from_README.json"]
    R.import_both("real/rb1.h5", ["rewardbench"] + [os.path.join(D, f) if f else pref for f in v1],
                  os.path.join(d, "rb1.h5"), os.path.join(nd, "rb1.h5"))
    rb2, rb1 = os.path.join(d, "rb2.h5"), os.path.join(d, "rb1.h5")
    return [("real_rb2", {"output_dir": "out", "seed": 0, "jobs": [
                {"name": "rb2", "kind": "benchmark", "input": rb2, "scheme": "rewardbench-v2", "bootstrap": 300,
                 "compare": "all"}]}),
            ("real_rb1", {"output_dir": "out", "seed": 0, "jobs": [
                {"name": "rb1", "kind": "benchmark", "input": rb1},
                {"name": "rb1-prior", "kind": "benchmark", "input": rb1, "prior_sets": True},
                {"name": "rb1-missing", "kind": "benchmark", "input": rb1, "prior_sets": True, "allow_missing": True,
                 "scheme": "rewardbench-v1"}]})]


def corpus_real_leak(R, work, data, tests, quick):
    """tests/leakage/test_leakage_table1.py, test_leakage_paper.py and tests/import/test_leakage_import_real.py: the same
    importer calls, and the same report jobs."""
    if not os.path.isdir(os.path.join(data, "numleak", "results")):
        R.res.note(f"real NumLeak data skipped: {os.path.join(data, 'numleak', 'results')} not found")
        return []
    sys.path.insert(0, tests)
    import leakdata as L   # the options table of every real panel (it reads RMDIAG_SHARED, set in main)
    d = os.path.join(work, "real")
    nd = os.path.join(work, "new-imports", "real")
    os.makedirs(d, exist_ok=True)

    def imp(name, args):
        out = os.path.join(d, name + ".h5")
        R.import_both(f"real/{name}.h5", ["numleak"] + args, out, os.path.join(nd, name + ".h5"))
        return out

    def P(f):
        return os.path.join(L.RES, f)

    jobfiles = []
    # Table 1
    cr = imp("cr", ["--truth-numleak", L.FF, "--panel", P("camera_ready_multiseed.jsonl")])
    jobfiles.append(("real_table1", {"output_dir": "out", "seed": 0, "jobs": [
        {"name": "table1", "kind": "leakage", "input": cr, "bootstrap": 200, "family": ["Mkt-RF", "SMB", "Mom"]},
        {"name": "table1-lt", "kind": "leakage", "input": cr, "bootstrap": 0, "null_permutations": 0,
         "tolerance_rule": "lt"}]}))
    if quick:
        return jobfiles
    # the paper's other numbers
    NL = ["--truth-numleak", L.FF]
    SW = L.PANELS["sweep.jsonl"]
    h = {}
    h["hold"] = imp("hold", NL + [
        "--panel", P("opus_baselines.jsonl"), "--field", "series=probe", "--where", "probe=mktrf",
        "--map", "series:mktrf=Mkt-RF", "--field", "truth=truth",
        "--panel", P("opus_baselines.jsonl"), "--field", "series=probe", "--where", "probe=blind",
        "--map", "series:blind=Mkt-RF", "--set", "variant=blind", "--field", "truth=truth",
        "--panel", P("multiseed.jsonl"), "--where", "model_name=claude-sonnet-4.6",
        "--panel", P("post_cutoff_holdout.jsonl"), "--set", "series=Mkt-RF", "--field", "truth=truth"])
    h["sweep"] = imp("sweep", NL + ["--panel", P("sweep.jsonl")] + SW[0] + ["--panel", P("sweep.jsonl")] + SW[1] +
                     ["--panel", P("transmission.jsonl")] + L.PANELS["transmission.jsonl"][0] +
                     ["--panel", P("mitigation_stress.jsonl")] + L.PANELS["mitigation_stress.jsonl"][0] +
                     ["--panel", P("fabricated_expanded.jsonl")] + L.PANELS["fabricated_expanded.jsonl"][0])
    h["probe"] = imp("probe", [
        "--panel", P("logprobs_probe.jsonl"), "--set", "model=gpt-5.4", "--field", "logprobs=tokens",
        "--field", "series=cond", "--where", "cond=Mkt-RF|RMW", "--no-truth", "Mkt-RF", "--no-truth", "RMW",
        "--panel", P("logprobs_probe.jsonl"), "--set", "model=gpt-5.4", "--field", "logprobs=tokens",
        "--field", "series=cond", "--where", "cond=Fabricated", "--fictional"])
    h["macro"] = imp("macro", [
        "--truth", f"CPI={L.DATA}/macro/CPIAUCSL.csv,CPIAUCSL,yoy", "--truth", f"UNRATE={L.DATA}/macro/UNRATE.csv",
        "--truth", f"NOAA={L.DATA}/noaa/noaa_us_tavg.csv",
        "--panel", P("cpi_baseline.jsonl"), "--set", "series=CPI", "--field", "truth=truth",
        "--panel", P("unrate_baseline.jsonl"), "--set", "series=UNRATE", "--field", "truth=truth",
        "--panel", P("noaa_temperature.jsonl"), "--set", "series=NOAA", "--field", "truth=truth_f"])
    h["factors"] = imp("factors", NL + ["--panel", P("opus_factors.jsonl"), "--field", "truth=truth",
                                        "--panel", P("gpt54_factors.jsonl"), "--field", "truth=truth",
                                        "--panel", P("variantc_forced_choice.jsonl")] +
                       L.PANELS["variantc_forced_choice.jsonl"][0])
    jobfiles.append(("real_paper", {"output_dir": "out", "seed": 0, "jobs": [
        {"name": "hold", "kind": "leakage", "input": h["hold"], "bootstrap": 0, "null_permutations": 0,
         "holdout_from": 202501, "tolerance_compare": "float"},
        {"name": "hold-dec", "kind": "leakage", "input": h["hold"], "bootstrap": 0, "holdout_from": 202501},
        {"name": "sweep", "kind": "leakage", "input": h["sweep"], "bootstrap": 0, "null_permutations": 0,
         "tolerance_rule": "lt", "tolerance_compare": "float", "sign_zero": "exclude_zero_truth"},
        {"name": "sweep-w5", "kind": "leakage", "input": h["sweep"], "bootstrap": 0, "tolerance": 0.05,
         "tolerance_rule": "lt", "tolerance_compare": "float", "sign_zero": "exclude_zero_truth"},
        {"name": "probe", "kind": "leakage", "input": h["probe"], "bootstrap": 0},
        {"name": "macro", "kind": "leakage", "input": h["macro"], "bootstrap": 0},
        {"name": "noaa", "kind": "leakage", "input": h["macro"], "bootstrap": 0, "tolerance": 0.5},
        {"name": "factors", "kind": "leakage", "input": h["factors"], "bootstrap": 0}]}))
    # every real panel with the options of the README's table, and the de-duplicated release
    files = sorted(f for f in os.listdir(L.RES) if f not in L.NOT_PANELS and f in L.PANELS)
    jobs = []
    for name in files:
        stem = name.replace(".jsonl", "")
        out = imp("panel_" + stem, L.panel_args(name))
        jobs.append({"name": "panel-" + stem, "kind": "leakage", "input": out, "bootstrap": 50, "null_permutations": 50,
                     "family": ["Mkt-RF", "SMB", "HML"]})
    imp("release", ["--truth-numleak", L.FF, "--panel", os.path.join(L.DATA, "release", "sweep.jsonl")] + SW[0])
    jobfiles.append(("real_panels", {"output_dir": "out", "seed": 0, "jobs": jobs}))
    return jobfiles


# ---- main --------------------------------------------------------------------------------------------------

def main():
    if len(sys.argv) > 2 and sys.argv[1] == TEE_FLAG:
        sys.exit(tee_import(sys.argv[2], sys.argv[3:]))
    ap = argparse.ArgumentParser(description="Checks that two builds of rmdiag produce byte-identical outputs.")
    ap.add_argument("old", metavar="OLD_RMDIAG")
    ap.add_argument("new", metavar="NEW_RMDIAG")
    ap.add_argument("--work", metavar="DIR", help="scratch folder (must be empty or absent; default: a new one)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("--quick", action="store_true", help="a subset: about half the time")
    ap.add_argument("--backend", choices=["cpu", "cuda", "auto"], default="cpu", help="passed to rmdiag run (default cpu)")
    a = ap.parse_args()
    old, new = os.path.abspath(a.old), os.path.abspath(a.new)
    for label, p in (("OLD_RMDIAG", old), ("NEW_RMDIAG", new)):
        if not (os.path.isfile(p) and os.access(p, os.X_OK)):
            ap.error(f"{label} {p} is not an executable file")
    # the synthetic corpus and the tests' helpers need numpy and h5py: run under a Python that has them
    if not has_numpy_h5py(sys.executable):
        if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != "/usr/bin/python3" and \
                has_numpy_h5py("/usr/bin/python3"):
            os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__)] + sys.argv[1:])
        ap.error("numpy and h5py are needed (apt-get install python3-numpy python3-h5py)")
    sys.dont_write_bytecode = True     # importing the tests' helpers must leave no files in the checkout
    shared = os.environ.get("RMDIAG_SHARED") or os.path.join(os.path.dirname(REPO), "shared")
    os.environ["RMDIAG_SHARED"] = shared
    data, tests = os.path.join(shared, "data"), os.path.join(REPO, "tests", "lib")

    if a.work:
        work = os.path.abspath(a.work)
        if os.path.exists(work) and (not os.path.isdir(work) or os.listdir(work)):
            ap.error(f"--work {work} must be an empty folder or not exist")
        created = not os.path.exists(work)
        os.makedirs(work, exist_ok=True)
    else:
        base = os.path.join(REPO, "build") if os.path.isdir(os.path.join(REPO, "build")) else None
        work, created = tempfile.mkdtemp(prefix="compare_builds.", dir=base), True

    t0 = time.time()
    res = Results()
    R = Runner(old, new, work, a.backend, res)
    print(f"OLD {old}\nNEW {new}\nscratch folder {work}", flush=True)
    if not R.mpiexec:
        res.note(f"mpiexec not found: the {NEW_RANKS}-rank runs are skipped")
    try:
        phases = [("demo inputs", lambda: corpus_demo(R, work, a.quick)),
                  ("synthetic inputs", lambda: corpus_synthetic(R, work, shared, sys.executable, a.quick))]
        if not a.quick:
            phases += [("probe features of two models", lambda: corpus_probe_models(R, work)),
                       ("synthetic leakage panel", lambda: corpus_leak_panel(R, work, tests))]
        if os.path.isdir(data):
            phases += [("real RewardBench data", lambda: corpus_real_bench(R, work, data)),
                       ("real NumLeak data", lambda: corpus_real_leak(R, work, data, tests, a.quick))]
        else:
            res.note(f"real data skipped: {data} not found")
        jobfiles = []
        for label, build in phases:
            t = time.time()
            made = build()
            jobfiles += made
            print(f"corpus: {label}: {len(made)} job file(s) ({time.time() - t:.1f} s)", flush=True)
        for name, doc in jobfiles:
            t = time.time()
            R.run_jobfile(name, doc)
            print(f"ran {name}: {len(doc['jobs'])} job(s) with OLD, NEW and NEW on {NEW_RANKS} ranks "
                  f"({time.time() - t:.1f} s)", flush=True)
        res.print_table()
        n, nd = res.counts()
        print()
        for msg in res.notes:
            print("note:", msg)
        print(f"{len(jobfiles)} job files, {sum(len(d['jobs']) for _, d in jobfiles)} jobs, {time.time() - t0:.0f} s")
        print(f"{n} outputs compared, " + ("all identical" if nd == 0 else f"{nd} different"))
    finally:
        if a.keep:
            print(f"kept {work}")
        elif created:
            shutil.rmtree(work, ignore_errors=True)
        else:
            for e in os.listdir(work):
                p = os.path.join(work, e)
                shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) and not os.path.islink(p) else os.remove(p)
    return 0 if nd == 0 and n > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
