"""The command line: help and version, usage errors (exit 2), validate (checks everything,
writes nothing), and the backend choice on a machine without a GPU."""
from rdtest import *

d = scratch("cli")
code, out, err = run(["--help"])
check(code == 0 and "rmdiag run JOB.json" in out and "rmdiag validate" in out and "import" in out, "--help")
code, out, err = run(["--version"])
check(code == 0 and out.startswith("rmdiag "), "--version")
for args, needle in ((["frobnicate"], 'unknown command "frobnicate"'), ([], "missing command"),
                     (["run"], "missing JOB.json"), (["run", "a.json", "b.json"], 'unexpected argument "b.json"'),
                     (["run", "a.json", "--fast"], "unknown option --fast"),
                     (["run", "a.json", "--backend", "tpu"], "--backend must be auto, cpu or cuda"),
                     (["run", "a.json", "--backend"], "option --backend needs a value"),
                     (["run", os.path.join(d, "none.json")], "cannot read the job file")):
    code, out, err = run(args)
    check(code == 2 and needle in err, f"{args}: exit {code}, message {err.strip()!r} should contain {needle!r}")

rng = np.random.default_rng(0)
users = rng.integers(0, 10, 100)
write_cm(os.path.join(d, "in.h5"), rng.normal(size=(100, 3)), rng.normal(size=(100, 3)),
         (rng.random((10, 3)) < 0.5)[users].astype(np.uint8), users)
jp = write_job(os.path.join(d, "job.json"), [{"name": "v", "kind": "cm", "input": "in.h5"}], output_dir="vout")
code, out, err = run(["validate", jp], ranks=2)
check(code == 0 and "1 job valid" in out, f"validate ok: {out} {err}")
check(not os.path.exists(os.path.join(d, "vout")), "validate writes nothing")
jpb = write_job(os.path.join(d, "bad.json"), [{"name": "v", "kind": "cm", "input": "in.h5", "group": "/nope"}],
                output_dir="vout")
code, out, err = run(["validate", jpb])
check(code == 2 and "group /nope is missing" in err, f"validate finds a missing group: {err}")

code, out, err = run(["run", jp, "--backend", "auto"])
rep = load_report(os.path.join(d, "vout", "v.json"))
check(code == 0 and rep["rmdiag"]["backend"] in ("cpu", "cuda"), "auto picks a backend")
gpu = rep["rmdiag"]["backend"] == "cuda"
code, out, err = run(["run", jp, "--backend", "cuda"])
if gpu:
    check(code == 0, "explicit cuda on a GPU machine")
else:
    _, version, _ = run(["--version"])
    built = "CUDA backend built" in version
    # built with CUDA: the environment lacks a GPU (exit 1); built without: a usage error (exit 2)
    check((code, "no usable GPU" in err) == (1, True) if built else (code, "built without CUDA" in err) == (2, True),
          f"explicit --backend cuda without a GPU fails clearly: {code} {err}")
    print("no GPU here: the auto backend fell back to the CPU")

# An import never writes onto one of its inputs (plain or NAME=PATH), into a missing folder or onto a folder:
# exit 2 naming -o, and the input is left as it was.
src = os.path.join(d, "rb.json")
with open(src, "w") as f:
    f.write('{"id": [1], "subset": ["alpacaeval-easy"], "scores_chosen": [1], "scores_rejected": [0], "model": "A"}')
before = open(src).read()
code, _, err = run(["import", "rewardbench", src, "-o", src])
check(code == 2 and "is also one of the files this import read" in err and open(src).read() == before,
      f"import onto its input: {code} {err}")
# truth files named as NAME=PATH or NAME=PATH,COLUMN are never replaced either
tcsv, pj = os.path.join(d, "t.csv"), os.path.join(d, "one.jsonl")
with open(tcsv, "w") as f:
    f.write("month,value\n2020-01,1.5\n")
with open(pj, "w") as f:
    f.write('{"model_name": "m", "factor": "S", "month": "2020-01", "response": "1%"}\n')
for spec in (f"S={tcsv}", f"S={tcsv},value"):
    code, _, err = run(["import", "numleak", "--truth", spec, "--panel", pj, "-o", tcsv])
    check(code == 2 and "is also one of the files this import read" in err and open(tcsv).read().startswith("month,value"),
          f"import onto a truth file ({spec}): {code} {err}")
