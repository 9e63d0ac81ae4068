#!/usr/bin/env bash
# Builds what bench/gpu/act_odd_run.sh runs, off the device (about 25 s here): bench/gpu/act_odd
# and the activation package with the odd-width kernel forced at every odd width it takes
# (-DACT_ODD_MIN=0) with its package check (odd0/libactivation.so, odd0/check: the check finds
# the library via $ORIGIN, so the folder can be carried to the device). ptxas's registers and
# spills of the odd-width silu_and_mul kernels go to DIR/regs.txt.
# Usage: bench/gpu/act_odd_prebuild.sh DIR
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:?usage: act_odd_prebuild.sh DIR}
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
A=$ROOT/kernels/kbpkg-community/activation
mkdir -p "$B/odd0"
nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -I"$ROOT/include" -I"$A/include" \
    -I"$A/src" -I"$ROOT/bench/gpu" "$ROOT/bench/gpu/act_odd.cu" -o "$B/act_odd" \
    >"$B/build_act_odd.log" 2>&1 &
p1=$!
(nvcc -std=c++17 -O3 -I"$ROOT/include" -I"$A/include" -Xcompiler -fPIC,-fvisibility=hidden \
    -shared -gencode arch=compute_90,code=sm_90 -Xptxas -v -DACT_ODD_MIN=0 \
    -DKBPKG_TARGET='"cuda13-sm_90-x86_64-linux"' "$A/src/activation.cu" -o "$B/odd0/libactivation.so" &&
 nvcc -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -I"$ROOT/include" -I"$A/include" \
    "$A/tests/check.c" "$A/src/activation_cpu.c" -L"$B/odd0" -lactivation \
    -Xlinker -rpath,'$ORIGIN' -o "$B/odd0/check") >"$B/odd0/build.log" 2>&1 &
p2=$!
status=0
wait $p1 || status=1
wait $p2 || status=1
# registers and spill stores of the odd-width silu_and_mul kernels (ptxas -v)
awk '/Compiling entry function/ { f = $0; next }
     /spill stores/ { sp = $5 }
     /Used [0-9]+ registers/ && f ~ /act_odd_kernelI(1[01]kb_b?f16_tag|f)Li0E/ {
         t = f ~ /bf16/ ? "bf16" : f ~ /f16/ ? "f16" : "f32"
         print "act_odd_kernel silu_and_mul " t ": " $5 " registers, " sp " bytes spilled" }' \
    "$B/odd0/build.log" | tee "$B/regs.txt"
[ $status = 0 ] || tail -20 "$B/build_act_odd.log" "$B/odd0/build.log"
exit $status
