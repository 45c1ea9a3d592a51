"""`rmdiag init KIND INPUT.h5 [-o JOB.json]` (docs/reference.md, 'init'): the job file it writes validates
as written for every demo input and for inputs made by every importer, with the options read from the
input's layout checked against what the input holds (read here with h5py); the file is refused when
it exists (without --force), when its folder is missing, and nothing is written when the job would not
validate."""
import json
import os
import shutil
import subprocess

from rdtest import *

d = scratch("init")
jobs = os.path.join(d, "jobs")
os.makedirs(jobs)


def init(args, **kw):
    return run(["init"] + args, **kw)


def init_ok(kind, inp, name, extra=()):
    """init -o jobs/NAME.json, then validate it; returns the job (or None)."""
    out = os.path.join(jobs, name + ".json")
    code, _, err = init([kind, inp, "-o", out] + list(extra))
    check(code == 0 and os.path.isfile(out), f"init {kind} {os.path.basename(inp)}: exit {code} ({err.strip()[-600:]})")
    if code:
        return None
    vcode, vout, verr = run(["validate", out])
    check(vcode == 0 and "1 job valid" in vout, f"{name}: the written job validates: {vcode} {vout} {verr}")
    with open(out) as f:
        doc = json.load(f)
    check(doc["output_dir"] == "out" and len(doc["jobs"]) == 1, f"{name}: one job, output_dir out: {doc}")
    job = doc["jobs"][0]
    check(job["kind"] == kind and job["name"] == name, f"{name}: name and kind: {job}")
    # the input is named relative to the job file's folder
    check(os.path.realpath(os.path.join(jobs, job["input"])) == os.path.realpath(inp),
          f"{name}: input {job['input']} resolves to {inp}")
    return job


# ---- the demo inputs, made by the demo scripts (with rmdiag's importers) in a scratch copy ----------
demo = os.path.join(d, "demo")
os.makedirs(os.path.join(demo, "scripts"))
for s in ("make_demo_data.sh", "make_demo_benchmark.sh", "make_demo_leakage.sh", "make_demo_probe.sh"):
    shutil.copy(os.path.join(REPO, "scripts", s), os.path.join(demo, "scripts"))
for s in ("make_demo_data.sh", "make_demo_benchmark.sh", "make_demo_leakage.sh", "make_demo_probe.sh"):
    p = subprocess.run(["bash", os.path.join(demo, "scripts", s)], capture_output=True, text=True,
                       env=dict(os.environ, RMDIAG=RMDIAG, DEMO_BENCHMARK_DIR=os.path.join(demo, "bench")))
    check(p.returncode == 0, f"{s}: exit {p.returncode} ({p.stderr[-300:]})")
data = os.path.join(demo, "jobs", "data")
pairs = os.path.join(data, "demo_pairs.h5")
code, _, err = run(["import", "cm-csv", os.path.join(data, "demo_pairs.csv"), "-o", pairs])
check(code == 0, f"import cm-csv: {err}")

# cm: one stratum per covariate: the length difference (hundreds of values) in 4 quantile bins, the
# source label (4 integer values) categorical
job = init_ok("cm", pairs, "demo_pairs-cm")
if job:
    with h5py.File(pairs) as f:
        n_len = len(np.unique(f["cm/covariates/length_diff"][...]))
        n_src = len(np.unique(f["cm/covariates/source"][...]))
    check(n_len > 50 and n_src == 4, f"the demo covariates: {n_len} and {n_src} distinct values")
    check(job["strata"] == [{"covariate": "length_diff", "bins": 4}, {"covariate": "source", "categorical": True}],
          f"cm strata from the covariates: {job.get('strata')}")
    check(job["bootstrap"] == 1000, "cm bootstrap")
    # the written job runs as it is
    code, out, err = run(["run", os.path.join(jobs, "demo_pairs-cm.json"), "--quiet"])
    rep = os.path.join(jobs, "out", "demo_pairs-cm.json")
    check(code == 0 and os.path.isfile(rep), f"the cm job runs: {code} {err}")
    if code == 0:
        r = load_report(rep)["result"]
        check(sorted({s["covariate"] for s in r["strata"]}) == ["length_diff", "source"]
              and sum(s["covariate"] == "source" for s in r["strata"]) == 4, "the report has the 4 + 4 strata")