code, _, err = run(["import", "rewardbench", src, "-o", os.path.join(d, "nowhere", "x.h5")])
check(code == 2 and "does not exist" in err and not os.path.exists(os.path.join(d, "nowhere")), f"missing folder: {code} {err}")
os.makedirs(os.path.join(d, "afolder"), exist_ok=True)
code, _, err = run(["import", "rewardbench", src, "-o", os.path.join(d, "afolder")])
check(code == 2 and "is a folder" in err and os.listdir(os.path.join(d, "afolder")) == [], f"-o a folder: {code} {err}")
code, _, err = run(["import", "rewardbench", src, "-o", os.path.join(d, "rb.h5")])
check(code == 0 and os.path.exists(os.path.join(d, "rb.h5")), f"a plain import still works: {err}")

# usage mistakes are exit 2 with a message that says what is wrong
for extra in (["--version", "x"], ["--help", "x"]):
    code, _, err = run(extra)
    check(code == 2 and "takes no arguments" in err, f"{extra}: {code} {err}")
code, _, err = run(["validate", d])
check(code == 2 and "is a folder, expected a job file" in err, f"a folder as the job file: {code} {err}")
big = write_job(os.path.join(d, "bigseed.json"), [{"name": "a", "kind": "cm", "input": "x.h5"}])
with open(big) as f:
    txt = f.read().replace('"seed": 0', '"seed": 1e999')
with open(big, "w") as f:
    f.write(txt)
code, _, err = run(["validate", big])
check(code == 2 and '"seed" must be an integer, got a number too large for a double' in err, f"seed 1e999: {code} {err}")
with open(os.path.join(d, "afile"), "w") as f:
    f.write("x")
write_cm(os.path.join(d, "tiny.h5"), [[1.0]], [[0.0]], [[1]], [0])
jb = write_job(os.path.join(d, "below.json"), [{"name": "a", "kind": "cm", "input": "tiny.h5", "bootstrap": 0}],
               output_dir="afile/sub")
code, _, err = run(["run", jb])
check(code == 2 and "cannot create output folder" in err and "Not a directory" in err, f"output_dir below a file: {code} {err}")
# every envelope key is present: description null when the job file has none
jn = write_job(os.path.join(d, "nodesc.json"), [{"name": "a", "kind": "cm", "input": "tiny.h5", "bootstrap": 0}],
               output_dir="out_nodesc")
code, _, err = run(["run", jn])
env = load_report(os.path.join(d, "out_nodesc", "a.json"))["rmdiag"] if code == 0 else {}
check(code == 0 and "description" in env and env["description"] is None, f"description null when not given ({err})")

# help: every option of a kind from its option table, a format's usage, a command's usage
code, out, err = run(["help", "cm"])
check(code == 0 and "bootstrap" in out and "0..10000000" in out and "strata" in out and "'cm options'" in out,
      f"help cm lists the options with type, default and range: {code} {out[:300]} {err}")
for kind in ("benchmark", "leakage", "probe"):
    code, out, err = run(["help", kind])
    check(code == 0 and "bootstrap" in out or kind == "probe" and code == 0, f"help {kind}: {code} {err}")
code, out, err = run(["help", "cm-csv"])
check(code == 0 and "INPUT.csv" in out, f"help cm-csv shows the importer's usage: {code} {err}")
code, out, err = run(["help", "nope"])
check(code == 2 and 'unknown topic "nope"' in err and "cm benchmark leakage probe" in err, f"help nope: {code} {err}")
for cmd in ("run", "validate"):
    code, out, err = run([cmd, "--help"])
    check(code == 0 and f"usage: rmdiag {cmd} JOB.json" in out, f"{cmd} --help: {code} {out[:200]} {err}")
# a near-miss key says what was probably meant
jm = write_job(os.path.join(d, "miss.json"), [{"name": "a", "kind": "cm", "input": "tiny.h5", "bootstap": 10}],
               output_dir="out_miss")
code, _, err = run(["validate", jm])
check(code == 2 and 'unknown key "bootstap"' in err and 'did you mean "bootstrap"?' in err, f"near miss: {code} {err}")

# Many plain processes started while others end (as a shell loop or a test runner does): none
# may fail at MPI start-up (isolated singletons once shared one session directory per host).
import subprocess
import time
procs = []
for i in range(120):
    procs.append(subprocess.Popen([RMDIAG, "--version"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    time.sleep(0.01)
failed = [p.stderr.read().decode()[:200] for p in procs if p.wait() != 0]
check(not failed, f"{len(failed)} of 120 overlapping plain processes failed to start: {failed[:1]}")
done()
