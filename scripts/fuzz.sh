#!/bin/bash
# Builds and runs the libFuzzer harnesses of tests/fuzz (clang, AddressSanitizer + UBSan):
#   scripts/fuzz.sh build                 configure and build build-fuzz/ (the fuzz preset)
#   scripts/fuzz.sh smoke [SECONDS]       every target for SECONDS (default 10) from its seed corpus (CI)
#   scripts/fuzz.sh run TARGET SECONDS    one long run (fork mode: goes on after a finding); its corpus
#                                         grows in build-fuzz/corpus/TARGET
#   scripts/fuzz.sh repro FILE...         runs reproducers (tests/fuzz/crashes/TARGET-*) once each
#   scripts/fuzz.sh list                  the targets
# Findings (crash-*, leak-*, timeout-*, oom-*) go to build-fuzz/artifacts/TARGET/. Each run prints
# "fuzz TARGET: N executions in S s, ..." for the record in docs/fuzzing.md. Options for libFuzzer
# can be added with FUZZ_FLAGS (e.g. FUZZ_FLAGS=-jobs=2).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
B=${RMDIAG_FUZZ_BUILD:-build-fuzz}
TARGETS="jobfile numleak_parse import_cm_csv import_rewardbench import_rewardbench2 import_numleak import_features h5_layout"

# What every sanitizer run needs: Open MPI as root (singleton), leak suppressions for Open MPI only.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export LSAN_OPTIONS="suppressions=$ROOT/scripts/sanitize/lsan.supp:print_suppressions=0"
# allocator_may_return_null: an impossible request (HDF5 sizing a buffer from a corrupt heap's header,
# petabytes) returns NULL as malloc does in a release build, and HDF5 reports a read error; requests
# up to the allocator's limit (1 TiB) above 2 GiB are still findings (-malloc_limit_mb)
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# The MPI harness needs whole stacks through libraries built without frame pointers (Open MPI,
# HDF5) for the leak suppressions to match: the full unwinder, about half as fast.
asan_options() {
  if [ "$1" = h5_layout ]; then echo "$ASAN_OPTIONS:fast_unwind_on_malloc=0"; else echo "$ASAN_OPTIONS"; fi
}

build() {
  command -v clang >/dev/null || { echo "fuzz: clang is needed (apt-get install clang)"; exit 1; }
  CC=clang cmake --preset fuzz -B "$B" >/dev/null
  cmake --build "$B" -j "${RMDIAG_BUILD_JOBS:-$(nproc)}" --target rd_fuzz
}

# run TARGET SECONDS CORPUS...: one libFuzzer session; prints the executions and what it found.
run_one() {
  local t=$1 secs=$2
  shift 2
  local art="$B/artifacts/$t" log
  mkdir -p "$art"
  log=$(mktemp)
  local rc=0 t0=$SECONDS
  # -timeout: one input over 25 s is a finding; -rss_limit_mb / -malloc_limit_mb: so is an input
  # that makes the code under test ask for more than 2 GiB
  ASAN_OPTIONS=$(asan_options "$t") "$B/tests/fuzz/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=25 \
    -print_final_stats=1 -artifact_prefix="$art/" ${FUZZ_FLAGS:-} "$@" >"$log" 2>&1 || rc=$?
  local execs cov found=""
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  if grep -q '^INFO: -fork=' "$log"; then  # fork mode: the last status line "#N: cov: ... oom/timeout/crash: a/b/c"
    execs=$(grep -o '^#[0-9]*:' "$log" | tail -1 | tr -d '#:')
    found=", oom/timeout/crash $(grep -o 'oom/timeout/crash: [0-9/]*' "$log" | tail -1 | cut -d' ' -f2)"
  fi
  echo "fuzz $t: ${execs:-?} executions in $((SECONDS - t0)) s, coverage ${cov:-?} features$found, exit $rc"
  if [ "$rc" != 0 ]; then
    grep -E "ERROR|SUMMARY|runtime error|fuzz [a-z_0-9]+:|Test unit written" "$log" | head -20 || true
    echo "fuzz $t: full log in $log"
    return 1
  fi
  rm -f "$log"
}

case "${1:-}" in
  build) build ;;
  list) echo "$TARGETS" | tr ' ' '\n' ;;
  smoke)
    secs=${2:-10}
    fail=0
    for t in $TARGETS; do
      work=$(mktemp -d)  # new inputs go here; the committed seeds stay as they are
      run_one "$t" "$secs" "$work" "tests/fuzz/corpus/$t" || fail=1
      rm -rf "$work"
    done
    exit $fail
    ;;
  run)
    t=${2:?target}
    secs=${3:?seconds}
    mkdir -p "$B/corpus/$t"
    # a child process fuzzes; a finding is saved and fuzzing goes on (all of them are in artifacts/)
    FUZZ_FLAGS="-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 ${FUZZ_FLAGS:-}" \
      run_one "$t" "$secs" "$B/corpus/$t" "tests/fuzz/corpus/$t"
    ;;
  repro)
    shift
    rc=0
    export RMDIAG_FUZZ_STRICT=1  # known findings are fatal here: a reproducer passes once its fix is in
    for f in "$@"; do
      t=$(basename "$f" | sed -E 's/^(jobfile|numleak_parse|import_[a-z0-9_]+|h5_layout)-.*/\1/')
      echo "== $f ($t)"
      [ -x "$B/tests/fuzz/fuzz_$t" ] || { echo "   no harness named in the file name (TARGET-...)"; rc=1; continue; }
      if ASAN_OPTIONS=$(asan_options "$t") "$B/tests/fuzz/fuzz_$t" -runs=1 "$f" >"$B/repro.log" 2>&1; then
        echo "   passes now"
      else
        grep -E "ERROR|SUMMARY|runtime error|fuzz [a-z_0-9]+:| #[0-9]+ 0x.* in [a-z_]" "$B/repro.log" | head -24 || true
        echo "   still fails"
        rc=1
      fi
    done
    exit $rc
    ;;
  *) sed -n '2,10p' "$0"; exit 2 ;;
esac
