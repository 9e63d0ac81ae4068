#!/usr/bin/env bash
# On the device, what bench/gpu/act_odd_prebuild.sh built: each odd-width kernel variant's
# package check (odd-width kernel forced), the variants timed side by side (act_odd, interleaved
# medians), Nsight Compute's occupancy, speed-of-light and warp-state sections on the first
# launch of each variant at bf16 32768 x 4095, and the checks again under compute-sanitizer
# memcheck. Logs under OUTDIR; the timing table last. About a minute on the H200.
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
run_checks() { # label [wrapper...]: every variant's check in parallel, one line each
    local label=$1
    shift
    local d pids=() names=()
    for d in "$B"/m*b*/; do
        v=$(basename "$d")
        timeout 400 "$@" "$d/check" >"$O/check_${label}_$v.log" 2>&1 &
        pids+=($!)
        names+=("$v")
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}"
        rc=$?
        echo "check $label ${names[$i]}: rc=$rc $(tail -1 "$O/check_${label}_${names[$i]}.log")"
        [ $rc = 0 ] || status=1
    done
}
run_checks plain
"$B/act_odd" "$@" >"$O/act_odd.txt" 2>&1 || status=1
. "$ROOT/bench/gpu/find_ncu.sh"
if [ -n "$NCU" ]; then
    timeout 180 "$NCU" --kernel-name regex:act_odd_kernel --launch-count 6 \
        --section Occupancy --section SpeedOfLight --section WarpStateStats \
        "$B/act_odd" --dtypes bf16 --shapes 32768x4095 >"$O/ncu.txt" 2>&1
    echo "ncu: rc=$? (first 6 act_odd_kernel launches: export, then modes in act_odd's order)"
    grep -E "act_odd_kernel|Registers Per|Achieved Occupancy|Theoretical Occupancy|DRAM Throughput|Duration|Stall Long|Warp Cycles Per Issued" \
        "$O/ncu.txt" | sed 's/(kb_bf16_tag\*, const.*//' | cut -c1-110
else
    echo "ncu: not found"
fi
if command -v compute-sanitizer >/dev/null; then
    run_checks memcheck compute-sanitizer --tool memcheck --error-exitcode 9
else
    echo "compute-sanitizer: not found"; status=1
fi
cat "$O/act_odd.txt"
exit $status
