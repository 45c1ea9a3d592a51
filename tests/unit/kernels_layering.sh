#!/bin/bash
# The kernels are arithmetic only: no file in src/kernels/ may include MPI, HDF5 or cJSON, nor any
# rmdiag header outside include/rmdiag/kernels/ (the common runtime, the kinds, the importers and
# the coordinator sit above them). Usage: kernels_layering.sh SOURCE_DIR
set -u
src=${1:?usage: kernels_layering.sh SOURCE_DIR}/src/kernels
[ -d "$src" ] || { echo "FAIL: $src is not a folder"; exit 1; }
bad=0
n=0
while IFS= read -r -d '' f; do
  n=$((n + 1))
  while IFS= read -r line; do
    hdr=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"].*/\1/' <<<"$line")
    case "$hdr" in
      mpi.h | mpio.h | hdf5.h | H5*.h | hdf5_hl.h | cjson/* | cJSON.h)
        echo "FAIL: ${f#"$src"/} includes $hdr (kernels use no MPI, HDF5 or cJSON)"; bad=$((bad + 1)) ;;
      rmdiag/kernels/*) ;;
      rmdiag/*)
        echo "FAIL: ${f#"$src"/} includes $hdr (kernels may include only rmdiag/kernels/ headers)"; bad=$((bad + 1)) ;;
      ../* | */../*)
        echo "FAIL: ${f#"$src"/} includes $hdr (a path outside src/kernels/)"; bad=$((bad + 1)) ;;
    esac
  done < <(grep -E '^[[:space:]]*#[[:space:]]*include' "$f")
done < <(find "$src" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print0)
# the kernel headers themselves obey the same rule
while IFS= read -r -d '' f; do
  n=$((n + 1))
  if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](mpi\.h|hdf5\.h|H5[^>"]*\.h|cjson/|cJSON\.h|rmdiag/(common|import|worker|coordinator)/|rmdiag/[a-z_]+\.h)' "$f"; then
    echo "FAIL: ${f} includes a header outside the kernels layer"; bad=$((bad + 1))
  fi
done < <(find "$src/../../include/rmdiag/kernels" -type f -name '*.h' -print0)
[ "$n" -gt 10 ] || { echo "FAIL: only $n files found under $src"; exit 1; }
if [ "$bad" -gt 0 ]; then echo "$bad layering violations in $n files"; exit 1; fi
echo "ok: $n kernel files include only system headers and rmdiag/kernels/ headers"
