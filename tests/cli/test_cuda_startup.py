"""CUDA start-up as a user on a GPU node sees it, without a GPU: a private mount namespace makes the
node look as if it had an NVIDIA driver (/proc/driver/nvidia/version) while no CUDA driver library
answers. `--backend auto` then says on stderr why the CUDA backend did not start and runs on the CPU
(the same report as --backend cpu); `--backend cuda` fails with the reason; without the driver's
trace `auto` says nothing. `--version` names the CUDA version the module was built with and what
this machine has. Skipped where the CUDA module is not built, where mount namespaces are not
permitted, or where a real GPU answers (the test would not see the fallback)."""
import os
import subprocess
import sys

from rdtest import *

d = scratch("cuda_startup")
code, out, err = run(["--version"])
check(code == 0 and out.startswith("rmdiag "), f"--version: {code} {out} {err}")
if "CUDA backend not built" in out:
    print("SKIP: this build has no CUDA module; --version says so:", out.strip())
    sys.exit(SKIP)
check("CUDA backend built with CUDA " in out and "; this machine: " in out, f"--version names the versions: {out}")
if os.path.exists("/dev/nvidiactl"):
    print("SKIP: this machine has an NVIDIA driver; the fallback is tested where none is")
    sys.exit(SKIP)

fake = os.path.join(d, "driver.sh")
with open(fake, "w") as f:
    f.write('mount -t tmpfs none /proc/driver 2>/dev/null || mount -t tmpfs none /proc/driver/.. 2>/dev/null\n'
            'mkdir -p /proc/driver/nvidia && echo "fake driver for a test" > /proc/driver/nvidia/version && exec "$@"\n')


def run_faked(args):
    p = subprocess.run(["unshare", "-m", "sh", fake, RMDIAG] + args, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


probe = subprocess.run(["unshare", "-m", "sh", fake, "true"], capture_output=True, text=True)
if probe.returncode != 0:
    print(f"SKIP: no private mount namespace here (unshare -m: {probe.stderr.strip()[-200:]})")
    sys.exit(SKIP)

write_cm(os.path.join(d, "pairs.h5"), [[1.0, 0.5], [0.2, 0.9]], [[0.0, 0.1], [0.3, 0.4]], [[1, 0], [0, 1]],
         ["a", "b"])
jobs = [{"name": "c", "kind": "cm", "input": "pairs.h5", "bootstrap": 20}]
job = write_job(os.path.join(d, "job.json"), jobs)
ref_job = write_job(os.path.join(d, "ref.json"), jobs, output_dir="out_ref")

code, out, err = run_faked(["--version"])
check(code == 0 and "this machine: " in out and "no NVIDIA driver" not in out,
      f"--version with a driver present reports the versions found: {out} {err}")

code, out, err = run_faked(["run", job, "--backend", "auto"])
note = [l for l in err.splitlines() if l.startswith("rmdiag: note: --backend auto:")]
check(code == 0 and len(note) == 1, f"auto with a driver but no working CUDA: exit 0 and one note: {code} {err}")
if note:
    check("this node has an NVIDIA driver but the CUDA backend did not start (cudaGetDeviceCount:" in note[0]
          and note[0].endswith("running on the CPU"), f"the note says why: {note[0]}")
code, _, err = run(["run", ref_job, "--backend", "cpu"])
check(code == 0, f"the CPU reference run: {err}")
if code == 0:
    rep, ref = (load_report(os.path.join(d, o, "c.json")) for o in ("out", "out_ref"))
    check(rep["rmdiag"]["backend"] == "cpu", f"the report's backend is the CPU: {rep['rmdiag']['backend']}")
    check(rep["result"] == ref["result"], "the same result as --backend cpu")

code, out, err = run_faked(["run", job, "--backend", "cuda", "--force"])
check(code == 1 and "--backend cuda: no usable GPU: cudaGetDeviceCount:" in err,
      f"--backend cuda fails with the reason: {code} {err}")

# no driver: auto stays silent
code, out, err = run(["run", job, "--backend", "auto", "--force"])
check(code == 0 and "rmdiag: note:" not in err, f"no driver, no note: {code} {err}")
done()
