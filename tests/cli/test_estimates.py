"""The planner's estimates of benchmark, leakage and probe jobs (each kind's `estimate`, from the input's
layout and the job's options). `run --plan` lists every job with its kind's estimate; on the same input
the options move it (resamples, null draws, seeds) as the model says (linearly); a larger job of each
kind is estimated larger and handed out first; a medium and a small job of each kind, run as plain
processes, take about what was estimated (within 3x of the measured time once scaled by this host's
speed, and in about the measured ratio); odd layouts that validate (accuracy-form benchmark, a leakage panel with only ranking rows,
float16 probe features of two models) still get an estimate."""
import os
import re
import resource

from rdtest import *
from benchutil import V1_SIZES, write_bench
from leakdata import gen_panel

d = scratch("estimates")
rng = np.random.default_rng(11)


def bench_input(name, M, f, comp=2):
    """Every RewardBench v1 subset at f times its size, `comp` completions per item."""
    subsets = list(V1_SIZES)
    sizes = [max(1, round(V1_SIZES[s] * f)) for s in subsets]
    sub = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
    sub = sub[rng.permutation(sub.size)]
    I = sub.size
    scores = rng.standard_normal((M, comp * I), dtype=np.float32)
    scores[:, ::comp] += rng.uniform(0, 1.5, M)[:, None].astype(np.float32)
    return write_bench(os.path.join(d, name), [f"rm-{i}" for i in range(M)], subsets, sub,
                       np.arange(0, comp * I + 1, comp), np.ones(I, np.int32), scores, dtype="float32")


def probe_input(name, N, dim, C, n_inf=0, models=0, dtype="float32"):
    with h5py.File(os.path.join(d, name), "w") as h:
        groups = [h.create_group("probe")] if not models else [h.create_group(f"probe/rm{m}") for m in range(models)]
        for g in groups:
            lab = rng.integers(0, C, N).astype(np.int32)
            X = rng.standard_normal((N, dim), dtype=np.float32)
            X += rng.standard_normal((C, dim), dtype=np.float32)[lab] * 0.3
            g["a/X"] = X.astype(dtype)
            g["a/label"] = lab
            g["a/split"] = rng.choice(3, N, p=[0.8, 0.1, 0.1]).astype(np.uint8)
            if n_inf:
                g["infer/X"] = rng.standard_normal((n_inf, dim), dtype=np.float32).astype(dtype)
    return os.path.join(d, name)


FAM = ["S0", "S1", "S2", "S3", "S4"]
bench_input("bench_small.h5", 50, 1)
bench_input("bench_medium.h5", 100, 4)
gen_panel(os.path.join(d, "leak_small.h5"), M=5, S=6, V=1, K=3, T=120, seed=1, chunked=False)
gen_panel(os.path.join(d, "leak_medium.h5"), M=5, S=6, V=2, K=3, T=240, seed=2, chunked=False)
# the probe's two jobs differ in rows alone: its terms weigh differently on different hosts (the
# multiply-adds by the vector width the CPU has, the value scan by the cost of mapping pages), and
# every term grows with the rows
probe_input("probe_small.h5", 12000, 1024, 3, n_inf=1000)
probe_input("probe_medium.h5", 36000, 1024, 3, n_inf=3000)

two, three = {"classes": [[0], [1]]}, {"classes": [[0], [1], [2]]}
LEAK = {"kind": "leakage", "signal_series": "S0", "family": FAM}
small = {
    "benchmark": {"kind": "benchmark", "input": "bench_small.h5", "bootstrap": 2000},
    "leakage": dict(LEAK, input="leak_small.h5", bootstrap=2000, null_permutations=2000),
    "probe": {"kind": "probe", "input": "probe_small.h5", "tasks": {"a": three}, "seeds": [0, 1, 2],
              "lr_grid": [1e-4, 5e-5, 2e-5, 1e-5]},
}
medium = {
    "benchmark": {"kind": "benchmark", "input": "bench_medium.h5", "bootstrap": 2000, "compare": "all"},
    "leakage": dict(LEAK, input="leak_medium.h5", bootstrap=4000, null_permutations=4000),
    "probe": {"kind": "probe", "input": "probe_medium.h5", "tasks": {"a": three}, "seeds": [0, 1, 2],
              "lr_grid": [1e-4, 5e-5, 2e-5, 1e-5]},
}
# the same input, one option at three evenly spaced values: the model is linear in each
sweeps = {
    "benchmark": ("bootstrap", 2000, {k: v for k, v in medium["benchmark"].items() if k != "compare"}),
    "leakage": ("null_permutations", 4000, dict(medium["leakage"], bootstrap=0)),
    "probe": ("seeds", 2, dict(medium["probe"], kmeans=False)),
}


