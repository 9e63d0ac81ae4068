#!/usr/bin/env bash
# radeonflow/gemm's skinny kernel (M <= 64) on an H200 in one device call: gemm_shapes.cu
# (gemm_shapes.sh without its checks, every skinny plan beside the TMA picks at M <= 64; with
# GEMM_SKINNY_TUNE=1 only those shapes; a baseline build in DIR/baseline is "before") while
# the sm_90 package check and the check mutants run (gemm_check_mutants.sh: the real sm_90a
# check and every mutant, GEMM_MUTANTS_LIST to choose), then compute-sanitizer over the check.
# Builds made on a machine with nvcc and no GPU (no GPU time spent building):
#   bash bench/gpu/gemm_build.sh kernels/radeonflow/gemm DIR/sm90a 90a   # and DIR/sm90 90
#   nvcc ... bench/gpu/gemm_shapes.cu -lcublas -o DIR/gemm_shapes        # as gemm_shapes.sh does
#   TMPDIR=DIR GEMM_MUTANTS_BUILD_ONLY=1 bash bench/gpu/gemm_check_mutants.sh
# Usage: GEMM_SHAPES_PREBUILT=DIR bash bench/gpu/gemm_skinny.sh [outdir]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUTDIR=${1:-${OUT:-/tmp/gemm-skinny}}
B=${GEMM_SHAPES_PREBUILT:?builds from gemm_build.sh, see the header}
mkdir -p "$OUTDIR/mutants" "$OUTDIR/shapes"
mutants() { # GEMM_MUTANTS_SAN value
    TMPDIR=$B GEMM_MUTANTS_PREBUILT=1 GEMM_MUTANTS_SAN=$1 \
        bash "$ROOT/bench/gpu/gemm_check_mutants.sh" "$OUTDIR/mutants"
}
# The checks spend their time in the CPU's fp64 references (one check takes 1.5-2.5 minutes),
# so they run on the other cores while the table is timed: their GPU work is a few
# milliseconds of small launches spread over that time.
t0=$(date +%s)
(LD_LIBRARY_PATH="$B/sm90" "$B/sm90/check" >"$OUTDIR/check_sm90.log" 2>&1
 echo "exit $?" >>"$OUTDIR/check_sm90.log") &
mutants 0 >"$OUTDIR/mutants.txt" 2>&1 &
if [ "${GEMM_SKINNY_TUNE:-0}" = 1 ]; then
    export GEMM_SHAPES_MAXM=64
fi
GEMM_SHAPES_SKINNY_SWEEP=1 GEMM_SHAPES_NO_CHECKS=1 bash "$ROOT/bench/gpu/gemm_shapes.sh" \
    "$OUTDIR/shapes"
status=$?
wait
echo "checks and mutants: $(($(date +%s) - t0)) s"
echo "check sm90: $(tail -2 "$OUTDIR/check_sm90.log" | tr '\n' ' ')"
cat "$OUTDIR/mutants.txt"
grep -q '^exit 0$' "$OUTDIR/check_sm90.log" || status=1
grep -q '^real: 0 FAIL lines, exit 0$' "$OUTDIR/mutants.txt" || status=1
t1=$(date +%s)
mutants only >"$OUTDIR/sanitizers.txt" 2>&1
echo "sanitizers: $(($(date +%s) - t1)) s"
cat "$OUTDIR/sanitizers.txt"
exit $status