# a string covariate (category names) becomes a categorical stratum; one with only empty names none
import shutil
named = os.path.join(d, "named_pairs.h5")
shutil.copy(pairs, named)
with h5py.File(named, "a") as f:
    P = f["cm/reward_chosen"].shape[0]
    f["cm/covariates"].create_dataset("origin", data=[["web", "book", ""][i % 3] for i in range(P)],
                                      dtype=h5py.string_dtype("utf-8"))
    f["cm/covariates"].create_dataset("blank", data=[""] * P, dtype=h5py.string_dtype("utf-8"))
code, _, err = init(["cm", named, "-o", os.path.join(jobs, "named-cm.json")])
check(code == 0 and 'strata: "origin" categorical (2 distinct names)' in err and
      'covariate "blank" has no non-empty name; no stratum suggested' in err, f"init on string covariates: {code} {err}")
if code == 0:
    with open(os.path.join(jobs, "named-cm.json")) as f:
        strata = json.load(f)["jobs"][0]["strata"]
    check({"covariate": "origin", "categorical": True} in strata and all(e["covariate"] != "blank" for e in strata),
          f"string covariate strata: {strata}")

# benchmark: the scheme from the importer's source attribute
for fname, scheme in (("demo_rb1.h5", "rewardbench-v1"), ("demo_rb2.h5", "rewardbench-v2")):
    inp = os.path.join(demo, "bench", fname)
    with h5py.File(inp) as f:
        src = f["bench"].attrs["source"]
        src = src.decode() if isinstance(src, bytes) else src
        m = f["bench/model_names"].shape[0]
    check(src == {"rewardbench-v1": "rewardbench", "rewardbench-v2": "rewardbench2"}[scheme], f"{fname}: source {src}")
    job = init_ok("benchmark", inp, fname[:-3] + "-benchmark")
    if job:
        check(job["scheme"] == scheme and job["compare"] == "all" and m == 3 and "allow_missing" not in job,
              f"{fname}: scheme {scheme} from source, compare all of {m} models: {job}")

# leakage: the family is the real series with truth rows and parsed replies
leak = os.path.join(data, "demo_leak.h5")
job = init_ok("leakage", leak, "demo_leak-leakage")
if job:
    with h5py.File(leak) as f:
        g = f["leak"]
        names = list(g["series_names"].asstr()[...])
        fict = g["series_fictional"][...] if "series_fictional" in g else np.zeros(len(names))
        with_truth = set(g["truth_series"][...].tolist())
        parsed = set(g["series"][...][g["status"][...] == 0].tolist())
    want = [n for i, n in enumerate(names) if not fict[i] and i in with_truth and i in parsed]
    check(job.get("family") == want and want == ["Alpha", "Beta", "Gamma"], f"leakage family {job.get('family')} vs {want}")

# probe: the tasks from the groups, one class per label with training rows
probe = os.path.join(data, "demo_probe.h5")
job = init_ok("probe", probe, "demo_probe-probe")
if job:
    with h5py.File(probe) as f:
        want = {}
        for t in f["probe"]:
            if t == "infer":
                continue
            lab, spl = f[f"probe/{t}/label"][...], f[f"probe/{t}/split"][...]
            want[t] = {"classes": [[int(v)] for v in np.unique(lab[(spl == 0) & (lab >= 0)])]}
    check(job["tasks"] == want and "models" not in job, f"probe tasks {job['tasks']} vs {want}")

# without -o: the job on stdout with the input's absolute path; valid wherever it is saved
code, out, err = init(["probe", probe])
check(code == 0 and json.loads(out)["jobs"][0]["input"] == os.path.realpath(probe),
      f"init without -o prints the job with an absolute input path: {code} {err}")
elsewhere = os.path.join(d, "elsewhere")
os.makedirs(elsewhere)
with open(os.path.join(elsewhere, "p.json"), "w") as f:
    f.write(out)
code, _, err = run(["validate", os.path.join(elsewhere, "p.json")])
check(code == 0, f"the printed job validates from another folder: {err}")