def plan_rows(out):
    """{job: (order, kind, est. s, ranks useful)} from the table `run --plan` prints."""
    rows = {}
    for m in re.finditer(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+[\d.]+\s+(\S+)\s+(\d+)\s", out, re.M):
        rows[m.group(2)] = (int(m.group(1)), m.group(3), float(m.group(4)), int(m.group(5)))
    return rows


jobs = []
for kind in ("benchmark", "leakage", "probe"):
    jobs.append(dict(small[kind], name=f"{kind}-small"))
    jobs.append(dict(medium[kind], name=f"{kind}-medium"))
    key, n, spec = sweeps[kind]
    for i, v in enumerate((0, n, 2 * n) if key != "seeds" else (1, 2, 3)):
        jobs.append(dict(spec, name=f"{kind}-sweep{i}", **{key: list(range(v)) if key == "seeds" else v}))
jp = write_job(os.path.join(d, "all.json"), jobs, output_dir="out_all")
code, out, err = run(["run", jp, "--plan"])
rows = plan_rows(out)
check(code == 0 and len(rows) == len(jobs), f"--plan lists every job ({code}: {out[-600:]} {err[-300:]})")
for j in jobs:
    r = rows.get(j["name"])
    check(r is not None and r[1] == j["kind"] and r[2] > 0 and r[3] >= 1,
          f"{j['name']}: the plan lists its kind, a positive estimate and the ranks it can use ({r})")
if len(rows) == len(jobs):
    for kind in ("benchmark", "leakage", "probe"):
        e = [rows[f"{kind}-sweep{i}"][2] for i in range(3)]
        check(e[0] < e[1] < e[2], f"{kind}: the estimate grows with {sweeps[kind][0]} on the same input ({e})")
        # the sweep's increments are equal (a linear term), to the printed precision
        check(abs((e[2] - e[1]) - (e[1] - e[0])) <= 0.02 * (e[2] - e[0]) + 0.002,
              f"{kind}: the estimate is linear in {sweeps[kind][0]} ({e})")
        s, m = rows[f"{kind}-small"][2], rows[f"{kind}-medium"][2]
        check(m > 2 * s, f"{kind}: the medium job is estimated well above the small one ({s} vs {m})")
        check(rows[f"{kind}-medium"][3] > rows[f"{kind}-small"][3] or rows[f"{kind}-medium"][3] > 1,
              f"{kind}: the medium job can use more ranks ({rows[f'{kind}-small']} vs {rows[f'{kind}-medium']})")

# Two groups of one rank: the order is the hand-out order, the largest estimate first.
code, out, err = run(["run", jp, "--plan", "--ranks-per-job", "1"], ranks=2)
r2 = plan_rows(out)
check(code == 0 and "2 groups of 1 rank" in out, f"2 ranks, 1 per job: two groups ({code}: {out[:300]} {err[-300:]})")
if len(r2) == len(jobs):
    order = [r2[j["name"]][0] for j in jobs]
    est = [r2[j["name"]][2] for j in jobs]
    check(all(est[order.index(k)] >= est[order.index(k + 1)] for k in range(1, len(jobs))),
          f"the jobs are handed out largest estimate first ({sorted(zip(order, est))})")
    for kind in ("benchmark", "leakage", "probe"):
        check(r2[f"{kind}-medium"][0] < r2[f"{kind}-small"][0], f"{kind}: the medium job goes before the small one")


def cpu_of(args):
    """(exit status, stdout, stderr, CPU seconds of the process: user + system)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    code, out, err = run(args)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return code, out, err, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


# Estimates against measured times, each job alone in a plain process. The job's time is the CPU seconds of
# its run less those of its --plan (process start, layout checks), the least of three runs: steady when
# other work loads the machine (the suite runs two tests at a time on two cores), where the report's
# wall-clock seconds are not. The small jobs are sized to take 40 ms or more on a fast host, so that the
# noise of process start (a few ms, and the clock's ticks) does not decide their ratio to the medium ones.
# The estimates are seconds of the 2-vCPU VM they were fitted on; other hosts run every kind faster or
# slower by a common factor (2-3x between the VMs this suite has run on). The planner only needs the
# estimates in the right proportions, so each is checked against the measured time scaled by this
# host's factor (the geometric mean of measured / estimated over the six jobs), and the factor itself
# against a broad band.
measured = {}
for size, specs in (("small", small), ("medium", medium)):
    for kind, spec in specs.items():
        name = f"{kind}-{size}"
        jp = write_job(os.path.join(d, f"{name}.json"), [dict(spec, name=name)], output_dir="out_one")
        plans = [cpu_of(["run", jp, "--plan"]) for _ in range(2)]
        est = plan_rows(plans[0][1]).get(name, (0, "", 0.0, 0))[2]
        runs, seconds = [], []
        for _ in range(3):
            runs.append(cpu_of(["run", jp, "--force", "--quiet"]))
            seconds.append(load_report(os.path.join(d, "out_one", name + ".json"))["rmdiag"]["seconds"])
        check(all(r[0] == 0 for r in runs), f"{name}: exit {[r[0] for r in runs]} ({runs[0][2][-300:]})")
        job_cpu = max(min(r[3] for r in runs) - min(p[3] for p in plans), 0.005)
        measured[name] = (max(est, 1e-6), job_cpu, min(seconds))
        print(f"{name}: estimated {est:.3f} s, measured {job_cpu:.3f} CPU s ({min(seconds):.3f} s in the report)")
host = float(np.exp(np.mean([np.log(c / e) for e, c, _ in measured.values()])))
print(f"this host: measured / estimated {host:.2f} (geometric mean over the six jobs)")
check(0.2 <= host <= 5, f"the estimates are seconds of about this host's speed (measured / estimated {host:.2f})")
for kind in ("benchmark", "leakage", "probe"):
    e, c, _ = measured[f"{kind}-medium"]
    check(c / 3 <= e * host <= 3 * c,
          f"{kind}-medium: the estimate {e:.3f} s at this host's speed ({e * host:.3f} s) is within 3x of "
          f"the measured {c:.3f} s")
    (es, cs, _), (em, cm, _) = measured[f"{kind}-small"], measured[f"{kind}-medium"]
    check(em / es >= (cm / cs) / 3 and em / es <= (cm / cs) * 3,
          f"{kind}: medium / small estimated {em / es:.2f}x, measured {cm / cs:.2f}x (CPU)")

# Odd layouts that validate still get an estimate (never the run's failure, never nan).
with h5py.File(os.path.join(d, "bench_acc.h5"), "w") as f:
    g = f.create_group("bench")
    g.create_dataset("model_names", data=["a", "b"], dtype=h5py.string_dtype("utf-8"))
    g.create_dataset("subset_names", data=["x", "y"], dtype=h5py.string_dtype("utf-8"))
    g["subset_accuracy"] = np.array([[0.5, 0.7], [0.6, 0.9]])
with h5py.File(os.path.join(d, "leak_rank_only.h5"), "w") as f:
    src = h5py.File(os.path.join(d, "leak_small.h5"), "r")
    for k in src["leak"]:
        if isinstance(src["leak"][k], h5py.Dataset):
            v = src["leak"][k][...]
            f[f"leak/{k}"] = v if k in ("model_names", "series_names", "variant_names", "series_fictional") else v[:0]
    src.copy(src["leak/rank"], f, "leak/rank")
    src.close()
probe_input("probe_f16.h5", 2000, 64, 3, n_inf=100, models=2, dtype="float16")
odd = [
    {"name": "bench-acc", "kind": "benchmark", "input": "bench_acc.h5", "scheme": {"sections": {"s": {"x": 1, "y": 1}}}},
    dict(LEAK, name="leak-rank-only", input="leak_rank_only.h5", family=[]),
    {"name": "probe-f16", "kind": "probe", "input": "probe_f16.h5", "models": ["rm0", "rm1"], "tasks": {"a": three},
     "kmeans": {"distance": "mahalanobis"}},
]
jp = write_job(os.path.join(d, "odd.json"), odd, output_dir="out_odd")
code, out, err = run(["run", jp, "--plan"])
ro = plan_rows(out)
check(code == 0 and "nan" not in out and "inf" not in out.split("estimated time")[-1],
      f"odd layouts: --plan succeeds ({code}: {out[-500:]} {err[-300:]})")
for j in odd:
    r = ro.get(j["name"])
    check(r is not None and 0 < r[2] < 60 and r[3] >= 1, f"{j['name']}: a finite estimate ({r})")
code, out, err = run(["run", jp])
check(code == 0, f"odd layouts: the jobs run ({code}: {err[-400:]})")

done()
