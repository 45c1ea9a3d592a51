"""`rmdiag import cm-csv`: a long CSV (RFC 4180: quoted fields with commas and quotes, CRLF) into
the cm layout, checked dataset by dataset; the imported file then gives the same report as the
oracle computed from the CSV rows; malformed CSVs exit 2 naming the row, and write nothing."""
import csv
import io
import os

from gen_cm import oracle_cm
from rdtest import *

d = scratch("import_cm_csv")
rng = np.random.default_rng(4)
P, R = 300, 4
pair_ids = rng.permutation(np.arange(1000, 1000 + P))           # integer ids, shuffled in the file
users = [f'user "{i % 37}", team {i % 5}' for i in range(P)]     # quotes and commas
rc, rr = rng.normal(size=(P, R)), rng.normal(size=(P, R))
split = {u: rng.random(R) < 0.6 for u in set(users)}
flags = np.array([split[u] for u in users], dtype=np.uint8)
length = rng.integers(-50, 50, P).astype(float)
length[::17] = np.nan
rows = [(r, p) for p in range(P) for r in range(R)]
rng.shuffle(rows)
buf = io.StringIO(newline="")
w = csv.writer(buf, lineterminator="\r\n")
w.writerow(["run", "pair", "user", "reward_chosen", "reward_rejected", "in_train", "length"])
for r, p in rows:
    w.writerow([r, pair_ids[p], users[p], repr(rc[p, r]), repr(rr[p, r]), int(flags[p, r]),
                "" if np.isnan(length[p]) else int(length[p])])
csv_path = os.path.join(d, "pairs.csv")
with open(csv_path, "w", newline="") as f:
    f.write(buf.getvalue())
out = os.path.join(d, "pairs.h5")
code, _, err = run(["import", "cm-csv", csv_path, "-o", out])
check(code == 0, f"import exits 0 ({err})")
order = np.argsort(pair_ids)                                    # numeric pair order
with h5py.File(out) as f:
    check(f["cm/reward_chosen"].shape == (P, R) and f["cm/reward_chosen"].dtype == np.float64, "rewards [P, R] float64")
    check(all(f["cm/" + k].chunks is not None and f["cm/" + k].compression == "gzip"
              for k in ("reward_chosen", "reward_rejected", "in_train")), "chunked, compressed [P, R] datasets")
    check(np.array_equal(f["cm/reward_chosen"][...], rc[order]), "reward_chosen exact, pairs in numeric id order")
    check(np.array_equal(f["cm/reward_rejected"][...], rr[order]), "reward_rejected exact")
    check(np.array_equal(f["cm/in_train"][...], flags[order]), "in_train")
    check([u.decode() for u in f["cm/user"][...]] == [users[i] for i in order], "string users with quotes and commas")
    check([int(x) for x in f["cm/pair_id"][...]] == sorted(pair_ids.tolist()), "pair ids kept")
    check([x.decode() for x in f["cm/run_id"][...]] == ["0", "1", "2", "3"], "run ids kept")
    cov = f["cm/covariates/length"][...]
    check(np.array_equal(np.isnan(cov), np.isnan(length[order])) and
          np.array_equal(cov[~np.isnan(cov)], length[order][~np.isnan(length[order])]), "covariate with blanks as NaN")

jp = write_job(os.path.join(d, "job.json"), [{"name": "csv", "kind": "cm", "input": "pairs.h5", "bootstrap": 0,
                                               "strata": [{"covariate": "length", "bins": 3}]}])
code, _, err = run(["run", jp], ranks=2)
check(code == 0, f"run on the imported file ({err})")
res = load_report(os.path.join(d, "out", "csv.json"))["result"]
tm, tg, cm, _, _ = oracle_cm(rc, rr, flags, users)
close(res["tm"]["mean"], np.nanmean(tm), "tm mean from the CSV rows")
close(res["cm"]["median"], np.nanmedian(cm), "cm median from the CSV rows")
check(res["n_users"] == len(set(users)) and res["strata_excluded"]["length"] == int(np.isnan(length).sum()), "users, excluded")

