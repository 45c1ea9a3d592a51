"""Natural mistakes in a probe job get a message naming their fix (docs/reference.md, 'probe input
layout'): forgetting "models" on an input with per-model groups lists them and suggests "models";
"models" on a single-model input says to remove it; a model or task name that is not there names the
groups that are (and a near task name). Also a near-miss "kind" and a missing "tasks"."""
import os

from rdtest import *

d = scratch("probe_hints")
rng = np.random.default_rng(3)


def task(g, name):
    g[f"{name}/X"] = rng.standard_normal((12, 3)).astype(np.float32)
    g[f"{name}/label"] = np.array([0, 1] * 6, dtype=np.int64)
    g[f"{name}/split"] = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2], dtype=np.uint8)


two = os.path.join(d, "two.h5")
with h5py.File(two, "w") as f:
    for rm in ("rmA", "rmB"):
        task(f.require_group(f"probe/{rm}"), "harmlessness")
one = os.path.join(d, "one.h5")
with h5py.File(one, "w") as f:
    task(f.require_group("probe"), "harmlessness")
    task(f.require_group("probe"), "helpfulness")
TASKS = {"harmlessness": {"classes": [[0], [1]]}}


def validate(jobs, name="j.json"):
    path = write_job(os.path.join(d, name), jobs)
    return run(["validate", path])


# the case: the two-model input without "models"
code, _, err = validate([{"name": "p", "kind": "probe", "input": "two.h5", "tasks": TASKS}])
check(code == 2 and 'task "harmlessness" has no group /probe/harmlessness' in err
      and 'per-model groups holding it ("rmA", "rmB")' in err and 'add "models": ["rmA", "rmB"]' in err,
      f"forgotten models: the message lists the model groups and suggests models: {err}")
# and with it, the job is valid
code, _, err = validate([{"name": "p", "kind": "probe", "input": "two.h5", "tasks": TASKS, "models": ["rmA", "rmB"]}])
check(code == 0, f"with models the job validates: {err}")
# a model name that is not there
code, _, err = validate([{"name": "p", "kind": "probe", "input": "two.h5", "tasks": TASKS, "models": ["rmA", "rmC"]}])
check(code == 2 and 'models[1] = "rmC" but group /probe/rmC is missing' in err
      and 'holding task "harmlessness" are "rmA", "rmB"' in err, f"a wrong model names the model groups: {err}")
# "models" on a single-model input
code, _, err = validate([{"name": "p", "kind": "probe", "input": "one.h5", "tasks": TASKS, "models": ["rmA"]}])
check(code == 2 and "the tasks are directly under /probe" in err and 'remove "models"' in err,
      f"models on a single-model input: {err}")
# a misspelt task
code, _, err = validate([{"name": "p", "kind": "probe", "input": "one.h5",
                          "tasks": {"helpfullness": {"classes": [[0], [1]]}}}])
check(code == 2 and 'did you mean "helpfulness"?' in err and '"harmlessness", "helpfulness"' in err,
      f"a misspelt task names the near one and the task groups: {err}")
# a task name far from any: the task groups present
code, _, err = validate([{"name": "p", "kind": "probe", "input": "one.h5", "tasks": {"zz": {"classes": [[0], [1]]}}}])
check(code == 2 and 'the task groups in /probe are "harmlessness", "helpfulness"' in err, f"unknown task: {err}")
# no "tasks": init writes them
code, _, err = validate([{"name": "p", "kind": "probe", "input": "one.h5"}])
check(code == 2 and 'missing required key "tasks"' in err and "rmdiag init probe INPUT.h5" in err, f"no tasks: {err}")
# a near-miss kind
code, _, err = validate([{"name": "p", "kind": "prob", "input": "one.h5", "tasks": TASKS}])
check(code == 2 and '"kind" = "prob" is not a report kind; did you mean "probe"?' in err, f"near-miss kind: {err}")

done()
