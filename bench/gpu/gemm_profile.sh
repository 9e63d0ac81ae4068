#!/usr/bin/env bash
# Where radeonflow/gemm's TMA kernel (sm_90a) spends its time at the shapes where it trails
# cuBLAS: Nsight Compute on one warm call per shape and plan (bench/gpu/gemm_profile.cu; clocks
# left alone, caches flushed between passes as the shape table's rotated inputs miss L2), then a
# one-line summary per kernel: duration, SM / tensor / L2 / DRAM throughput, DRAM and L2 bytes,
# occupancy, the SMs' busy cycles against the launch's elapsed cycles (min/avg/max: idle SMs, ramp
# and tail), the top warp stalls. Needs ncu and prebuilt binaries (nvcc on a machine without a
# GPU is enough):
#   nvcc -std=c++17 -O2 -gencode arch=compute_90a,code=sm_90a bench/gpu/gemm_profile.cu \
#       -o DIR/gemm_profile -lcublas -ldl;   bench/gpu/gemm_build.sh kernels/radeonflow/gemm DIR/sm90a 90a
# Usage: bench/gpu/gemm_profile.sh DIR [outdir]   (GEMM_PROFILE_LIST="M N K plan ..." overrides
# the list: plan is RF_GEMM_TMA_PLAN's "tile,splits", - for the table's choice, or cublas)
set -uo pipefail
P=$1
O=${2:-${OUT:-/tmp/gemm-profile}}
mkdir -p "$O"
LIST=${GEMM_PROFILE_LIST:-"777 1000 3000 3,1  777 1000 3000 1,1  777 1000 3000 7,1
    777 1000 3000 1,2  1000 1000 1000 -  1000 1000 1000 7,1  3000 5000 2000 0,1
    3000 5000 2000 4,1  4096 4096 4096 0,1  4096 4096 4096 4,1"}
. "$(cd "$(dirname "$0")" && pwd)/find_ncu.sh"
echo "ncu: ${NCU:-none} $([ -n "$NCU" ] && "$NCU" --version | tail -1)"
[ -n "$NCU" ] || exit 1
EXTRA=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,sm__cycles_elapsed.max
GMMA=sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active
run_ncu() { # metrics
    timeout 75 "$NCU" --clock-control none --profile-from-start off -f -o "$O/prof" \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
        --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats \
        --metrics "$1" "$P/gemm_profile" "$P/sm90a/libgemm.so" $LIST >"$O/ncu_run.txt" 2>&1
}
run_ncu "$EXTRA,$GMMA"
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && run_ncu "$EXTRA" # the gmma pipe metric's name is a guess
echo "ncu rc=$? ${SECONDS}s"
"$NCU" -i "$O/prof.ncu-rep" --page details >"$O/ncu_details.txt" 2>&1
"$NCU" -i "$O/prof.ncu-rep" --page raw --csv --print-units base >"$O/ncu_raw.csv" 2>&1
python3 - "$O/ncu_raw.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = rows[0]
col = {h: i for i, h in enumerate(head)}
def g(r, k):
    i = col.get(k)
    return r[i] if i is not None else "-"
stall = [h for h in head if h.startswith("smsp__average_warps_issue_stalled_") and h.endswith("_per_issue_active.ratio")]
print("kernel | grid | us | SM% | gmma% | L2% | DRAM% | DRAM MB rd | DRAM TB/s | L2 MB | L2 hit% | occ | SM active min/avg/max % of elapsed | top stalls (cycles per issue)")
for r in rows[2:]:
    name = g(r, "Kernel Name")
    # ours: the ts_cfg arguments; cuBLAS: the name up to its parameter list (tile, split-K)
    short = name.split("ts_cfg<")[-1].split(">")[0] if "ts_cfg" in name else name.split("(")[0][:90]
    st = sorted(((float(g(r, h) or 0), h[len("smsp__average_warps_issue_stalled_"):-len("_per_issue_active.ratio")]) for h in stall if g(r, h) not in ("", "-")), reverse=True)[:4]
    def num(k):
        try:
            return float(g(r, k).replace(",", ""))
        except ValueError:
            return None
    def rate(r):  # DRAM bytes read over the kernel's duration
        b, t = num("dram__bytes_read.sum"), num("gpu__time_duration.sum")
        return "%.2f" % (b / t / 1e3) if b and t else "-"
    def active(r):  # SM busy cycles against the launch's elapsed cycles: ramp, tail, idle SMs
        e = num("sm__cycles_elapsed.max")
        v = [num("sm__cycles_active." + s) for s in ("min", "avg", "max")]
        return "/".join("%.0f" % (100 * x / e) for x in v) if e and None not in v else "-"
    def f(k, scale=1.0, fmt="%.1f"):
        v = g(r, k)
        try:
            return fmt % (float(v.replace(",", "")) * scale)
        except ValueError:
            return "-"
    print(" | ".join([short, g(r, "launch__grid_size"), f("gpu__time_duration.sum", 1e-3),
          f("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
          f("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"),
          f("lts__throughput.avg.pct_of_peak_sustained_elapsed"),
          f("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
          f("dram__bytes_read.sum", 1e-6), rate(r), f("lts__t_bytes.sum", 1e-6),
          f("lts__t_sector_hit_rate.pct"), f("sm__warps_active.avg.pct_of_peak_sustained_active"),
          active(r),
          " ".join("%s %.1f" % (n, v) for v, n in st)]))
PY
