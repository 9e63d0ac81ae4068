#!/usr/bin/env bash
# radeonflow/gemm at LLM-inference shapes on an H200: builds (in parallel) the sm_90a and sm_90
# artifacts with their package checks and bench/gpu/gemm_shapes.cu, runs both checks (while the
# bench compiles), then the shape table against cuBLAS (the export, every tile, the sm_90a
# epilogue from registers and both staging widths, side by side). Needs nvcc, a Hopper GPU,
# cuBLAS. Full log under OUTDIR (7 files).
# Usage: bench/gpu/gemm_shapes.sh [outdir]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
G=$ROOT/kernels/radeonflow/gemm
OUTDIR=${1:-${OUT:-/tmp/gemm-shapes}}
B=${TMPDIR:-/tmp}/gemm-shapes-build
mkdir -p "$OUTDIR" "$B/sm90a" "$B/sm90"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
nvcc --version | tail -1

t0=$(date +%s)
# each package check runs as soon as its library is built, while the bench still compiles
for a in sm90a sm90; do
    (bash "$ROOT/bench/gpu/gemm_build.sh" "$G" "$B/$a" "${a#sm}" >"$OUTDIR/build_$a.log" 2>&1 &&
        "$B/$a/check" >"$OUTDIR/check_$a.log" 2>&1
     echo "exit $?" >>"$OUTDIR/check_$a.log") &
done
nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I"$G/include" -I"$ROOT/include" \
    -DKBPKG_TARGET='"cuda13-sm_90a-x86_64-linux"' "$ROOT/bench/gpu/gemm_shapes.cu" -lcublas \
    -o "$B/gemm_shapes" >"$OUTDIR/build_shapes.log" 2>&1 &
wait
echo "builds and checks: $(($(date +%s) - t0)) s"
status=0
for a in sm90a sm90; do
    if [ -x "$B/$a/check" ]; then
        grep -q '^exit 0$' "$OUTDIR/check_$a.log" || status=1
        echo "check $a: $(tail -2 "$OUTDIR/check_$a.log" | tr '\n' ' ')"
    else
        echo "check $a: BUILD FAILED"; tail -20 "$OUTDIR/build_$a.log"; status=1
    fi
done
if [ -x "$B/gemm_shapes" ]; then
    t1=$(date +%s)
    "$B/gemm_shapes" "$OUTDIR/gemm_shapes_full.log" 2>&1 | tee "$OUTDIR/gemm_shapes.txt" || status=1
    echo "shapes: $(($(date +%s) - t1)) s"
else
    echo "gemm_shapes: BUILD FAILED"; tail -20 "$OUTDIR/build_shapes.log"; status=1
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
exit $status
