#!/usr/bin/env bash
# rmsnorm's launch plans side by side (bench/gpu/rms_plans.cu), then which kernels torch eager and
# torch.compile launch at a few shapes (bench/gpu/rms_torch_launch.py under ncu, launch metrics).
# Usage: bench/gpu/rms_plans.sh OUTDIR [prebuilt rms_plans binary]; the binary can be built
# elsewhere with the nvcc line in rms_plans.cu's header.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
O=${1:-/tmp/rms-plans}
BIN=${2:-}
mkdir -p "$O"
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu \
    --format=csv,noheader
if [ -z "$BIN" ]; then
    BIN=/tmp/rms_plans
    nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -I "$ROOT/include" \
        -I "$ROOT/kernels/kbpkg-community/rmsnorm/include" \
        -I "$ROOT/kernels/kbpkg-community/rmsnorm/src" -I "$ROOT/bench/gpu" \
        "$ROOT/bench/gpu/rms_plans.cu" -o "$BIN" || exit 1
fi
SHAPES=${RMS_PLANS_SHAPES:-4096x1000,4096x2048,4096x128,32768x128,4096x16384,512x2048,512x128,32768x1000,32768x2048,4096x4096,4096x5120,4096x8192,4096x14336}
t0=$(date +%s)
timeout "${RMS_PLANS_TIMEOUT:-90}" "$BIN" --shapes "$SHAPES" >"$O/plans.txt" 2>&1
echo "plans: rc=$? $(( $(date +%s) - t0 )) s, $(grep -c ' ok$' "$O/plans.txt") ok, $(grep -c FAIL "$O/plans.txt") FAIL"
. "$ROOT/bench/gpu/find_ncu.sh"
if [ -n "$NCU" ] && [ -z "${RMS_PLANS_NO_TORCH:-}" ]; then
    timeout "${RMS_TORCH_TIMEOUT:-60}" "$NCU" --profile-from-start off --nvtx \
        --metrics launch__grid_size,launch__block_size,launch__registers_per_thread,gpu__time_duration.sum,launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active \
        python3 "$ROOT/bench/gpu/rms_torch_launch.py" >"$O/torch_launch.txt" 2>&1
    echo "torch launch: rc=$? $(( $(date +%s) - t0 )) s"
fi
python3 "$ROOT/bench/gpu/rms_plans_summary.py" "$O/plans.txt" | tee "$O/summary.txt"
grep -E "^\s*\[|gpu__time|launch__grid|launch__block_size|launch__registers|warps_active|^  [a-zA-Z_].*\(" \
    "$O/torch_launch.txt" 2>/dev/null | cut -c1-110 | head -120 >"$O/torch_launch_short.txt"
