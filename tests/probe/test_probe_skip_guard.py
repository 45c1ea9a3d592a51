"""The probe tests that use the numpy oracle (tests/lib/probe_oracle.py) skip (exit 77) under a Python
without numpy, as every other test does, instead of failing on the import: run here with a `numpy`
module that cannot be imported placed first on the path. Uses no numpy itself."""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
base = os.environ.get("RMDIAG_TEST_TMP") or tempfile.gettempdir()
fake = os.path.join(base, "probe_skip_guard")
os.makedirs(fake, exist_ok=True)
with open(os.path.join(fake, "numpy.py"), "w") as f:
    f.write('raise ImportError("numpy is hidden by test_probe_skip_guard")\n')
env = dict(os.environ, PYTHONPATH=fake + os.pathsep + os.environ.get("PYTHONPATH", ""))
failures = 0
for name in ("probe_oracle.py", "test_probe_hand.py", "test_probe_kmeans.py", "test_probe_lbfgs.py",
             "test_probe_oracle.py"):
    path = os.path.join(here, "..", "lib", name) if name == "probe_oracle.py" else os.path.join(here, name)
    p = subprocess.run([sys.executable, path], cwd=here, env=env, capture_output=True, text=True,
                       timeout=60)
    ok = p.returncode == 77 and "SKIP" in p.stdout
    print(f"{'ok' if ok else 'FAIL'}: {name} without numpy: exit {p.returncode}"
          + ("" if ok else f" ({(p.stdout + p.stderr).strip()[-300:]})"))
    failures += not ok
print("all checks passed" if not failures else f"{failures} checks failed")
sys.exit(1 if failures else 0)
