#!/bin/bash
# One command from a fresh Debian machine to the whole test suite: installs what is missing
# (including the test oracles' numpy/h5py and a single-host Slurm), builds, runs ctest.
#   scripts/test.sh         the gcc build and every test
#   scripts/test.sh --all   (and under CI=true) then also scripts/test_more.sh: the clang build
#                           (unit tests, a few end-to-end tests, outputs byte-identical to gcc's),
#                           the AddressSanitizer + UBSan build with a subset, a short fuzz run
set -euo pipefail
cd "$(dirname "$0")/.."
all=0
if [ "${1:-}" = "--all" ] || [ "${CI:-}" = true ]; then all=1; fi
t0=$SECONDS
bash scripts/setup.sh --tests
bash scripts/build.sh -DRMDIAG_WERROR=ON
(cd build && ctest --output-on-failure --timeout 900 -j "${RMDIAG_TEST_JOBS:-2}")
echo "test: gcc build and suite in $((SECONDS - t0)) s"
if [ "$all" = 1 ]; then
  bash scripts/test_more.sh all
  echo "test: everything in $((SECONDS - t0)) s"
fi
