#!/usr/bin/env bash
# What a trivial kernel of ours costs per call (about 0.45 us more than torch's copy_ per
# CUDA-graph replay in mem_sweep.sh's few-row shapes): bench/gpu/launch_probe.cu built with the
# static cudart (as kbpkg builds packages) and the shared one, timed beside torch's copy_ and
# add as graph replays; then the packages' silu_and_mul and rmsnorm at few rows (built as
# mem_sweep.sh builds them) beside that copy, mem_sweep's own copy variant and torch's add, in
# the same process and timer; then each copy kernel's own duration under Nsight Compute.
# About 30 s on the H200.
# Usage: bench/gpu/launch_probe.sh [outdir]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
O=${1:-${OUT:-/tmp/launch-probe}}
B=/tmp/launch-probe-build
mkdir -p "$O" "$B"
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
for rt in static shared; do
    nvcc -O3 -Xcompiler -fPIC,-fvisibility=hidden -shared -cudart "$rt" \
        -gencode arch=compute_90,code=sm_90 "$ROOT/bench/gpu/launch_probe.cu" \
        -o "$B/libprobe_$rt.so" || exit 1
done
# the packages and mem_sweep.sh's variants library, built as mem_sweep.sh builds them
R=$ROOT/kernels/kbpkg-community/rmsnorm
for p in activation rmsnorm; do
    k=$ROOT/kernels/kbpkg-community/$p
    nvcc -std=c++17 -O3 -I"$ROOT/include" -I"$k/include" -Xcompiler -fPIC,-fvisibility=hidden -shared \
        -gencode arch=compute_90,code=sm_90 -DKBPKG_TARGET='"cuda13-sm_90-x86_64-linux"' \
        "$k/src/$p.cu" -o "$B/lib$p.so" &
done
nvcc -std=c++17 -O3 -I"$ROOT/include" -I"$R/include" -I"$R/src" -Xcompiler -fPIC,-fvisibility=hidden \
    -shared -gencode arch=compute_90,code=sm_90 -DKBPKG_TARGET='"cuda13-sm_90-x86_64-linux"' \
    "$ROOT/bench/gpu/mem_variants.cu" -o "$B/libmem_variants.so" &
wait
python3 "$ROOT/bench/gpu/launch_probe.py" "$B" 2>&1 | tee "$O/replays.txt"
. "$ROOT/bench/gpu/find_ncu.sh"
if [ -n "$NCU" ]; then
    "$NCU" --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread \
        python3 "$ROOT/bench/gpu/launch_probe.py" "$B" --once >"$O/ncu.txt" 2>&1
    grep -E "^  [a-zA-Z_].*\(|gpu__time_duration|launch__grid_size|registers" "$O/ncu.txt" | head -60
else
    echo "no ncu here"
fi
