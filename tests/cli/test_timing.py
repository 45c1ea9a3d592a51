"""RMDIAG_TIMING: unset or 0 prints no phase times; any other value prints rank 0's
("[timing] JOB: PHASE  S s"); "all" prints every rank's, each line naming its rank in the job's
group ("[timing] rank R JOB: PHASE  S s"): on a cm job run on a group of 2, rank 1 marks the phases
it takes part in and rank 0 those and its own (report, outputs). The run's own phases before the
first job (the job file, the inputs, their layouts, the plan) come first, labelled "(checks)"."""
import os
import re

from rdtest import *

d = scratch("timing")
rng = np.random.default_rng(5)
P, R = 600, 6
users = rng.integers(0, 40, P)
write_cm(os.path.join(d, "cm.h5"), rng.normal(0.4, 1, (P, R)), rng.normal(0, 1, (P, R)),
         (rng.random((40, R)) < 0.6).astype(np.uint8)[users], users)
jp = write_job(os.path.join(d, "job.json"), [{"name": "c", "kind": "cm", "input": "cm.h5", "bootstrap": 50}])


def timing_lines(value):
    env = {"RMDIAG_TIMING": value} if value is not None else {}
    code, _, err = run(["run", jp, "--force", "--quiet", "--ranks-per-job", "all"], ranks=2, env=env)
    check(code == 0, f"RMDIAG_TIMING={value}: exit {code} ({err[-300:]})")
    return [l for l in err.splitlines() if l.startswith("[timing]")]


for value in (None, "0"):
    lines = timing_lines(value)
    check(lines == [], f"RMDIAG_TIMING={value}: no phase times ({lines[:2]})")

CHECKS = ["job file", "inputs resolved", "layouts, specs, estimates", "output paths, resume", "plan"]
lines = timing_lines("1")
check(len(lines) >= 3, f"RMDIAG_TIMING=1: phase times printed ({len(lines)} lines)")
plain = re.compile(r"^\[timing\] (c|\(checks\)): (.+?) +[0-9.]+ s$")
check(all(plain.match(l) for l in lines), f"RMDIAG_TIMING=1: rank 0's lines without a rank ({lines[:3]})")
checks = [plain.match(l).group(2) for l in lines if plain.match(l) and plain.match(l).group(1) == "(checks)"]
check(checks == CHECKS, f"RMDIAG_TIMING=1: the run's checks, in order ({checks})")
check(all(plain.match(l) and plain.match(l).group(1) == "(checks)" for l in lines[:len(CHECKS)]),
      f"RMDIAG_TIMING=1: the checks come before the job's phases ({lines[:6]})")
lines = [l for l in lines if not l.startswith("[timing] (checks)")]
phases0 = [plain.match(l).group(2) for l in lines if plain.match(l)]

lines = [l for l in timing_lines("all") if "(checks)" not in l]
ranked = re.compile(r"^\[timing\] rank (\d+) c: (.+?) +[0-9.]+ s$")
check(all(ranked.match(l) for l in lines), f"RMDIAG_TIMING=all: every line names its rank ({lines[:3]})")
by_rank = {}
for l in lines:
    m = ranked.match(l)
    by_rank.setdefault(int(m.group(1)), []).append(m.group(2))
check(sorted(by_rank) == [0, 1], f"RMDIAG_TIMING=all: lines from ranks 0 and 1 ({sorted(by_rank)})")
check(by_rank.get(0) == phases0, f"rank 0's phases as with RMDIAG_TIMING=1 ({by_rank.get(0)} vs {phases0})")
# rank 1 marks the phases it takes part in, in rank 0's order (the report and outputs are rank 0's)
r0, r1 = by_rank.get(0, []), by_rank.get(1, [])
check("pair kernel" in r1 and r1 == r0[:len(r1)] and len(r1) < len(r0),
      f"rank 1 marks the shared phases, rank 0 also its own ({r1} vs {r0})")
done()
