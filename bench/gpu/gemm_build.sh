#!/usr/bin/env bash
# Builds radeonflow/gemm's library (every source) and its package check for one CUDA arch with
# nvcc, as the device scripts run them (ptxas register report in the log).
# Usage: bench/gpu/gemm_build.sh PKGDIR OUTDIR ARCH [nvcc flags...]   (ARCH: 90a, 90, ...)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
G=$1 D=$2 A=$3
shift 3
mkdir -p "$D"
nvcc -std=c++17 -O3 --threads 2 -I"$G/include" -I"$ROOT/include" -Xcompiler -fPIC,-fvisibility=hidden \
    -Xlinker --exclude-libs,ALL -shared -gencode "arch=compute_$A,code=sm_$A" -Xptxas -v \
    -DKBPKG_TARGET="\"cuda13-sm_$A-x86_64-linux\"" "$@" "$G/src/gemm.cu" "$G/src/gemm_fp8.cu" \
    "$G/src/gemm_fp8_mma.cu" -o "$D/libgemm.so"
nvcc -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -I"$G/include" -I"$ROOT/include" "$G/tests/check.c" \
    "$G/src/gemm_cpu.c" -L"$D" -lgemm -Xlinker -rpath,"$D" -o "$D/check"
