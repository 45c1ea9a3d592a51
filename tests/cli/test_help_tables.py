"""`rmdiag help KIND` lists every option of the kind's option table (read here from the C sources, the
tables themselves) with a type, a default and a line of help, plus the keys every job has; `rmdiag help
FORMAT` lists every option of the importer's argument table; and a job key the table does not hold is
refused while every key help lists is accepted by the job parser."""
import os
import re

from rdtest import *

SRC = os.path.join(REPO, "src")
COMMON_KEYS = ["name", "kind", "input", "group", "seed", "sweep"]
KIND_DIRS = {"cm": "cm", "benchmark": "benchmark", "leakage": "leakage", "probe": "probe"}
# table rows: the RD_OPTION_* macros, or rows written out with designated initialisers
ROW = re.compile(r'RD_OPTION_(?:INT|NUMBER|BOOL|STRING|CUSTOM)\(\s*"([^"]+)"|RD_OPTION_(BOOTSTRAP)\(|\{\s*\.key = "([^"]+)"')


def table_keys(folder):
    keys = []
    for fn in sorted(os.listdir(folder)):
        if fn.endswith("_options.c"):
            with open(os.path.join(folder, fn)) as f:
                for m in ROW.finditer(f.read()):
                    keys.append(m.group(1) or m.group(3) or "bootstrap")
    return keys


def help_blocks(text):
    """{key: [type-default line, help line]} from `rmdiag help KIND`: a key at two spaces, its lines at six."""
    blocks, cur = {}, None
    for line in text.splitlines():
        if re.match(r"^  [A-Za-z0-9_]+$", line):
            cur = line.strip()
            blocks[cur] = []
        elif line.startswith("      ") and cur:
            blocks[cur].append(line.strip())
        else:
            cur = None
    return blocks


for kind, folder in KIND_DIRS.items():
    keys = table_keys(os.path.join(SRC, "worker", folder))
    check(len(keys) >= 2, f"{kind}: the option table was found in the sources ({keys})")
    code, out, err = run(["help", kind])
    check(code == 0, f"help {kind}: exit {code} {err}")
    blocks = help_blocks(out)
    check(list(blocks) == COMMON_KEYS + keys,
          f"help {kind} lists the job keys and then the table's options in table order:\n  {list(blocks)}\n  "
          f"{COMMON_KEYS + keys}")
    for k in keys:
        b = blocks.get(k, [])
        check(len(b) == 2 and "; default " in b[0] and len(b[1]) > 10,
              f"help {kind}: {k} has a type and default line and a help line: {b}")

# ranges as the tables give them (examples from each kind)
_, out, _ = run(["help", "leakage"])
b = help_blocks(out)
check(b["null_permutations"][0] == "integer; default 1000; 0..100000000", f"a range: {b['null_permutations']}")
check(b["tolerance_rule"][0].endswith('one of "le", "lt"'), f"string choices: {b['tolerance_rule']}")

# the importers: every option of each argument table appears in help FORMAT
FORMAT_FILES = {"cm-csv": ["cm_csv.c"], "features": ["features.c"], "numleak": ["numleak_args.c"],
                "rewardbench": ["rewardbench.c"], "rewardbench2": ["rewardbench.c"]}
ARG = re.compile(r'\{\s*"(--[a-z0-9-]+)",\s*(?:"[^"]*"|NULL),\s*RD_ARG_')
for fmt, files in FORMAT_FILES.items():
    opts = set()
    for fn in files:
        with open(os.path.join(SRC, "import", fn)) as f:
            opts |= set(ARG.findall(f.read()))
    check(opts, f"{fmt}: the argument table was found")
    code, out, err = run(["help", fmt])
    check(code == 0, f"help {fmt}: {err}")
    missing = sorted(o for o in opts if not re.search(r"(^|\s|\[)" + re.escape(o) + r"\b", out))
    check(not missing, f"help {fmt} lists every option of its table; missing {missing}")

# every key help lists is one the job parser accepts, and a key outside the table is refused
d = scratch("help_tables")
with h5py.File(os.path.join(d, "x.h5"), "w") as f:
    f["cm/reward_chosen"] = np.zeros((2, 1))
for kind in KIND_DIRS:
    _, out, _ = run(["help", kind])
    for key in help_blocks(out):
        if key in ("name", "kind", "input"):
            continue
        write_job(os.path.join(d, "j.json"), [{"name": "a", "kind": kind, "input": "x.h5", key: {"no": "value"}}])
        code, _, err = run(["validate", os.path.join(d, "j.json")])
        check(code == 2 and f'unknown key "{key}"' not in err, f"{kind}: key {key} is one the parser knows ({err.strip()})")
    write_job(os.path.join(d, "j.json"), [{"name": "a", "kind": kind, "input": "x.h5", "no_such_option": 1}])
    code, _, err = run(["validate", os.path.join(d, "j.json")])
    check(code == 2 and 'unknown key "no_such_option"' in err, f"{kind}: an unknown key is refused: {err}")

done()
