#!/bin/bash
# One command from a fresh Debian machine to the whole test suite: installs what is missing
# (including the test oracles' numpy/h5py and a single-host Slurm), builds, runs ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
bash scripts/build.sh -DRMDIAG_WERROR=ON
cd build
ctest --output-on-failure --timeout 900 -j "${RMDIAG_TEST_JOBS:-2}"
