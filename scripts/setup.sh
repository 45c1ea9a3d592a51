#!/bin/bash
# Installs what rmdiag needs to build (and, with --tests, to run its tests), and nothing when
# everything is already there. On Debian/Ubuntu as root it uses apt; elsewhere it prints what to
# install (package names, or the modules to load on a cluster).
#   scripts/setup.sh            build and run: MPI, parallel HDF5 and its filter plugins, cJSON,
#                               OpenBLAS, libcsv, CMake
#   scripts/setup.sh --tests    also python3-numpy/h5py (test oracles), Slurm + munge (batch test) and
#                               chromium (the HTML report's browser test)
set -euo pipefail

# HDF5 filter plugins for inputs compressed with h5py's lzf or hdf5plugin's filters: LZF, LZ4 and
# BZip2, Blosc, Bitshuffle (Debian builds LZ4, BZip2 and Blosc for serial HDF5 only; rmdiag loads
# them into its parallel HDF5 all the same, see docs/reference.md, 'HDF5 inputs')
PLUGIN_PKGS="hdf5-plugin-lzf hdf5-filter-plugin hdf5-filter-plugin-blosc-serial bitshuffle"
BUILD_PKGS="openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools libcjson-dev libopenblas-dev
  libcsv-dev libutf8proc-dev libpcre2-dev pkg-config cmake make gcc g++ $PLUGIN_PKGS"
TEST_PKGS="python3-numpy python3-h5py slurmctld slurmd slurm-client munge chromium"
want="$BUILD_PKGS"
[ "${1:-}" = "--tests" ] && want="$want $TEST_PKGS"

if command -v dpkg-query >/dev/null 2>&1; then
  missing=""
  for p in $want; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
  done
  if [ -z "$missing" ]; then
    echo "setup: every package is installed"
    exit 0
  fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
    echo "setup: done"
    exit 0
  fi
  echo "setup: missing packages:$missing"
  echo "       install them with: sudo apt-get install --no-install-recommends$missing"
  exit 1
fi

cat <<MSG
setup: not a Debian-family system; install these yourself (versions tested: Open MPI 4.1, HDF5 1.10
parallel, cJSON 1.7, OpenBLAS 0.3, libcsv 3, CMake 3.25, gcc 12; CUDA 12+ optional):
  - an MPI (Open MPI or MPICH) and an HDF5 built with it (parallel), e.g. on a cluster:
        module load cmake gcc openmpi hdf5/parallel openblas cuda
  - to read inputs compressed with lzf, LZ4, Blosc or Bitshuffle: their HDF5 filter plugins, with
    HDF5_PLUGIN_PATH naming their folder
  - cJSON, libcsv, utf8proc, pcre2 (Spack: spack install cjson libcsv utf8proc pcre2)
  - for the tests: Python 3 with numpy and h5py; Slurm + munge for the batch test (root only); Chromium
    for the HTML report's browser test
Then: cmake -S . -B build && cmake --build build -j
MSG
for tool in cmake mpicc mpiexec; do
  command -v "$tool" >/dev/null 2>&1 || { echo "setup: $tool not found"; exit 1; }
done
