#!/usr/bin/env bash
# A stand-in for nvcc that builds "CUDA" targets with the host C compiler, for the tests that
# need a CUDA target to run on a machine without a GPU or CUDA (the bench clock tests): the
# package's .cu sources are plain C there. Says it is CUDA 13.0 and knows sm_90.
set -euo pipefail
case "${1:-}" in
  --version) echo "Cuda compilation tools, release 13.0, V13.0.48 (fake, tests/fakes)"; exit 0 ;;
  --list-gpu-code) echo sm_90; exit 0 ;;
  --list-gpu-arch) echo compute_90; exit 0 ;;
esac
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -Xcompiler) IFS=, read -ra f <<<"$2"; args+=("${f[@]}"); shift ;;
    -Xcompiler=*) IFS=, read -ra f <<<"${1#-Xcompiler=}"; args+=("${f[@]}") ;;
    -Xlinker) args+=("-Wl,$2"); shift ;;
    -Xlinker=*) args+=("-Wl,${1#-Xlinker=}") ;;
    -cudart) shift ;;
    -gencode=* | --expt-* | -std=c++*) ;;
    *.cu) args+=(-x c "$1" -x none) ;;
    *) args+=("$1") ;;
  esac
  shift
done
exec "${CC:-cc}" "${args[@]}"