HEADER = "run,pair,user,reward_chosen,reward_rejected,in_train\n"
bad = {
    "missing_column": ("run,pair,user,reward_chosen,in_train\n0,1,u,1,0,1\n", 'missing column "reward_rejected"'),
    "duplicate": (HEADER + "0,1,u,1,0,1\n1,1,u,1,0,1\n0,1,u,2,0,1\n", 'line 4 repeats pair "1" run "0" of line 2'),
    "missing_cell": (HEADER + "0,1,u,1,0,1\n1,1,u,1,0,1\n0,2,v,1,0,1\n", 'pair "2" has no row for run "1"'),
    # the first repeat in file order (line 5 repeats line 3, before line 6 repeats line 2), named with its first line
    "first_repeat": (HEADER + "0,1,u,1,0,1\n0,2,u,1,0,1\n1,1,u,1,0,1\n0,2,u,1,0,1\n0,1,u,1,0,1\n0,2,u,1,0,1\n",
                     'line 5 repeats pair "2" run "0" of line 3'),
    # 40,000 rows, every pair and run its own: refused as incomplete, never a dense 40,000 x 40,000 table
    "sparse": (HEADER + "".join(f"{i},{i},u{i},1,0,1\n" for i in range(40000)),
               'pair "0" has no row for run "1"; every pair needs one row per run (40000 runs)'),
    "user_changes": (HEADER + "0,1,u,1,0,1\n1,1,w,1,0,1\n", 'line 3: pair "1" has user "w" but line 2 gave it user "u"'),
    "bad_reward": (HEADER + "0,1,u,abc,0,1\n", 'line 2: reward_chosen = "abc", expected a finite number'),
    "nan_reward": (HEADER + "0,1,u,1,nan,1\n", 'line 2: reward_rejected = "nan", expected a finite number'),
    "flag_2": (HEADER + "0,1,u,1,0,2\n", 'line 2: in_train = "2", expected 0 or 1'),
    "field_count": (HEADER + "0,1,u,1,0,1\n0,2,v,1,0\n", "line 3 has 5 fields, expected 6"),
    # quoted newlines and a blank line: records start on lines 2 and 5; the bad one is on line 5
    "line_numbers": (HEADER + '0,1,"u\nx",1,0,1\n\n1,1,"u\nx",1,0,7\n', 'line 5: in_train = "7"'),
    "dot_covariate": ("run,pair,user,reward_chosen,reward_rejected,in_train,.\n0,1,u,1,0,1,3\n", 'column 7: "." cannot name a covariate'),
    "open_quote": (HEADER + '0,1,"u,1,0,1\n', "malformed CSV"),
    "empty": ("", "empty file"),
    "duplicate_column": ("run,pair,user,reward_chosen,reward_rejected,in_train,len,user\n0,1,u,1,0,1,3,u\n",
                         'line 1 (header): column "user" appears twice'),
    # 40,000 covariate columns, the last repeating an early one: found by sorting the names
    "many_columns_repeat": (HEADER.rstrip("\n") + "".join(f",c{i}" for i in range(40000)) + ",c7\n0,1,u,1,0,1\n",
                            'line 1 (header): column "c7" appears twice'),
}
for name, (text, needle) in bad.items():
    p = os.path.join(d, name + ".csv")
    with open(p, "w") as f:
        f.write(text)
    o = os.path.join(d, "bad", name + ".h5")
    os.makedirs(os.path.dirname(o), exist_ok=True)
    code, _, err = run(["import", "cm-csv", p, "-o", o])
    check(code == 2, f"{name}: exit {code}, expected 2")
    check(needle in err and p in err, f"{name}: message should name the file and contain {needle!r}: {err.strip()}")
    check(outputs_in(os.path.dirname(o)) == [], f"{name}: nothing written ({outputs_in(os.path.dirname(o))})")
code, _, err = run(["import", "cm-csv", csv_path])
check(code == 2 and "missing -o OUT.h5" in err, "missing -o is a usage error")
code, _, err = run(["import", "cm-csv", csv_path, "-o", out, "--group"])
check(code == 2 and "--group needs a value" in err, f"--group without a value: {err}")
code, _, err = run(["import", "nope", csv_path, "-o", out])
check(code == 2 and 'unknown format "nope"' in err, "unknown format is a usage error")

# A UTF-8 byte order mark before the header (spreadsheet exports) is not part of the first name;
# users "007" and "7" are different ids and stay different (stored as strings).
p = os.path.join(d, "bom.csv")
with open(p, "wb") as f:
    f.write(b"\xef\xbb\xbf" + HEADER.replace("\n", "\r\n").encode() + b"0,1,007,1,0,1\r\n0,2,7,1,0,0\r\n")
o = os.path.join(d, "bom.h5")
code, _, err = run(["import", "cm-csv", p, "-o", o])
check(code == 0, f"BOM + CRLF import: {err}")
if code == 0:
    with h5py.File(o) as f:
        check([u.decode() for u in f["cm/user"][...]] == ["007", "7"], f"users kept apart: {f['cm/user'][...]}")
done()
