#!/bin/bash
# Configures and builds rmdiag into build/ (CUDA module too when nvcc is found).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j "$(nproc)"
