#!/bin/bash
# The checks CI runs besides the gcc suite (scripts/test.sh --all runs them after it):
#   scripts/test_more.sh clang   clang build (build-clang/): C unit tests, seed replays, a few
#                                end-to-end tests, and its outputs byte for byte against the gcc
#                                build's (scripts/compare_builds.py --quick; needs build/ from scripts/test.sh)
#   scripts/test_more.sh asan    AddressSanitizer + UBSan build (build-asan/): C tests, seed replays and a
#                                fixed subset of end-to-end tests
#   scripts/test_more.sh fuzz    libFuzzer build (build-fuzz/) and a short run of every harness
#   scripts/test_more.sh all     the three
# Installs clang when it is missing (Debian, as root). RMDIAG_TEST_JOBS sets ctest's parallelism (2).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
J=${RMDIAG_TEST_JOBS:-2}

# The end-to-end tests each build also runs, a fixed subset: the hand-checked tests of every kind
# (clang: and the probe's determinism across instruction sets and rank counts, and an importer).
# The asan subset is smaller: every sanitized rmdiag process spends seconds in its leak check at
# exit here, so the bad-input tests (hundreds of processes each) would take a quarter of an hour;
# their kind of inputs reaches the sanitizers through the fuzz seeds instead (label fuzz, in
# process). test_h5_hostile is in (about two minutes): its corrupt string heaps, files declaring shapes
# they cannot hold and broken links run under the sanitizers, which shows that no code runs on a heap
# HDF5 overwrote.
E2E_CLANG="test_cm_hand|test_bench_hand|test_leakage_hand|test_probe_hand|test_probe_determinism|test_import_cm_csv"
E2E_ASAN="test_cm_hand|test_bench_hand|test_leakage_hand|test_probe_hand|test_probe_kmeans|test_probe_mmap_fallback"
E2E_ASAN="$E2E_ASAN|test_leakage_parse_fuzz|test_h5_hostile"

need_clang() {
  command -v clang >/dev/null 2>&1 && return
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test_more: installing clang"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang >/dev/null; }
  else
    echo "test_more: clang not found (apt-get install clang)"
    exit 1
  fi
}

# What the sanitizer runs need: leak reports that can be matched against the suppressions of Open
# MPI's own leaks (whole stacks: the libraries have no frame pointers), every finding fatal.
sanitizer_env() {
  export LSAN_OPTIONS="suppressions=$ROOT/scripts/sanitize/lsan.supp:print_suppressions=0"
  # verify_asan_link_order=0: test_probe_mmap_fallback preloads a library of its own before libasan
  # allocator_may_return_null: an impossible request (HDF5 sizing a buffer from a corrupt heap) returns
  # NULL as malloc does in a release build (a fuzz seed has one)
  export ASAN_OPTIONS="fast_unwind_on_malloc=0:detect_leaks=1:check_initialization_order=1:verify_asan_link_order=0:allocator_may_return_null=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
}

step_clang() {
  need_clang
  local t0=$SECONDS
  cmake --preset clang -DRMDIAG_WERROR=ON -DRMDIAG_WITH_CUDA=OFF >/dev/null
  cmake --build build-clang -j "$(nproc)"
  echo "test_more: clang build in $((SECONDS - t0)) s"
  (cd build-clang && ctest --output-on-failure --timeout 900 -j "$J" -L "unit|fuzz")
  (cd build-clang && ctest --output-on-failure --timeout 900 -j "$J" -R "^($E2E_CLANG)$")
  if [ -x build/rmdiag ]; then
    python3 scripts/compare_builds.py build/rmdiag build-clang/rmdiag --quick
  else
    echo "test_more: no build/rmdiag (run scripts/test.sh first): gcc/clang comparison skipped"
  fi
  echo "test_more: clang done in $((SECONDS - t0)) s"
}

step_asan() {
  local t0=$SECONDS
  cmake --preset asan -DRMDIAG_WERROR=ON >/dev/null
  cmake --build build-asan -j "$(nproc)"
  echo "test_more: asan build in $((SECONDS - t0)) s"
  sanitizer_env
  (cd build-asan && ctest --output-on-failure --timeout 900 -j "$J" -L "unit|fuzz")
  (cd build-asan && ctest --output-on-failure --timeout 900 -j "$J" -R "^($E2E_ASAN)$")
  echo "test_more: asan done in $((SECONDS - t0)) s"
}

step_fuzz() {
  need_clang
  local t0=$SECONDS
  RMDIAG_BUILD_JOBS=$(nproc) bash scripts/fuzz.sh build
  echo "test_more: fuzz build in $((SECONDS - t0)) s"
  bash scripts/fuzz.sh smoke "${RMDIAG_FUZZ_SMOKE_S:-10}"
  echo "test_more: fuzz done in $((SECONDS - t0)) s"
}

case "${1:-all}" in
  clang) step_clang ;;
  asan) step_asan ;;
  fuzz) step_fuzz ;;
  all) step_clang; step_asan; step_fuzz ;;
  *) sed -n '2,10p' "$0"; exit 2 ;;
esac
