#!/usr/bin/env bash
# A/B of two builds of radeonflow/gemm on the H200, everything prebuilt off the device (one device
# call, ~6 minutes): gemm_shapes with both libraries loaded through dlopen in the same
# rounds (GEMM_AB_RUNS times, default 2, so the table carries its own repeat), the FP8 table with
# both builds interleaved, then the new build's package checks (sm_90a split over three
# processes by plan rows, and sm_90). nvidia-smi samples clocks and power throughout.
# DIR holds what gemm_build.sh / gemm_shapes.sh leave: sm90a/ and sm90/ (new: libgemm.so and
# check), baseline/ (old: libgemm.so), gemm_shapes (compiled against the new tree), and fp8/
# (libgemm.so = new, libgemm_old.so = old, check_fp8_gemm, build_gemm*.log; fp8_run.sh's
# FP8_PREBUILT_DIR layout).
# Usage: bench/gpu/gemm_ab.sh DIR OUTDIR
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$(cd "$1" && pwd) O=$2
mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv,noheader
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,utilization.gpu \
    --format=csv,noheader,nounits -lms 200 >"$O/clocks.csv" 2>/dev/null &
SMI=$!
status=0
for run in $(seq 1 "${GEMM_AB_RUNS:-2}"); do
    t1=$(date +%s)
    GEMM_BASELINE_LIB="$D/baseline/libgemm.so" GEMM_AFTER_LIB="$D/sm90a/libgemm.so" \
        GEMM_SHAPES_TILES="${GEMM_SHAPES_TILES:-8}" "$D/gemm_shapes" "$O/gemm_shapes_full_$run.log" \
        >"$O/gemm_shapes_$run.txt" 2>&1 || status=1
    echo "gemm_shapes run $run: $(($(date +%s) - t1)) s"
    grep -E "geomean" "$O/gemm_shapes_$run.txt"
done
t2=$(date +%s)
# fp8_run.sh copies the libraries and checks into its folder: keep it out of OUTDIR, whose
# files a device call brings back (too many files there and none came back, 2026-12-05)
FP8W=$(mktemp -d)
FP8_PREBUILT_DIR="$D/fp8" FP8_VARIANTS='old:' FP8_SASS=0 FP8_CHECK_FP8ONLY=1 FP8_CHECKS=gemm \
    bash "$ROOT/bench/gpu/fp8_run.sh" "$FP8W" >"$O/fp8.txt" 2>&1 || status=1
cp "$FP8W"/rounds.json "$FP8W"/*.log "$O/" 2>/dev/null
echo "fp8: $(($(date +%s) - t2)) s"
tail -14 "$O/fp8.txt"
# the checks after the timing, so a slow check cannot cost the table; each check is waited on by
# its pid (a bare `wait` would wait for the nvidia-smi sampler too, which never ends)
t0=$(date +%s)
pids=""
for rows in 0,3 4,9 10,10; do
    RF_CHECK_PLAN_TILES=$rows LD_LIBRARY_PATH="$D/sm90a" timeout -k 5 "${GEMM_AB_CHECK_TIMEOUT:-200}" \
        "$D/sm90a/check" >"$O/check_sm90a_rows${rows/,/-}.log" 2>&1 &
    pids="$pids $!"
done
RF_CHECK_PLAN_TILES=0,9 LD_LIBRARY_PATH="$D/sm90" timeout -k 5 "${GEMM_AB_CHECK_TIMEOUT:-200}" \
    "$D/sm90/check" >"$O/check_sm90.log" 2>&1 &
pids="$pids $!"
for p in $pids; do wait "$p"; done
for f in "$O"/check_*.log; do
    echo "$(basename "$f"): $(grep -c '^check: ok' "$f") ok, $(grep -c 'FAIL' "$f") FAIL, $(tail -1 "$f")"
    grep -q '^check: PASSED' "$f" || status=1
done
grep -h "NaN in A and B\|NaN propagation" "$O"/check_*.log | sort | uniq -c
echo "checks: $(($(date +%s) - t0)) s"
kill "$SMI" 2>/dev/null
wait "$SMI" 2>/dev/null
python3 - "$O/clocks.csv" <<'PY'
import csv, statistics, sys
s = [r for r in csv.reader(open(sys.argv[1])) if len(r) >= 5 and r[4].strip() not in ("", "0")]
try:
    sm = [float(r[1]) for r in s]; pw = [float(r[2]) for r in s]
    print(f"busy samples {len(s)}: SM clock median {statistics.median(sm):.0f} MHz "
          f"({min(sm):.0f}-{max(sm):.0f}), power median {statistics.median(pw):.0f} W")
except (ValueError, statistics.StatisticsError):
    print("no clock samples")
PY
exit $status
