#!/bin/bash
# One command from a fresh Debian machine to reports: installs what is missing, builds, makes the
# SYNTHETIC demo inputs (with rmdiag's own importers), and runs jobs/demo.json on 2 MPI ranks.
# Reports land in out/demo/ (<job>.json and <job>.h5); each kind prints a summary; the last step writes
# out/demo/report.html, one page with every report's tables and figures (opens offline).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
bash scripts/make_demo_data.sh
./build/rmdiag import cm-csv jobs/data/demo_pairs.csv -o jobs/data/demo_pairs.h5
bash scripts/make_demo_benchmark.sh
bash scripts/make_demo_leakage.sh
bash scripts/make_demo_probe.sh
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
mpiexec -n 2 ./build/rmdiag run jobs/demo.json --force
echo
echo "demo reports (synthetic data):"
ls -1 out/demo/*.json
./build/rmdiag report out/demo -o out/demo/report.html
echo "open $(pwd)/out/demo/report.html in a browser: the tables, figures and warnings of every report"
