#!/usr/bin/env bash
# Builds what bench/gpu/mem_sweep.sh runs, off the device or on it: both packages for sm_90
# (librmsnorm.so, libactivation.so), their package checks (check_rmsnorm, check_activation),
# rmsnorm capped at 7 blocks with its check (grid7/), activation with the odd-width kernel
# forced (odd0/, -DACT_ODD_MIN=0) with its check, mem_variants.so, and with MEM_BEFORE=tree
# that tree's two packages (before/). Checks find their library through $ORIGIN, so the folder
# can be carried to the device: MEM_PREBUILT=DIR bash bench/gpu/mem_sweep.sh then builds nothing.
# Usage: [MEM_BEFORE=tree] bench/gpu/mem_prebuild.sh DIR [logdir]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:?usage: mem_prebuild.sh DIR [logdir]}
LOGS=${2:-$B/logs}
mkdir -p "$B/grid7" "$LOGS"
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
INC="-I$ROOT/include"
build() { # name source [extra flags...]: a shared library for sm_90
    local out=$1 src=$2
    shift 2
    nvcc -std=c++17 -O3 $INC -Xcompiler -fPIC,-fvisibility=hidden -shared \
        -gencode arch=compute_90,code=sm_90 -Xptxas -v \
        -DKBPKG_TARGET='"cuda13-sm_90-x86_64-linux"' "$@" "$src" -o "$out"
}
check_bin() { # package libdir out
    local d=$ROOT/kernels/kbpkg-community/$1
    nvcc -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY $INC -I"$d/include" "$d/tests/check.c" \
        "$d/src/${1}_cpu.c" -L"$2" -l"$1" -Xlinker -rpath,'$ORIGIN' -o "$3"
}
builds=()
for p in activation rmsnorm; do
    d=$ROOT/kernels/kbpkg-community/$p
    (build "$B/lib$p.so" "$d/src/$p.cu" -I"$d/include" && check_bin "$p" "$B" "$B/check_$p") \
        >"$LOGS/build_$p.log" 2>&1 &
    builds+=($!)
done
if [ -n "${MEM_BEFORE:-}" ]; then
    mkdir -p "$B/before"
    for p in activation rmsnorm; do
        d=$MEM_BEFORE/kernels/kbpkg-community/$p
        INC="-I$MEM_BEFORE/include" build "$B/before/lib$p.so" "$d/src/$p.cu" -I"$d/include" \
            >"$LOGS/build_before_$p.log" 2>&1 &
        builds+=($!)
    done
fi
# activation with every odd width of at least one 16-byte unit on the odd-width kernel (odd0/)
A=$ROOT/kernels/kbpkg-community/activation
mkdir -p "$B/odd0"
(build "$B/odd0/libactivation.so" "$A/src/activation.cu" -I"$A/include" -DACT_ODD_MIN=0 &&
 check_bin activation "$B/odd0" "$B/odd0/check") >"$LOGS/build_odd0.log" 2>&1 &
builds+=($!)
R=$ROOT/kernels/kbpkg-community/rmsnorm
(build "$B/grid7/librmsnorm.so" "$R/src/rmsnorm.cu" -I"$R/include" -DKB_RMS_MAX_BLOCKS=7 &&
 check_bin rmsnorm "$B/grid7" "$B/grid7/check") >"$LOGS/build_grid7.log" 2>&1 &
builds+=($!)
build "$B/libmem_variants.so" "$ROOT/bench/gpu/mem_variants.cu" -I"$R/include" -I"$R/src" \
    >"$LOGS/build_variants.log" 2>&1 &
builds+=($!)
status=0
for b in "${builds[@]}"; do wait "$b" || status=1; done
exit $status
