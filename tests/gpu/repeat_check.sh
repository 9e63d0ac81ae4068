#!/usr/bin/env bash
# Runs one package's check many times with fresh seeds, its CPU reference built at -O0 and at
# -O2 (what `kbpkg test` uses), and prints every failing line with its seed: for checks that
# fail rarely. Usage: tests/gpu/repeat_check.sh PKGDIR LIBNAME RUNS   (needs nvcc and a GPU)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
d=$ROOT/kernels/$1 lib=$2 runs=${3:-20}
B=/tmp/kbpkg-repeat-$lib
mkdir -p "$B"
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
nvcc -std=c++17 -O3 -I"$d/include" -Xcompiler -fPIC -shared -gencode arch=compute_90,code=sm_90 \
    -DKBPKG_TARGET='"cuda13-sm_90-x86_64-linux"' "$d/src/$lib.cu" -o "$B/lib$lib.so" || exit 1
for opt in O0 O2; do
    nvcc -$opt -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -I"$d/include" -I"$d/src" "$d/tests/check.c" \
        "$d/src/${lib}_cpu.c" -L"$B" -l"$lib" -Xlinker -rpath,"$B" -o "$B/check_$opt" -lm || exit 1
done
fails=0
for i in $(seq 1 "$runs"); do
    for opt in O0 O2; do
        seed=$(( (RANDOM << 32) ^ (RANDOM << 16) ^ RANDOM ^ i ))
        if ! KBPKG_CHECK_SEED=$seed "$B/check_$opt" >"$B/out" 2>&1; then
            fails=$((fails + 1))
            echo "== $opt seed $seed"; grep -E "FAIL|got" "$B/out" | head -8
        fi
    done
done
echo "$lib: $fails failing runs of $((2 * runs))"
[ $fails = 0 ]
