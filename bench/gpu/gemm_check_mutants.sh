#!/usr/bin/env bash
# Can the package check fail? Builds radeonflow/gemm for sm_90a as it is and with deliberate
# bugs (two in the staged TMA-store epilogue, one in the split-K reduce, three in the skinny
# kernel), runs the check on each (the first must pass, every mutant must fail), then
# compute-sanitizer memcheck and racecheck over the check's TMA and skinny kernels (the four at
# once). Needs nvcc and a Hopper GPU. At most 11 logs under OUTDIR.
# GEMM_MUTANTS_BUILD_ONLY=1 only builds (on a machine without the GPU); GEMM_MUTANTS_PREBUILT=1
# runs what such a build left in $TMPDIR/gemm-mutants (copied there), without building.
# GEMM_MUTANTS_SAN=0 skips compute-sanitizer, =only runs only it (on a prebuilt real variant).
# Usage: bench/gpu/gemm_check_mutants.sh [outdir]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
G=$ROOT/kernels/radeonflow/gemm
OUTDIR=${1:-${OUT:-/tmp/gemm-mutants}}
W=${TMPDIR:-/tmp}/gemm-mutants
[ "${GEMM_MUTANTS_PREBUILT:-0}" = 1 ] || rm -rf "$W"
mkdir -p "$OUTDIR" "$W"

# A copy of the package with one sed edit of src/gemm.cu (none for "real"), built as usual;
# GEMM_MUTANTS_LIST="real perm ..." runs only those.
variant() { # name [sed-expression]
    case " $MUTANTS " in *" $1 "*) ;; *) echo "not run"; return 0 ;; esac
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
SAN_MODE=${GEMM_MUTANTS_SAN:-1}
MUTANTS=${GEMM_MUTANTS_LIST:-real rows beta skip perm ktail warp0}
[ "$SAN_MODE" = only ] && MUTANTS=
if [ "$SAN_MODE" != only ]; then
    variant real >"$OUTDIR/real.log" 2>&1 &
    # both warpgroups of a 128-row tile store to its first 64 rows
    variant rows 's/w\.m0 + wg \* 64, w\.n0 + r \* C::EPI/w.m0, w.n0 + r * C::EPI/' >"$OUTDIR/rows.log" 2>&1 &
    # beta ignored: C with 16-byte rows leaves through the staging even when beta != 0
    variant beta 's/beta == 0\.0f && ((uintptr_t)Cm & 15)/((uintptr_t)Cm \& 15)/' >"$OUTDIR/beta.log" 2>&1 &
    # the split-K reduce sums every part but the first
    variant skip 's/for (int s = 0; s < a\.splits; s++) {/for (int s = 1; s < a.splits; s++) {/' >"$OUTDIR/skip.log" 2>&1 &
    # the skinny kernel: row g + 8 of each mma fragment built from column 2j (not 2j + 1) of B
    variant perm 's/__byte_perm(w0, w1, 0x7632)/__byte_perm(w0, w1, 0x5410)/' >"$OUTDIR/perm.log" 2>&1 &
    # the skinny kernel drops the last k-rows when K is not a multiple of 16
    variant ktail 's/const int steps = (a\.K + SK_STEP - 1) \/ SK_STEP;/const int steps = a.K \/ SK_STEP;/' >"$OUTDIR/ktail.log" 2>&1 &
    # the skinny kernel's in-block reduction leaves out warp 0's partial sums
    variant warp0 's/for (int w = 0; w < warps; w++) {/for (int w = 1; w < warps; w++) {/' >"$OUTDIR/warp0.log" 2>&1 &
    wait
fi
[ "${GEMM_MUTANTS_BUILD_ONLY:-0}" = 1 ] && exit 0
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
SAN_TOOLS="memcheck racecheck"
[ "$SAN_MODE" = 0 ] && SAN_TOOLS=
for tool in $SAN_TOOLS; do
    for k in gemm_tma gemm_skinny; do
        (LD_LIBRARY_PATH="$W/real${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            "$SAN" --tool $tool --error-exitcode 9 --kernel-name kns=$k "$W/real/check" \
            >"$OUTDIR/san_${tool}_$k.log" 2>&1
         echo "exit $?" >>"$OUTDIR/san_${tool}_$k.log") &
    done
done
wait
for v in $MUTANTS; do
    echo "$v: $(grep -c 'check: FAIL' "$OUTDIR/$v.log") FAIL lines, $(tail -1 "$OUTDIR/$v.log")"
done
for tool in $SAN_TOOLS; do
    for k in gemm_tma gemm_skinny; do
        f=$OUTDIR/san_${tool}_$k.log
        echo "$tool $k: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$f" | tail -1), $(tail -1 "$f")"
    done
done
