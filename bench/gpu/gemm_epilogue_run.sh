#!/usr/bin/env bash
# One H200 call for the staged bf16/f16 epilogue (issue 16): bench/gpu/gemm_shapes.sh (package
# checks for sm_90a and sm_90, the forced-plan sweep, the shape table with the epilogue from
# registers and both staging widths side by side), then what only a GPU shows about the check:
# two deliberately broken epilogues (built while the table runs) that the package check must
# fail, and compute-sanitizer memcheck and racecheck over the check's TMA kernels. Leaves at most
# 8 logs in OUTDIR (the device tool returns no more).
# Usage: bench/gpu/gemm_epilogue_run.sh [outdir]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
G=$ROOT/kernels/radeonflow/gemm
OUTDIR=${1:-${OUT:-/tmp/gemm-epilogue}}
W=${TMPDIR:-/tmp}/gemm-epilogue
rm -rf "$W"
mkdir -p "$OUTDIR" "$W/shapes"

# A copy of the package with one sed edit of src/gemm.cu, built like the real one.
mutant() { # name sed-expression
    local d=$W/$1
    mkdir -p "$d" && cp -r "$G" "$d/pkg" && sed -i "$2" "$d/pkg/src/gemm.cu"
    if cmp -s "$G/src/gemm.cu" "$d/pkg/src/gemm.cu"; then
        echo "mutant $1: the edit did not apply"
        return 1
    fi
    bash "$ROOT/bench/gpu/gemm_build.sh" "$d/pkg" "$d" 90a
}
# both warpgroups of a 128-row tile store to the first 64 rows
mutant rows 's/w\.m0 + wg \* 64, w\.n0 + r \* C::EPI/w.m0, w.n0 + r * C::EPI/' >"$W/build_rows.log" 2>&1 &
# beta is ignored: C with 16-byte rows leaves through the staging even when beta != 0
mutant beta 's/beta == 0\.0f && ((uintptr_t)Cm & 15)/((uintptr_t)Cm \& 15)/' >"$W/build_beta.log" 2>&1 &

timeout 140 bash "$ROOT/bench/gpu/gemm_shapes.sh" "$W/shapes" >"$W/console.txt" 2>&1
echo "gemm_shapes.sh exit $?" >>"$W/console.txt"
wait

# correctness only from here on: run side by side
for m in rows beta; do
    if [ -x "$W/$m/check" ]; then
        (timeout 45 "$W/$m/check" >"$W/check_$m.log" 2>&1; echo "exit $?" >>"$W/check_$m.log") &
    else
        echo "BUILD FAILED" >"$W/check_$m.log"
    fi
done
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
    (timeout 45 "$SAN" --tool $tool --error-exitcode 9 --kernel-name kns=gemm_tma \
        "${TMPDIR:-/tmp}/gemm-shapes-build/sm90a/check" >"$W/san_$tool.log" 2>&1
     echo "exit $?" >>"$W/san_$tool.log") &
done
wait

cp "$W/console.txt" "$OUTDIR/console.txt"
cp "$W/shapes/gemm_shapes_full.log" "$OUTDIR/" 2>/dev/null
cat "$W/shapes"/build_*.log "$W"/build_*.log >"$OUTDIR/builds.log" 2>/dev/null
for f in "$W/shapes"/check_*.log "$W"/check_*.log "$W"/san_*.log; do
    echo "==== $(basename "$f")"
    cat "$f"
done >"$OUTDIR/checks.log" 2>&1

# the short table last
grep -E "^check|^sweep|^builds|^shapes|gemm_shapes.sh exit" "$W/console.txt"
sed -n '/^rf_gemm (sm_90a/,$p' "$W/console.txt"
for m in rows beta; do
    echo "mutant $m: $(grep -c 'check: FAIL' "$W/check_$m.log") FAIL lines; $(tail -2 "$W/check_$m.log" | tr '\n' ' ')"
    grep -m3 'check: FAIL' "$W/check_$m.log"
done
for tool in memcheck racecheck; do
    echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/san_$tool.log" | tail -1) $(tail -1 "$W/san_$tool.log")"
done
