#!/usr/bin/env bash
# On the device, what bench/gpu/act_odd_prebuild.sh built: the package check with the odd-width
# kernel forced, the odd-width candidates timed side by side (act_odd, interleaved medians),
# Nsight Compute's occupancy, speed-of-light and warp-state sections on one launch of the
# odd-width kernel at bf16 32768 x 4095, and the check again under compute-sanitizer memcheck.
# Logs under OUTDIR; the timing table last. About a minute on the H200.
# Usage: bench/gpu/act_odd_run.sh DIR OUTDIR [act_odd args, e.g. --dtypes bf16 --shapes 4096x4095]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:?usage: act_odd_run.sh DIR OUTDIR [act_odd args]}
O=${2:?usage: act_odd_run.sh DIR OUTDIR [act_odd args]}
shift 2
mkdir -p "$O"
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu \
    --format=csv,noheader
cat "$B/regs.txt"
check() { # label [wrapper...]
    local label=$1
    shift
    timeout 400 "$@" "$B/odd0/check" >"$O/check_$label.log" 2>&1
    local rc=$?
    echo "check $label (odd-width kernel forced): rc=$rc $(tail -n 1 "$O/check_$label.log")"
    [ $rc = 0 ] || status=1
}
check plain
"$B/act_odd" "$@" >"$O/act_odd.txt" 2>&1 || status=1
. "$ROOT/bench/gpu/find_ncu.sh"
if [ -n "$NCU" ]; then
    # act_odd's first launch of the kernel is the export's check run; one launch is enough
    timeout 180 "$NCU" --kernel-name regex:act_odd_kernel --launch-count 1 \
        --section Occupancy --section SpeedOfLight --section WarpStateStats \
        "$B/act_odd" --dtypes bf16 --shapes 32768x4095 >"$O/ncu.txt" 2>&1
    echo "ncu: rc=$?"
    grep -E "Registers Per|Achieved Occupancy|Theoretical Occupancy|DRAM Throughput|Duration|Warp Cycles Per Issued" \
        "$O/ncu.txt" | cut -c1-110
else
    echo "ncu: not found"
fi
if command -v compute-sanitizer >/dev/null; then
    check memcheck compute-sanitizer --tool memcheck --error-exitcode 9
else
    echo "compute-sanitizer: not found"
    status=1
fi
cat "$O/act_odd.txt"
exit $status
