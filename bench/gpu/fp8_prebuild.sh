#!/usr/bin/env bash
# Builds here (no GPU needed) what bench/gpu/fp8_run.sh times with FP8_PREBUILT_DIR=OUTDIR:
# radeonflow/gemm for sm_90a from PKGDIR as libgemm.so, one build per variant NAME:flags
# (flags joined by commas; NAME@PKGDIR2:flags builds another tree's package, e.g. main's), and
# the package check linked against each (check_NAME; check_fp8_NAME: its FP8 cases alone, bench/gpu/fp8_check.c;
# rpath $ORIGIN, so the folder can travel).
# Usage: bench/gpu/fp8_prebuild.sh PKGDIR OUTDIR "NAME:flags NAME@PKGDIR2:flags ..."
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PKG=$1 D=$2 SPECS=${3:-}
mkdir -p "$D"
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
build() { # name pkgdir extra-flags...
  local name=$1 pkg=$2; shift 2
  nvcc -std=c++17 -O3 -I"$pkg/include" -I"$ROOT/include" -DKBPKG_TARGET='"cuda13-sm_90a-x86_64-linux"' \
    "$@" -Xcompiler -fPIC,-fvisibility=hidden -Xlinker --exclude-libs,ALL -shared -Xptxas -v \
    -gencode arch=compute_90a,code=sm_90a "$pkg/src/gemm.cu" "$pkg/src/gemm_fp8.cu" "$pkg/src/gemm_fp8_mma.cu" \
    -o "$D/lib$name.so" >"$D/build_$name.log" 2>&1 || { tail -30 "$D/build_$name.log"; return 1; }
  nvcc -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -I"$pkg/include" -I"$ROOT/include" "$pkg/tests/check.c" \
    "$pkg/src/gemm_cpu.c" -L"$D" -l"$name" -Xlinker -rpath,'$ORIGIN' -o "$D/check_$name"
  # tests/check.c's FP8 cases alone (fp8_check.c): seconds, where the whole check takes minutes
  nvcc -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -I"$pkg/include" -I"$ROOT/include" "$ROOT/bench/gpu/fp8_check.c" \
    "$pkg/src/gemm_cpu.c" -L"$D" -l"$name" -Xlinker -rpath,'$ORIGIN' -o "$D/check_fp8_$name"
}
build gemm "$PKG" &
for spec in $SPECS; do
  head=${spec%%:*} flags=${spec#*:} pkg=$PKG
  [ "$head" = "${head#*@}" ] || pkg=${head#*@}
  build "gemm_${head%%@*}" "$pkg" ${flags//,/ } &
done
wait
ls "$D"
