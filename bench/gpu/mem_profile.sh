#!/usr/bin/env bash
# Where a few-row launch of rmsnorm or silu_and_mul spends the time its copy does not: builds
# (or takes prebuilt) the packages twice, BEFORE (e.g. main's sources) and AFTER (this tree),
# and bench/gpu/mem_profile.cu; then, on the GPU: SASS size per kernel (cuobjdump), CUDA-graph
# replays of both beside a copy of the same output (medians), and Nsight Compute on one warm
# launch of each export and of the copy per shape (mem_profile --once: a warm pass, then the
# profiled pass, so ncu sees a handful of launches, never a timing loop). Logs and reports
# under the outdir; the timing table last. About 60-90 s on the H200.
# Usage: MEM_BEFORE=tree [MEM_PREBUILT=dir with before/ after/] bench/gpu/mem_profile.sh [outdir]
#   or   MEM_BEFORE_LIBS=dir MEM_AFTER_LIBS=dir (built already, e.g. by mem_sweep.sh) ...
# MEM_NCU=full (default: sections, source counters) | metrics (one pass: durations,
# instructions, global stores) | none.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
O=${1:-${OUT:-/tmp/mem-profile}}
B=${MEM_PREBUILT:-/tmp/mem-profile-build}
mkdir -p "$O" "$B/before" "$B/after"
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
t0=$(date +%s)
build() { # tree outdir package: as mem_sweep.sh builds it
    local d=$1/kernels/kbpkg-community/$3
    nvcc -std=c++17 -O3 -I"$1/include" -I"$d/include" -Xcompiler -fPIC,-fvisibility=hidden -shared \
        -gencode arch=compute_90,code=sm_90 -DKBPKG_TARGET='"cuda13-sm_90-x86_64-linux"' \
        "$d/src/$3.cu" -o "$2/lib$3.so"
}
if [ -n "${MEM_BEFORE_LIBS:-}" ] && [ -n "${MEM_AFTER_LIBS:-}" ]; then
    rm -rf "$B/before" "$B/after"
    ln -s "$MEM_BEFORE_LIBS" "$B/before"
    ln -s "$MEM_AFTER_LIBS" "$B/after"
elif [ -z "${MEM_PREBUILT:-}" ]; then
    for p in activation rmsnorm; do
        build "${MEM_BEFORE:?MEM_BEFORE=tree of the before sources}" "$B/before" $p &
        build "$ROOT" "$B/after" $p &
    done
    wait
fi
# a binary built on another machine may not run here: build it again if it does not
if ! "$B/mem_profile" 2>&1 | grep -q usage; then
    nvcc -std=c++17 -O2 -gencode arch=compute_90,code=sm_90 "$ROOT/bench/gpu/mem_profile.cu" \
        -o /tmp/mem_profile -ldl && B_EXE=/tmp/mem_profile
fi
EXE=${B_EXE:-$B/mem_profile}
echo "builds: $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader
. "$ROOT/bench/gpu/find_ncu.sh"
echo "ncu: ${NCU:-none} $([ -n "$NCU" ] && "$NCU" --version | tail -1)"

# instruction bytes per kernel (16 bytes each on sm_90)
for v in before after; do
    for p in activation rmsnorm; do
        cuobjdump -sass "$B/$v/lib$p.so" >"$O/sass_${v}_$p.txt" 2>&1
        awk -v v=$v '/Function :/ { if (f) print v, n * 16, f; f = $3; n = 0 }
             /\/\*[0-9a-f]{4,}\*\// { n++ } END { if (f) print v, n * 16, f }' \
            "$O/sass_${v}_$p.txt"
    done
done >"$O/sass_bytes.txt"
echo "SASS bytes (before/after), kernels of the profiled shapes:"
grep -E "act_flat_kernelI11kb_bf16_tagLi0ELi1E|act_any_kernelI11kb_bf16_tagLi0ELi1E|rms_rows_kernelI11kb_bf16_tagLi(1ELi0|2ELi2|8ELi2)ELi1E" \
    "$O/sass_bytes.txt" | cut -c1-120

