"""The planner weighs estimates that are off. A plan fitted to the estimates alone (a wide group per
large job, each just wide enough to end by the estimated makespan) ends late whenever a large job runs
longer than estimated; the planner compares the candidates within 10 % of the smallest estimated
makespan again over draws of times around the estimates and takes the one that does best on average.
Here the 'mixed' mix of bench/sim_schedule.py (8 full-size cm jobs among 400 small ones) is planned for
512 ranks and replayed, as the dispatcher hands jobs out, with true times drawn around the estimates
(log-normal, sigma 0.3) from seeds the planner never sees. Measured on these 20 draws: the plan of
the smallest estimated makespan (the planner before it weighed the spread) reaches a mean efficiency
of 0.735, the planner's 0.888; the test asks for 0.80, and for the estimated efficiency to stay at
0.85 or more (the goal on the estimates alone)."""
import os
import subprocess

from rdtest import *

sim = os.path.join(os.path.dirname(RMDIAG), "rmdiag_sim_plan")
if not os.access(sim, os.X_OK):
    print(f"SKIP: {sim} was not built (RMDIAG_BENCH_TOOLS=OFF)")
    sys.exit(77)
d = scratch("plan_spread")
src = os.path.join(os.environ["RMDIAG_SOURCE"], "tests", "unit", "sim_plan_mixed.txt")
jobs = [tuple(float(x) for x in line.split()) for line in open(src) if line.strip() and not line.startswith("#")]
check(len(jobs) == 408, f"the mix has its 408 jobs ({len(jobs)})")


def plan_with(actual, tag):
    """rmdiag_sim_plan on 512 ranks with these true times: {key: value} of its line."""
    path = os.path.join(d, f"{tag}.costs")
    with open(path, "w") as f:
        for (s, fr, m), a in zip(jobs, actual):
            f.write(f"{s:.6f} {fr:.6f} {int(m)} {a:.6f}\n")
    out = subprocess.run([sim, "512", path], capture_output=True, text=True)
    check(out.returncode == 0 and "MISMATCH" not in out.stdout, f"{tag}: the plan replays ({out.returncode}: "
          f"{out.stdout[-300:]} {out.stderr[-300:]})")
    line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv and not kv.startswith("text"))


rng = np.random.default_rng(20261202)
runs = []
for k in range(20):
    true = [s * float(np.exp(rng.normal(0.0, 0.3))) for s, _, _ in jobs]
    runs.append(plan_with(true, f"draw{k}"))
if all("actual_efficiency" in r for r in runs):
    groups = {r["groups"] for r in runs}
    check(len(groups) == 1, f"the plan depends on the estimates alone, not on the true times ({groups})")
    est = float(runs[0]["efficiency"])
    eff = [float(r["actual_efficiency"]) for r in runs]
    mean = sum(eff) / len(eff)
    print(f"plan {runs[0]['groups']}: estimated efficiency {est:.3f}; with true times off the estimates: mean "
          f"{mean:.3f}, lowest {min(eff):.3f} over {len(eff)} draws")
    check(est >= 0.85, f"the estimated efficiency stays at 0.85 or more ({est:.3f})")
    check(mean >= 0.80, f"with true times off the estimates the mean efficiency is 0.80 or more ({mean:.3f})")
else:
    check(False, f"rmdiag_sim_plan printed the actual efficiency ({runs[0]})")
done()
