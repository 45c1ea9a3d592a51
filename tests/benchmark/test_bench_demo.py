"""The benchmark demo: scripts/make_demo_benchmark.sh writes its synthetic RewardBench-shaped files
with awk and imports them with rmdiag's importers; jobs/demo_benchmark.json's jobs then run and say
in the report that the data is synthetic."""
import os
import subprocess

from rdtest import *

d = scratch("bench_demo")
root = REPO
inputs = os.path.join(d, "inputs")
p = subprocess.run(["bash", os.path.join(root, "scripts", "make_demo_benchmark.sh")], capture_output=True, text=True,
                   env=dict(os.environ, DEMO_BENCHMARK_DIR=inputs))
check(p.returncode == 0, f"make_demo_benchmark.sh: exit {p.returncode} ({p.stderr.strip()})")
with open(os.path.join(root, "jobs", "demo_benchmark.json")) as f:
    demo = json.load(f)
check("SYNTHETIC" in demo["description"], "the demo job labels its data synthetic")
for j in demo["jobs"]:
    j["input"] = os.path.join(inputs, os.path.basename(j["input"]))
demo["output_dir"] = os.path.join(d, "out")
with open(os.path.join(d, "demo.json"), "w") as f:
    json.dump(demo, f)
code, out, err = run(["run", os.path.join(d, "demo.json")], ranks=2)
check(code == 0, f"demo run: exit {code} ({err.strip()})")
for j in demo["jobs"]:
    rep = load_report(os.path.join(d, "out", j["name"] + ".json"))
    check("SYNTHETIC" in rep["rmdiag"]["description"], f"{j['name']}: the report says the data is synthetic")
    check(rep["result"]["n_models"] == 3 and len(rep["result"]["comparisons"]) == 3, f"{j['name']}: 3 models compared")
    check(all(m["score_ci95"] is not None for m in rep["result"]["models"]), f"{j['name']}: intervals")
import re
rows = re.findall(r"^ +[123] +synthetic/demo-rm-[012] ", out, re.M)
check(out.count("Leaderboard\n") == 2 and len(rows) == 6, f"two leaderboards of three models on stdout:\n{out}")
check(out.count("Paired comparisons\n") == 2, f"and the paired comparisons:\n{out}")
done()
