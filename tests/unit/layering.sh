#!/bin/bash
# The layers use only the layers below them (docs/design.md, 'Layout'):
#   kernels      src/kernels, include/rmdiag/kernels: system headers and rmdiag/kernels/ only; no MPI,
#                HDF5 or cJSON
#   common       src/common, include/rmdiag/common: kernels and common
#   import       src/import, include/rmdiag/import: kernels, common and import
#   kinds        src/worker/<kind>: kernels, common, the coordinator's seams with the kinds (kind.h,
#                job.h, plan.h) and the kind's own folder; not another kind, not the importers
# (the coordinator may use every layer). Usage: layering.sh SOURCE_DIR
set -u
root=${1:?usage: layering.sh SOURCE_DIR}
bad=0
n=0
# check FILE LAYER: every #include of FILE must be allowed for LAYER
check() {
  local f=$1 layer=$2 hdr ok quoted
  n=$((n + 1))
  while IFS= read -r line; do
    # (bash's own pattern matching: a subprocess per line would make this slow on a loaded machine)
    [[ $line =~ include[[:space:]]*([<\"])([^>\"]+) ]] || continue
    hdr=${BASH_REMATCH[2]}
    ok=1
    quoted=0
    [ "${BASH_REMATCH[1]}" = '"' ] && quoted=1
    case "$hdr" in
      mpi.h | mpio.h | hdf5.h | H5*.h | cjson/* | cJSON.h) [ "$layer" = kernels ] && ok=0 ;;
      rmdiag/kernels/*) ;;
      rmdiag/common/*) [ "$layer" = kernels ] && ok=0 ;;
      rmdiag/import/*) case "$layer" in kernels | common | kind:*) ok=0 ;; esac ;;
      rmdiag/kind.h | rmdiag/job.h | rmdiag/plan.h) case "$layer" in kernels | common | import) ok=0 ;; esac ;;
      rmdiag/*) [ "$layer" != coordinator ] && ok=0 ;;
      */*) # a project path into another folder (system headers such as <sys/mman.h> are fine)
        if [ "$quoted" = 1 ]; then case "$layer" in kind:* | kernels) ok=0 ;; esac; fi ;;
      *.h) # a project header beside the file: kinds may include only their own folder's
        if [ "$quoted" = 1 ] && [[ $layer == kind:* ]] && [ ! -f "$(dirname "$f")/$hdr" ]; then ok=0; fi ;;
    esac
    if [ "$ok" = 0 ]; then echo "FAIL: ${f#"$root"/} ($layer) includes $hdr"; bad=$((bad + 1)); fi
  done < <(grep -E '^[[:space:]]*#[[:space:]]*include' "$f")
}
files() { find "$@" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) -print0 2>/dev/null; }
while IFS= read -r -d '' f; do check "$f" kernels; done < <(files "$root/src/kernels" "$root/include/rmdiag/kernels")
while IFS= read -r -d '' f; do check "$f" common; done < <(files "$root/src/common" "$root/include/rmdiag/common")
while IFS= read -r -d '' f; do check "$f" import; done < <(files "$root/src/import" "$root/include/rmdiag/import")
for k in "$root"/src/worker/*/; do
  while IFS= read -r -d '' f; do check "$f" "kind:$(basename "$k")"; done < <(files "$k")
done
[ "$n" -gt 60 ] || { echo "FAIL: only $n files found under $root/src"; exit 1; }
if [ "$bad" -gt 0 ]; then echo "$bad layering violations in $n files"; exit 1; fi
echo "ok: $n files of the kernels, common, import and kind layers include only the layers below them"