# ---- inputs of the other importers ----------------------------------------------------------------
# features of two reward models: "models" from the per-model groups, tasks every model has
feat = os.path.join(d, "feat")
os.makedirs(feat)
rng = np.random.default_rng(5)
args = ["import", "features"]
for rm in ("rmA", "rmB"):
    for t in ("harm", "help"):
        x = rng.standard_normal((60, 8)).astype(np.float32)
        np.save(os.path.join(feat, f"{rm}_{t}.npy"), x)
        with open(os.path.join(feat, f"{rm}_{t}.csv"), "w") as f:
            f.write("label,split\n")
            for i in range(60):
                f.write(f"{i % 3 if t == 'harm' else 7 * (i % 2)},{('train', 'validation', 'test')[i % 3 if i > 5 else 0]}\n")
        args += ["--model", rm, "--task", t, os.path.join(feat, f"{rm}_{t}.npy"), os.path.join(feat, f"{rm}_{t}.csv")]
rms = os.path.join(feat, "rms.h5")
code, _, err = run(args + ["-o", rms])
check(code == 0, f"import features of two models: {err}")
job = init_ok("probe", rms, "rms-probe")
if job:
    check(job.get("models") == ["rmA", "rmB"], f"models from the per-model groups: {job.get('models')}")
    check(job["tasks"] == {"harm": {"classes": [[0], [1], [2]]}, "help": {"classes": [[0], [7]]}},
          f"tasks of both models: {job['tasks']}")

# RewardBench 2 and NumLeak files of the shared data folder, when present
rbd = os.path.join(SHARED, "data", "rewardbench")
if os.path.isdir(rbd):
    rb2 = os.path.join(d, "rb2.h5")
    files = sorted(os.path.join(rbd, f) for f in os.listdir(rbd) if f.startswith("rb2_"))
    code, _, err = run(["import", "rewardbench2"] + files + ["-o", rb2])
    check(code == 0, f"import rewardbench2: {err}")
    job = init_ok("benchmark", rb2, "rb2-benchmark")
    check(job is not None and job["scheme"] == "rewardbench-v2", f"real RewardBench 2: v2 scheme: {job}")
    rb1 = os.path.join(d, "rb1acc.h5")
    files = sorted(os.path.join(rbd, f) for f in os.listdir(rbd) if f.startswith("rb1_"))
    code, _, err = run(["import", "rewardbench"] + files + ["-o", rb1])
    check(code == 0, f"import rewardbench (accuracies): {err}")
    job = init_ok("benchmark", rb1, "rb1acc-benchmark")
    check(job is not None and job["scheme"] == "rewardbench-v1" and "bootstrap" not in job,
          f"real RewardBench v1 accuracies: v1 scheme, no bootstrap: {job}")
else:
    print(f"note: {rbd} absent; the real RewardBench imports are not tried")
nld = os.path.join(SHARED, "data", "numleak")
if os.path.isdir(nld):
    from leakdata import panel_args
    for name, fam in (("camera_ready_multiseed.jsonl", ["Mkt-RF", "SMB", "Mom"]), ("transmission.jsonl", None)):
        out = os.path.join(d, name.replace(".jsonl", ".h5"))
        code, _, err = run(["import", "numleak"] + panel_args(name) + ["-o", out])
        check(code == 0, f"import numleak {name}: {err[-300:]}")
        job = init_ok("leakage", out, name.replace(".jsonl", "") + "-leakage")
        check(job is not None and job.get("family") == fam, f"{name}: family {job and job.get('family')} vs {fam}")
else:
    print(f"note: {nld} absent; the real NumLeak imports are not tried")

# ---- crafted inputs ---------------------------------------------------------------------------------


def bench_input(path, subsets, source=None, n_models=2):
    """A per-item benchmark input: one item per subset, two completions each."""
    with h5py.File(path, "w") as f:
        g = f.create_group("bench")
        s = h5py.string_dtype("utf-8")
        g.create_dataset("model_names", data=[f"m{i}" for i in range(n_models)], dtype=s)
        g.create_dataset("subset_names", data=subsets, dtype=s)
        g["item_subset"] = np.arange(len(subsets), dtype=np.int32)
        g["item_offset"] = np.arange(0, 2 * len(subsets) + 1, 2, dtype=np.int64)
        g["item_n_correct"] = np.ones(len(subsets), dtype=np.int32)
        g["scores"] = rng.standard_normal((n_models, 2 * len(subsets)))
        if source:
            g.attrs["source"] = source
    return path


