#!/usr/bin/env bash
# Builds what bench/gpu/act_odd_run.sh runs, off the device (about 40 s here): bench/gpu/act_odd
# and, per odd-width kernel variant (ACT_ODD_MODE x ACT_ODD_MINB, activation.cu), the activation
# package with the odd-width kernel forced at every odd width it takes (-DACT_ODD_MIN=0) and its
# package check (mMbB/libactivation.so, mMbB/check: the check finds the library via $ORIGIN, so
# the folder can be carried to the device). ptxas's registers and spills per variant go to
# DIR/regs.txt. Usage: bench/gpu/act_odd_prebuild.sh DIR
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:?usage: act_odd_prebuild.sh DIR}
VARIANTS=${ACT_ODD_VARIANTS:-"0 1,1 1,1 8,2 1,2 8"}
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
A=$ROOT/kernels/kbpkg-community/activation
mkdir -p "$B"
pids=()
nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -I"$ROOT/include" -I"$A/include" \
    -I"$A/src" -I"$ROOT/bench/gpu" "$ROOT/bench/gpu/act_odd.cu" -o "$B/act_odd" \
    >"$B/build_act_odd.log" 2>&1 &
pids+=($!)
IFS=, read -ra vs <<<"$VARIANTS"
for v in "${vs[@]}"; do
    set -- $v
    o=$B/m$1b$2
    mkdir -p "$o"
    (nvcc -std=c++17 -O3 -I"$ROOT/include" -I"$A/include" -Xcompiler -fPIC,-fvisibility=hidden \
        -shared -gencode arch=compute_90,code=sm_90 -Xptxas -v -DACT_ODD_MIN=0 \
        -DACT_ODD_MODE=$1 -DACT_ODD_MINB=$2 -DKBPKG_TARGET='"cuda13-sm_90-x86_64-linux"' \
        "$A/src/activation.cu" -o "$o/libactivation.so" &&
     nvcc -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -I"$ROOT/include" -I"$A/include" \
        "$A/tests/check.c" "$A/src/activation_cpu.c" -L"$o" -lactivation \
        -Xlinker -rpath,'$ORIGIN' -o "$o/check") >"$o/build.log" 2>&1 &
    pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
# registers and spill stores of each variant's silu_and_mul kernels (ptxas -v)
for v in "${vs[@]}"; do
    set -- $v
    echo "mode $1 minb $2:"
    awk '/Compiling entry function/ { f = $0; next }
         /spill stores/ { sp = $5 }
         /Used [0-9]+ registers/ && f ~ /act_odd_kernelI(1[01]kb_b?f16_tag|f)Li0E/ {
             t = f ~ /bf16/ ? "bf16" : f ~ /f16/ ? "f16" : "f32"; print "  " t, $5, "registers,", sp, "bytes spilled" }' \
        "$B/m$1b$2/build.log"
done | tee "$B/regs.txt"
[ $status = 0 ] || { tail -20 "$B"/build_act_odd.log "$B"/m*/build.log; }
exit $status
