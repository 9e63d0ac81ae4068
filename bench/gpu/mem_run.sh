#!/usr/bin/env bash
# The memory-bound half of tests/gpu/kernels_bench.sh alone (about a minute on the H200):
# builds activation and rmsnorm for sm_90, runs their checks, then bench/gpu/mem_bench.
# Usage: bench/gpu/mem_run.sh [outdir]   (needs nvcc and a CUDA GPU)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUTDIR=${1:-${OUT:-/tmp/kbpkg-mem-out}}
B=/tmp/kbpkg-mem-build
mkdir -p "$OUTDIR" "$B"
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
A=$ROOT/kernels/kbpkg-community/activation R=$ROOT/kernels/kbpkg-community/rmsnorm
status=0
for p in activation rmsnorm; do
    d=$ROOT/kernels/kbpkg-community/$p
    (nvcc -std=c++17 -O3 -I"$d/include" -Xcompiler -fPIC,-fvisibility=hidden -shared \
        -gencode arch=compute_90,code=sm_90 -DKBPKG_TARGET='"cuda13-sm_90-x86_64-linux"' \
        "$d/src/$p.cu" -o "$B/lib$p.so" &&
     nvcc -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -I"$d/include" "$d/tests/check.c" \
        "$d/src/${p}_cpu.c" -L"$B" -l"$p" -Xlinker -rpath,"$B" -o "$B/check_$p") \
        >"$B/build_$p.log" 2>&1 &
done
wait
nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -I"$A/include" -I"$R/include" -I"$R/src" \
    "$ROOT/bench/gpu/mem_bench.cu" -L"$B" -lactivation -lrmsnorm -Xlinker -rpath,"$B" \
    -o "$B/mem_bench" >"$B/build_mem_bench.log" 2>&1 || { tail -20 "$B/build_mem_bench.log"; exit 1; }
for p in activation rmsnorm; do
    [ -x "$B/check_$p" ] || { echo "$p: BUILD FAILED"; tail -20 "$B/build_$p.log"; status=1; continue; }
    timeout 300 "$B/check_$p" >"$B/check_$p.log" 2>&1
    rc=$?
    echo "$p check: rc=$rc $(tail -1 "$B/check_$p.log")"
    [ $rc -eq 0 ] || status=1
done
timeout 300 "$B/mem_bench" >"$OUTDIR/mem_bench.txt" 2>&1 || status=1
cat "$OUTDIR/mem_bench.txt"
exit $status