# no source attribute: the scheme whose subsets the input has; a subset of no scheme: a custom scheme
v2 = ["Factuality", "Precise IF", "Math", "Safety", "Focus"]
job = init_ok("benchmark", bench_input(os.path.join(d, "nosrc_v2.h5"), v2), "nosrc_v2-benchmark")
check(job is not None and job["scheme"] == "rewardbench-v2" and job.get("allow_missing") is True,
      f"v2 subsets without a source (Ties absent): v2 with allow_missing: {job}")
job = init_ok("benchmark", bench_input(os.path.join(d, "custom.h5"), ["alpha", "beta"]), "custom-benchmark")
check(job is not None and job["scheme"] == {"sections": {"alpha": {"alpha": 1}, "beta": {"beta": 1}},
                                             "item_rule": "strict"}, f"unknown subsets: a custom scheme: {job}")
# a source that disagrees with the subsets: the custom scheme, with a note saying so
code, out, err = init(["benchmark", bench_input(os.path.join(d, "mixed.h5"), ["Math", "hep-go"], "rewardbench2")])
check(code == 0 and '"hep-go" is not one of rewardbench-v2' in err and json.loads(out)["jobs"][0]["scheme"]["sections"],
      f"source rewardbench2 with a v1 subset: custom scheme and a note: {code} {err}")

# refusals: an existing file without --force; a missing folder; the input itself; nothing written
target = os.path.join(jobs, "demo_pairs-cm.json")
before = open(target).read()
code, _, err = init(["cm", pairs, "-o", target])
check(code == 2 and "exists; add --force to replace it" in err and open(target).read() == before,
      f"an existing job file is not replaced without --force: {code} {err}")
code, _, err = init(["cm", pairs, "-o", target, "--force", "--name", "renamed"])
check(code == 0 and json.load(open(target))["jobs"][0]["name"] == "renamed", f"--force replaces it: {code} {err}")
code, _, err = init(["cm", pairs, "-o", os.path.join(d, "nowhere", "x.json")])
check(code == 2 and "does not exist" in err and not os.path.exists(os.path.join(d, "nowhere")), f"missing folder: {err}")
code, _, err = init(["cm", pairs, "-o", pairs, "--force"])
check(code == 2 and "is the input file itself" in err, f"-o onto the input: {code} {err}")
code, _, err = init(["cm", probe])
check(code == 2 and "has no group /cm" in err and "rmdiag init probe" in err, f"wrong kind names the right one: {err}")
code, _, err = init(["nope", probe])
check(code == 2 and 'unknown kind "nope"' in err, f"unknown kind: {err}")
code, _, err = init(["cm"])
check(code == 2 and "expected KIND INPUT.h5" in err, f"missing input: {err}")
code, out, _ = init(["--help"])
check(code == 0 and out.startswith("usage: rmdiag init KIND INPUT.h5"), "init --help")

# an input whose values would fail validation: init says so and writes nothing (no temporary left)
bad = write_cm(os.path.join(d, "bad.h5"), [[1.0, 2.0], [np.nan, 0.5]], [[0.0, 0.1], [0.2, 0.3]],
               [[1, 0], [0, 1]], [1, 2])
badjobs = os.path.join(d, "badjobs")
os.makedirs(badjobs)
code, _, err = init(["cm", bad, "-o", os.path.join(badjobs, "bad.json")])
check(code == 2 and "does not validate, so nothing was written" in err and "reward_chosen[1, 0] = nan" in err
      and outputs_in(badjobs) == [],
      f"a bad input: exit 2, the validation message, nothing written: {code} {err} {outputs_in(badjobs)}")

# a probe task that cannot run as found (no test row) is left out with a note
with h5py.File(os.path.join(d, "probe_notest.h5"), "w") as f:
    for t, splits in (("ok", [0, 0, 1, 2] * 5), ("notest", [0, 0, 1, 1] * 5)):
        f[f"probe/{t}/X"] = rng.standard_normal((20, 4)).astype(np.float32)
        f[f"probe/{t}/label"] = np.array([0, 1] * 10, dtype=np.int64)
        f[f"probe/{t}/split"] = np.array(splits, dtype=np.uint8)
code, out, err = init(["probe", os.path.join(d, "probe_notest.h5")])
check(code == 0 and list(json.loads(out)["jobs"][0]["tasks"]) == ["ok"] and 'task "notest" left out: no test rows' in err,
      f"a task without test rows is left out with a note: {code} {err}")

done()
