#!/usr/bin/env bash
# Can the package check fail? Builds radeonflow/gemm for sm_90a as it is and with deliberate
# bugs (two in the staged TMA-store epilogue, one in the split-K reduce), runs the check on each
# (the first must pass, every mutant must fail), then compute-sanitizer memcheck and racecheck
# over the check's TMA kernels. Needs nvcc and a Hopper GPU. At most 9 logs under OUTDIR.
# GEMM_MUTANTS_BUILD_ONLY=1 only builds (on a machine without the GPU); GEMM_MUTANTS_PREBUILT=1
# runs what such a build left in $TMPDIR/gemm-mutants (copied there), without building.
# Usage: bench/gpu/gemm_check_mutants.sh [outdir]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
G=$ROOT/kernels/radeonflow/gemm
OUTDIR=${1:-${OUT:-/tmp/gemm-mutants}}
W=${TMPDIR:-/tmp}/gemm-mutants
[ "${GEMM_MUTANTS_PREBUILT:-0}" = 1 ] || rm -rf "$W"
mkdir -p "$OUTDIR" "$W"

# A copy of the package with one sed edit of src/gemm.cu (none for "real"), built as usual.
variant() { # name [sed-expression]
    local d=$W/$1
    if [ "${GEMM_MUTANTS_PREBUILT:-0}" != 1 ]; then
        mkdir -p "$d" && cp -r "$G" "$d/pkg"
        if [ $# -gt 1 ]; then
            sed -i "$2" "$d/pkg/src/gemm.cu"
            if cmp -s "$G/src/gemm.cu" "$d/pkg/src/gemm.cu"; then
                echo "variant $1: the edit did not apply"
                return 1
            fi
        fi
        bash "$ROOT/bench/gpu/gemm_build.sh" "$d/pkg" "$d" 90a || return 1
    fi
    [ "${GEMM_MUTANTS_BUILD_ONLY:-0}" = 1 ] && return 0
    LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$d/check"
    echo "exit $?"
}
variant real >"$OUTDIR/real.log" 2>&1 &
# both warpgroups of a 128-row tile store to its first 64 rows
variant rows 's/w\.m0 + wg \* 64, w\.n0 + r \* C::EPI/w.m0, w.n0 + r * C::EPI/' >"$OUTDIR/rows.log" 2>&1 &
# beta ignored: C with 16-byte rows leaves through the staging even when beta != 0
variant beta 's/beta == 0\.0f && ((uintptr_t)Cm & 15)/((uintptr_t)Cm \& 15)/' >"$OUTDIR/beta.log" 2>&1 &
# the split-K reduce sums every part but the first
variant skip 's/for (int s = 0; s < a\.splits; s++) {/for (int s = 1; s < a.splits; s++) {/' >"$OUTDIR/skip.log" 2>&1 &
wait
[ "${GEMM_MUTANTS_BUILD_ONLY:-0}" = 1 ] && exit 0
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
    LD_LIBRARY_PATH="$W/real${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$SAN" --tool $tool --error-exitcode 9 --kernel-name kns=gemm_tma "$W/real/check" \
        >"$OUTDIR/san_$tool.log" 2>&1
    echo "exit $?" >>"$OUTDIR/san_$tool.log"
done
for v in real rows beta skip; do
    echo "$v: $(grep -c 'check: FAIL' "$OUTDIR/$v.log") FAIL lines, $(tail -1 "$OUTDIR/$v.log")"
done
for tool in memcheck racecheck; do
    echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUTDIR/san_$tool.log" | tail -1), $(tail -1 "$OUTDIR/san_$tool.log")"
done
