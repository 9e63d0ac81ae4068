#!/usr/bin/env bash
# The GPU figures of docs/perf.md in one device call on the H200 (about 5 minutes): the GEMM
# shape table against cuBLAS (gemm_shapes.sh), the FP8 block-scaled GEMM against cuBLASLt FP8
# and the dequantise path (fp8_run.sh, the package build alone), and the memory-bound sweep
# against torch eager / torch.compile / copies (mem_sweep.sh), one after the other, while
# nvidia-smi samples the SM and memory clocks, power and temperature every 200 ms: each part's
# clocks are the samples taken while it ran. Clocks are left as found (never locked).
# Usage: bench/gpu/perf_all.sh [outdir]   (outdir defaults to $OUT)
# GEMM_SHAPES_PREBUILT=DIR (gemm_shapes.sh): the gemm builds made on a machine without a GPU
# (bench/gpu/gemm_build.sh into DIR/sm90a and DIR/sm90, and DIR/gemm_shapes), so the device's
# time goes to the checks and the timing; the FP8 table times DIR/sm90a's library as well.
# MEM_PREBUILT=DIR (mem_sweep.sh): what bench/gpu/mem_prebuild.sh built off the device (with
# MEM_BEFORE=tree there for the before columns).
# PERF_PARTS: which parts to run (default "gemm_shapes fp8 mem_sweep"), so the three can be split
# over two device calls on one warm machine when one call's 600 s would not hold them all.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
O=${1:-${OUT:-/tmp/kbpkg-perf}}
mkdir -p "$O"
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv | tee "$O/gpu.txt"
nvcc --version | tail -1 | tee -a "$O/gpu.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
  --format=csv,noheader,nounits -lms 200 >"$O/clocks.csv" 2>/dev/null &
SMI=$!
marks=()
PARTS=" ${PERF_PARTS:-gemm_shapes fp8 mem_sweep} "
part() { # name command...: runs it, records its start and end for the clock summary
  local name=$1 t0 rc; shift
  [[ $PARTS == *" $name "* ]] || return 0
  t0=$(date +%s.%N)
  "$@" >"$O/$name.txt" 2>&1; rc=$?
  marks+=("$name $t0 $(date +%s.%N) $rc")
  echo "== $name: rc=$rc, $(tail -1 "$O/$name.txt")"
}
part gemm_shapes bash "$ROOT/bench/gpu/gemm_shapes.sh" "$O/gemm"
# the FP8 table times the sm_90a library gemm_shapes.sh just built (and checked); or, with
# FP8_PREBUILT_DIR (fp8_prebuild.sh's folder), those builds, PERF_FP8_VARIANTS naming the
# variants to time beside the package (fp8_run.sh's FP8_VARIANTS; default none)
FP8_VARIANTS="${PERF_FP8_VARIANTS:-}" FP8_PREBUILT=${GEMM_SHAPES_PREBUILT:-${TMPDIR:-/tmp}/gemm-shapes-build}/sm90a/libgemm.so \
  part fp8 bash "$ROOT/bench/gpu/fp8_run.sh" "/tmp/kbpkg-perf-fp8"
# --twin: our export timed twice in the same interleaved rounds, so the table carries its own
# noise floor (the two readings of one library) beside every ratio
part mem_sweep bash "$ROOT/bench/gpu/mem_sweep.sh" "$O/mem" --twin
kill "$SMI" 2>/dev/null; wait "$SMI" 2>/dev/null
# per part: median SM clock, memory clock, power and temperature over the samples taken while
# the GPU was busy (utilization > 0) inside the part's time span
printf '%s\n' "${marks[@]}" >"$O/marks.txt"
python3 - "$O" <<'PY' | tee "$O/clocks_summary.txt"
import csv, datetime, statistics, sys
O = sys.argv[1]
rows = []
for r in csv.reader(open(f"{O}/clocks.csv")):
    try:
        t = datetime.datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
        rows.append((t, *[float(x) for x in r[1:6]]))
    except (ValueError, IndexError):
        pass
print("part          samples  SM MHz (median, min-max)  mem MHz  power W (median)  temp C (max)")
for line in open(f"{O}/marks.txt"):
    name, t0, t1, rc = line.split()
    s = [r for r in rows if float(t0) <= r[0] <= float(t1) and r[5] > 0]
    if not s:
        print(f"{name:<13} 0 busy samples"); continue
    sm = [r[1] for r in s]
    print(f"{name:<13} {len(s):>7}  {statistics.median(sm):6.0f} ({min(sm):.0f}-{max(sm):.0f})"
          f"          {statistics.median(r[2] for r in s):6.0f}  {statistics.median(r[3] for r in s):8.0f}"
          f"          {max(r[4] for r in s):4.0f}")
PY
[ -f "$O/gemm_shapes.txt" ] && grep -E "geomean|FAIL" "$O/gemm_shapes.txt" | head -8
[ -f "$O/fp8.txt" ] && grep -E "M x N|x " "$O/fp8.txt" | tail -9
[ -f "$O/mem_sweep.txt" ] && tail -8 "$O/mem_sweep.txt"
true