# the shapes: few rows where the gap is, the silu regression, the large rmsnorm
PROF="silu:bf16:1:128 silu:bf16:7:4095 silu:bf16:64:4096 silu:bf16:512:4095
      rms:bf16:1:128 rms:bf16:1:4096 rms:bf16:7:4095 rms:bf16:4096:16384"
TIME="$PROF silu:f16:7:4095 silu:f32:7:4095 silu:f32:1:128 silu:bf16:1:16384 silu:bf16:32768:4095
      rms:f32:1:2048 rms:f32:7:4095 rms:f16:1:4096 rms:bf16:512:128 rms:bf16:4096:128
      rms:bf16:64:8192 rms:f16:4096:16384"
S=$(echo $PROF | wc -w)
"$EXE" --time "$B/before" "$B/after" $TIME >"$O/replays.txt" 2>&1
echo "replays: rc=$? $(( $(date +%s) - t0 )) s"
NCU_MODE=${MEM_NCU:-full}
if [ -n "$NCU" ] && [ "$NCU_MODE" = metrics ]; then
    for v in before after; do
        timeout 30 "$NCU" --clock-control none --cache-control none \
            --launch-skip $((2 * S)) --launch-count $((2 * S)) \
            --metrics gpu__time_duration.sum,sm__cycles_active.max,smsp__inst_executed.sum,smsp__sass_inst_executed_op_global_st.sum,launch__registers_per_thread \
            "$EXE" --once "$B/$v" $PROF >"$O/ncu_metrics_$v.txt" 2>&1
        echo "ncu $v: rc=$? $(( $(date +%s) - t0 )) s"
    done
    echo "ncu, profiled pass: duration us, warp instructions, global store instructions, before | after"
    for v in before after; do
        awk '/^  [a-zA-Z_]/ { k = $2 ~ /::/ ? $2 : $1; sub(/<.*/, "", k); sub(/\(.*/, "", k) }
             /gpu__time_duration/ { t = $NF } /smsp__inst_executed.sum/ { i = $NF }
             /op_global_st/ { printf "%s %s %s %s\n", k, t, i, $NF }' "$O/ncu_metrics_$v.txt" >"$O/ncu_$v.col"
    done
    paste -d'|' "$O/ncu_before.col" "$O/ncu_after.col" | column -t
elif [ -n "$NCU" ] && [ "$NCU_MODE" = full ]; then
    for v in before after; do
        timeout 60 "$NCU" --clock-control none --cache-control none \
            --launch-skip $((2 * S)) --launch-count $((2 * S)) --warp-sampling-interval 0 \
            --section LaunchStats --section Occupancy --section WarpStateStats \
            --section SchedulerStats --section SourceCounters \
            --metrics gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_active.max,smsp__inst_executed.sum,smsp__cycles_active.max \
            -f -o "$O/ncu_$v" "$EXE" --once "$B/$v" $PROF >"$O/ncu_${v}_run.txt" 2>&1
        echo "ncu $v: rc=$? $(( $(date +%s) - t0 )) s"
        "$NCU" -i "$O/ncu_$v.ncu-rep" --page details >"$O/ncu_${v}_details.txt" 2>&1
        "$NCU" -i "$O/ncu_$v.ncu-rep" --page source --csv --print-source sass \
            >"$O/ncu_${v}_source.csv" 2>&1
        "$NCU" -i "$O/ncu_$v.ncu-rep" --page raw --csv \
            --metrics gpu__time_duration.sum,sm__cycles_active.max,smsp__inst_executed.sum,launch__grid_size,launch__block_size,launch__registers_per_thread \
            >"$O/ncu_${v}_raw.csv" 2>&1
    done
    echo "ncu durations (us), profiled pass, before | after:"
    paste -d'|' <(grep -E '^  [a-zA-Z_].*\(|gpu__time_duration' "$O/ncu_before_details.txt" |
        sed -E 's/^  ([a-z_:A-Z0-9]{1,40}).*/\1/; s/ *gpu__time_duration.sum *[a-z]* */  /' |
        paste -d' ' - -) \
        <(grep -E 'gpu__time_duration' "$O/ncu_after_details.txt" | awk '{print $NF}')
fi
echo "graph replays, us per call (median of 15 replays of 40 calls over 4 input sets):"
cat "$O/replays.txt"
echo "done: $(( $(date +%s) - t0 )) s"
