#!/usr/bin/env bash
# radeonflow/gemm at LLM-inference shapes on an H200: builds (in parallel) the sm_90a and sm_90
# artifacts with their package checks and bench/gpu/gemm_shapes.cu, runs both checks (while the
# bench compiles), then the shape table against cuBLAS (the export, the baseline's export, the
# split plans' variants, every tile, side by side). Needs nvcc, a Hopper GPU, cuBLAS. Full log
# under OUTDIR (up to 8 files).
#   GEMM_BASELINE=PKGDIR   also build that copy of the package (e.g. a `git worktree` of an
#                          older commit) and time its exports in every round ("before")
#   GEMM_SHAPES_PREBUILT=DIR   take the builds from DIR instead (sm90a/, sm90/, baseline/ as
#                          gemm_build.sh leaves them, and gemm_shapes): build on a machine
#                          with nvcc and no GPU, spend the GPU's time on running only
#   GEMM_AFTER_LIB=SO      also time that libgemm.so's exports through dlopen ("after library"), so
#                          before and after are both libraries, neither compiled into the bench
#   GEMM_SHAPES_CALIBRATE=1   also time every tile at splits 1..16 (bf16, the cost model's data)
#   GEMM_SHAPES_NO_CHECKS=1   skip the package checks (the caller ran them: gemm_skinny.sh)
#   GEMM_SHAPES_MAXM=64       time only the shapes with M <= 64 (gemm_shapes.cu reads it)
#   GEMM_SHAPES_SKINNY_SWEEP=1   also time every K split and warp count of the skinny kernel
#   GEMM_SHAPES_TILES=n       time and sweep only the tile table's first n rows
#   GEMM_CHECK_TIMEOUT=s      seconds each package check may take (600)
# Usage: bench/gpu/gemm_shapes.sh [outdir]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
G=$ROOT/kernels/radeonflow/gemm
OUTDIR=${1:-${OUT:-/tmp/gemm-shapes}}
B=${GEMM_SHAPES_PREBUILT:-${TMPDIR:-/tmp}/gemm-shapes-build}
mkdir -p "$OUTDIR" "$B/sm90a" "$B/sm90"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
nvcc --version 2>/dev/null | tail -1

t0=$(date +%s)
# each package check runs as soon as its library is built, while the bench still compiles
CHECKS=1
[ "${GEMM_SHAPES_NO_CHECKS:-0}" = 1 ] && CHECKS=0
for a in sm90a sm90; do
    (if [ -z "${GEMM_SHAPES_PREBUILT:-}" ]; then
         bash "$ROOT/bench/gpu/gemm_build.sh" "$G" "$B/$a" "${a#sm}" >"$OUTDIR/build_$a.log" 2>&1
     fi &&
        if [ $CHECKS = 1 ]; then
            LD_LIBRARY_PATH="$B/$a" timeout "${GEMM_CHECK_TIMEOUT:-600}" "$B/$a/check" \
                >"$OUTDIR/check_$a.log" 2>&1
            echo "exit $?" >>"$OUTDIR/check_$a.log"
        fi) &
done
if [ -z "${GEMM_SHAPES_PREBUILT:-}" ]; then
    if [ -n "${GEMM_BASELINE:-}" ]; then
        bash "$ROOT/bench/gpu/gemm_build.sh" "$GEMM_BASELINE" "$B/baseline" 90a \
            >"$OUTDIR/build_baseline.log" 2>&1 &
    fi
    nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I"$G/include" -I"$ROOT/include" \
        -DKBPKG_TARGET='"cuda13-sm_90a-x86_64-linux"' "$ROOT/bench/gpu/gemm_shapes.cu" -lcublas \
        -o "$B/gemm_shapes" >"$OUTDIR/build_shapes.log" 2>&1 &
fi
wait
echo "builds and checks: $(($(date +%s) - t0)) s"
status=0
for a in sm90a sm90; do
    if [ $CHECKS = 0 ]; then
        :
    elif [ -x "$B/$a/check" ]; then
        grep -q '^exit 0$' "$OUTDIR/check_$a.log" || status=1
        echo "check $a: $(tail -2 "$OUTDIR/check_$a.log" | tr '\n' ' ')"
    else
        echo "check $a: BUILD FAILED"; tail -20 "$OUTDIR/build_$a.log"; status=1
    fi
done
if [ -f "$B/baseline/libgemm.so" ]; then
    export GEMM_BASELINE_LIB=$B/baseline/libgemm.so
fi
if [ -x "$B/gemm_shapes" ]; then
    t1=$(date +%s)
    "$B/gemm_shapes" "$OUTDIR/gemm_shapes_full.log" 2>&1 | tee "$OUTDIR/gemm_shapes.txt" || status=1
    echo "shapes: $(($(date +%s) - t1)) s"
else
    echo "gemm_shapes: BUILD FAILED"; tail -20 "$OUTDIR/build_shapes.log"; status=1
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
exit $status
