#!/bin/bash
# One command from a fresh Debian machine to a report: installs what is missing, builds, makes the
# SYNTHETIC demo inputs, and runs jobs/demo.json on 2 MPI ranks. Reports land in out/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
bash scripts/make_demo_data.sh
./build/rmdiag import cm-csv jobs/data/demo_pairs.csv -o jobs/data/demo_pairs.h5
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
mpiexec -n 2 ./build/rmdiag run jobs/demo.json --force
echo
echo "demo report (synthetic data): out/demo/demo-cm.json"
sed -n '/"result"/,/"cm_negative_fraction"/p' out/demo/demo-cm.json | head -40
