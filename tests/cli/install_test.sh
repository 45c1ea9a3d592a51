#!/bin/bash
# `cmake --install` into a fresh prefix, then the installed binary runs a job from another folder
# and finds its CUDA module where the install put it (when the build has one).
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -u
build=${1:?usage: install_test.sh BUILD_DIR SOURCE_DIR}
src=${2:?usage: install_test.sh BUILD_DIR SOURCE_DIR}
work=$(mktemp -d "${RMDIAG_TEST_TMP:-/tmp}/install.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail=0
check() { if eval "$1"; then echo "ok: $2"; else echo "FAIL: $2"; fail=1; fi; }
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1
check '[ $? -eq 0 ]' "cmake --install into a fresh prefix ($(tail -1 "$work/install.log"))"
bin="$work/prefix/bin/rmdiag"
check '[ -x "$bin" ]' "the binary is installed in bin/"
check '[ -f "$work/prefix/share/rmdiag/jobs/rmdiag.sbatch" ]' "the batch script is installed"
check '[ -f "$work/prefix/share/doc/rmdiag/reference.md" ]' "the reference is installed"
# a small cm job, run from another folder with the job file given by a relative path
mkdir -p "$work/elsewhere" "$work/proj/jobs"
printf 'run,pair,user,reward_chosen,reward_rejected,in_train\n0,a,u1,1.0,0.0,1\n1,a,u1,0.5,0.2,0\n0,b,u2,0.3,0.1,0\n1,b,u2,2.0,0.0,1\n' \
  >"$work/proj/jobs/p.csv"
(cd "$work/proj" && "$bin" import cm-csv jobs/p.csv -o jobs/p.h5 >/dev/null 2>&1)
printf '{"output_dir": "../out", "jobs": [{"name": "tiny", "kind": "cm", "input": "p.h5", "bootstrap": 10}]}\n' \
  >"$work/proj/jobs/job.json"
(cd "$work/proj" && "$bin" run jobs/job.json --quiet >"$work/run.log" 2>&1)
check '[ $? -eq 0 ] && [ -f "$work/proj/out/tiny.json" ] && [ -f "$work/proj/out/tiny.h5" ]' \
  "the installed binary runs jobs/job.json from the project folder ($(tail -1 "$work/run.log"))"
(cd "$work/elsewhere" && "$bin" validate ../proj/jobs/job.json >/dev/null 2>&1)
check '[ $? -eq 0 ]' "and validates it from another folder"
if [ -f "$work/prefix/lib/rmdiag/librmdiag_cuda.so" ] || ls "$work"/prefix/lib*/rmdiag/librmdiag_cuda.so >/dev/null 2>&1; then
  (cd "$work/elsewhere" && env -u RMDIAG_CUDA_MODULE "$bin" run ../proj/jobs/job.json --force --backend cuda >"$work/cuda.log" 2>&1)
  check '! grep -q "was not found beside" "$work/cuda.log"' \
    "the installed binary finds its CUDA module ($(grep -o 'error: .*' "$work/cuda.log" | head -c 160))"
else
  echo "ok: no CUDA module in this build (nothing to find)"
fi
exit $fail
