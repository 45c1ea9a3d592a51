"""The leakage demo: scripts/make_demo_leakage.sh (awk + rmdiag's own importer, no Python) writes its
synthetic files into jobs/data/ identically on every run (checked by running it in two directories), imports them, and jobs/demo_leakage.json runs on 2 ranks
with the expected picture: the "recaller" model leaks (high within, selectivity far above 1), the
"guesser" does not, only the recaller declines the fictional series, and the recaller ranks every pair."""
import filecmp
import os
import shutil
import subprocess

from rdtest import *

root = REPO
def make(name):
    d = scratch(name)
    os.makedirs(os.path.join(d, "scripts"))
    os.makedirs(os.path.join(d, "jobs"))
    shutil.copy(os.path.join(root, "scripts", "make_demo_leakage.sh"), os.path.join(d, "scripts"))
    shutil.copy(os.path.join(root, "jobs", "demo_leakage.json"), os.path.join(d, "jobs"))
    p = subprocess.run(["bash", os.path.join(d, "scripts", "make_demo_leakage.sh")], capture_output=True, text=True,
                       env=dict(os.environ, RMDIAG=RMDIAG))
    check(p.returncode == 0, f"make_demo_leakage.sh in {name} ({p.stderr[-400:]})")
    return d


d = make("leak_demo")
d2 = make("leak_demo_again")
for f in ("demo_leak_alpha.csv", "demo_leak_beta.csv", "demo_leak_gamma.csv", "demo_leak_panel.jsonl",
          "demo_leak_rank.jsonl"):
    a, b = os.path.join(d, "jobs", "data", f), os.path.join(d2, "jobs", "data", f)
    check(os.path.getsize(a) > 0, f"{f}: written and not empty")
    check(filecmp.cmp(a, b, shallow=False), f"{f}: the script writes the same bytes every time")
code, out, err = run(["run", os.path.join(d, "jobs", "demo_leakage.json"), "--force"], ranks=2)
check(code == 0, f"demo job ({err})")
rep = load_report(os.path.join(d, "out", "demo", "demo-leakage.json"))
check("SYNTHETIC" in rep["rmdiag"]["description"], "the report says the data are synthetic")
r = rep["result"]
for c in r["cells"]:
    if c["model"] == "recaller":
        check(c["within"] > 0.8 and c["selectivity"] > 5 and c["r"] > 0.98, f"recaller {c['series']} leaks: {c['within']}")
    if c["model"] == "guesser":
        check(c["selectivity"] < 2 and abs(c["r"]) < 0.3, f"guesser {c['series']} does not: {c['selectivity']}")
fic = {f["model"]: f["parse_rate"] for f in r["fictional"]}
check(fic == {"recaller": 0, "halfway": 1, "guesser": 1}, f"fictional series answered: {fic}")
rk = {x["model"]: x for x in r["ranking"]}
check(rk["recaller"]["accuracy"] == 1 and rk["recaller"]["n_picked"] == 30, f"recaller ranks every pair: {rk['recaller']}")
check(len(r["holdout"]) == 9, "holdout split per cell")
done()
