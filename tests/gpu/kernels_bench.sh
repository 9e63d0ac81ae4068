#!/usr/bin/env bash
# Builds the first-party kernel packages with nvcc the way the builder does, runs each
# package's check (SASS, forced PTX JIT, compute-sanitizer), then the GPU benchmarks.
# Usage: tests/gpu/kernels_bench.sh [outdir]   (needs nvcc, a CUDA GPU, cuBLAS)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FINAL=${1:-${OUT:-/tmp/kbpkg-gpu-out}}
# logs go to a scratch folder and come back as one tarball (the device tool returns few files)
OUTDIR=/tmp/kbpkg-gpu-logs
rm -rf "$OUTDIR"
B=/tmp/kbpkg-gpu-build
mkdir -p "$OUTDIR" "$FINAL" "$B"
CUDA=${CUDA_HOME:-/usr/local/cuda}
export PATH=$CUDA/bin:$PATH
ARCHS="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86
       -gencode arch=compute_89,code=sm_89 -gencode arch=compute_90,code=sm_90
       -gencode arch=compute_80,code=compute_80"
PKGS="radeonflow/gemm:gemm:gemm kbpkg-community/activation:activation:activation
      kbpkg-community/rmsnorm:rmsnorm:rmsnorm"
status=0

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
nvcc -I"$ROOT/include" --version | tail -1

build_pkg() { # pkgdir libname source-stem
    local d=$ROOT/kernels/$1 lib=$2 src=$3
    nvcc -I"$ROOT/include" -std=c++17 -O3 --threads 4 -I"$d/include" -Xcompiler -fPIC,-fvisibility=hidden \
        -Xlinker --exclude-libs,ALL -shared $ARCHS \
        -DKBPKG_TARGET='"cuda13-sm_90-x86_64-linux"' "$d/src/$src.cu" -o "$B/lib$lib.so" &&
    nvcc -I"$ROOT/include" -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -I"$d/include" "$d/tests/check.c" \
        "$d/src/${src}_cpu.c" -L"$B" -l"$lib" -Xlinker -rpath,"$B" -o "$B/check_$lib"
}

t0=$(date +%s)
for p in $PKGS; do
    IFS=: read -r dir lib src <<<"$p"
    build_pkg "$dir" "$lib" "$src" >"$OUTDIR/build_$lib.log" 2>&1 &
done
nvcc -I"$ROOT/include" -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I"$ROOT/kernels/radeonflow/gemm/include" \
    -DKBPKG_TARGET='"cuda13-sm_90a-x86_64-linux"' -Xptxas -v "$ROOT/bench/gpu/gemm_bench.cu" -lcublas -o "$B/gemm_bench" \
    >"$OUTDIR/build_gemm_bench.log" 2>&1 &
# the sm_90a artifact (TMA + wgmma), with its check
G=$ROOT/kernels/radeonflow/gemm
(d=$B/sm90a; mkdir -p "$d" &&
 nvcc -I"$ROOT/include" -std=c++17 -O3 -I"$G/include" -Xcompiler -fPIC,-fvisibility=hidden \
    -Xlinker --exclude-libs,ALL -shared -gencode arch=compute_90a,code=sm_90a -Xptxas -v \
    -DKBPKG_TARGET='"cuda13-sm_90a-x86_64-linux"' "$G/src/gemm.cu" "$G/src/gemm_fp8.cu" "$G/src/gemm_fp8_mma.cu" -o "$d/libgemm.so" &&
 nvcc -I"$ROOT/include" -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -I"$G/include" "$G/tests/check.c" \
    "$G/src/gemm_cpu.c" -L"$d" -lgemm -Xlinker -rpath,"$d" -o "$d/check") \
    >"$OUTDIR/build_sm90a.log" 2>&1 &
# rmsnorm capped at 7 blocks: every path loops over many rows per block (both halves of the
# block kernels' scratch in use), checked normally and under racecheck
R=$ROOT/kernels/kbpkg-community/rmsnorm
(d=$B/rms_grid7; mkdir -p "$d" &&
 nvcc -I"$ROOT/include" -std=c++17 -O3 -I"$R/include" -Xcompiler -fPIC,-fvisibility=hidden \
    -Xlinker --exclude-libs,ALL -shared -gencode arch=compute_90,code=sm_90 \
    -DKB_RMS_MAX_BLOCKS=7 -DKBPKG_TARGET='"cuda13-sm_90-x86_64-linux"' "$R/src/rmsnorm.cu" \
    -o "$d/librmsnorm.so" &&
 nvcc -I"$ROOT/include" -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -I"$R/include" "$R/tests/check.c" \
    "$R/src/rmsnorm_cpu.c" -L"$d" -lrmsnorm -Xlinker -rpath,"$d" -o "$d/check") \
    >"$OUTDIR/build_rms_grid7.log" 2>&1 &
# registers and spills of the memory-bound kernels (sm_90), from the resource report
(for p in activation rmsnorm; do
    nvcc -I"$ROOT/include" -std=c++17 -O3 -I"$ROOT/kernels/kbpkg-community/$p/include" -gencode arch=compute_90,code=sm_90 \
        -Xptxas -v -c "$ROOT/kernels/kbpkg-community/$p/src/$p.cu" -o /dev/null 2>&1 |
        awk '/Compiling entry function/ {split($0, a, "\x27"); name = a[2]}
             /spill stores/ {spill = $5 " B spill"}
             /Used [0-9]+ registers/ {for (i = 1; i <= NF; i++) if ($i == "Used") r = $(i+1);
                                      printf "  %-70s %3s regs, %s\n", name, r, spill}' |
        { c++filt 2>/dev/null || cat; } | sed -E 's/^ *void //; s/\([^)]*\)//' >"$OUTDIR/regs_$p.txt"
done) &
wait
echo "builds took $(( $(date +%s) - t0 )) s"
nvcc -I"$ROOT/include" -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 \
    -I"$ROOT/kernels/kbpkg-community/activation/include" \
    -I"$ROOT/kernels/kbpkg-community/rmsnorm/include" -I"$R/src" "$ROOT/bench/gpu/mem_bench.cu" \
    -L"$B" -lactivation -lrmsnorm -Xlinker -rpath,"$B" -o "$B/mem_bench" \
    >"$OUTDIR/build_mem_bench.log" 2>&1 || { echo "mem_bench build FAILED"; tail -20 "$OUTDIR/build_mem_bench.log"; status=1; }

summary=""
note() { summary+="$1"$'\n'; echo "$1"; }
for p in $PKGS; do
    IFS=: read -r dir lib src <<<"$p"
    if [ ! -x "$B/check_$lib" ]; then
        note "$lib: BUILD FAILED"; tail -30 "$OUTDIR/build_$lib.log"; status=1; continue
    fi
    for mode in sass sass2 ptx-jit sanitizer; do
        log=$OUTDIR/check_${lib}_$mode.log
        case $mode in
        sass|sass2) timeout 300 "$B/check_$lib" >"$log" 2>&1 ;;
        ptx-jit) CUDA_FORCE_PTX_JIT=1 timeout 300 "$B/check_$lib" >"$log" 2>&1 ;;
        sanitizer) timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 \
                       "$B/check_$lib" >"$log" 2>&1 ;;
        esac
        rc=$?
        note "$lib check [$mode]: rc=$rc $(grep -m1 -o 'seed [0-9]*' "$log") $(tail -1 "$log")"
        [ $rc -eq 0 ] || { status=1; grep -m8 -E 'FAIL|rror' "$log"; }
    done
done

d=$B/rms_grid7
if [ -x "$d/check" ]; then
    for mode in plain racecheck; do
        log=$OUTDIR/check_rms_grid7_$mode.log
        if [ $mode = plain ]; then timeout 300 "$d/check" >"$log" 2>&1
        else timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 "$d/check" >"$log" 2>&1; fi
        rc=$?
        note "rmsnorm check, 7 blocks [$mode]: rc=$rc $(tail -1 "$log")"
        [ $rc -eq 0 ] || { status=1; grep -m8 -E 'FAIL|rror|hazard' "$log"; }
    done
else
    note "rmsnorm 7-block build FAILED"; tail -20 "$OUTDIR/build_rms_grid7.log"; status=1
fi

d=$B/sm90a
if [ -x "$d/check" ]; then
    for mode in sass sanitizer; do
        log=$OUTDIR/check_gemm_sm90a_$mode.log
        case $mode in
        sass) timeout 300 "$d/check" >"$log" 2>&1 ;;
        sanitizer) timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 \
                       "$d/check" >"$log" 2>&1 ;;
        esac
        rc=$?
        note "gemm sm_90a check [$mode]: rc=$rc $(tail -1 "$log")"
        [ $rc -eq 0 ] || { status=1; grep -m8 -E 'FAIL|rror' "$log"; }
    done
    cuobjdump --dump-sass "$d/libgemm.so" >"$OUTDIR/gemm_sm90a.sass" 2>&1
    cuobjdump --dump-sass "$B/libgemm.so" >"$OUTDIR/gemm_fat.sass" 2>&1
    note "SASS sm_90a: $(grep -c HGMMA "$OUTDIR/gemm_sm90a.sass") HGMMA, $(grep -c UTMALDG "$OUTDIR/gemm_sm90a.sass") UTMALDG; fat (sm_80..90): $(grep -c UTMALDG "$OUTDIR/gemm_fat.sass") UTMALDG, $(grep -c ' HMMA' "$OUTDIR/gemm_fat.sass") HMMA"
else
    note "gemm sm_90a: BUILD FAILED"; tail -30 "$OUTDIR/build_sm90a.log"; status=1
fi
echo "== GEMM vs cuBLAS"
if [ -x "$B/gemm_bench" ]; then
    grep -E "registers|spill" "$OUTDIR/build_gemm_bench.log" | sort | uniq -c | head -8
    echo "SASS of gemm_bench: $(cuobjdump --dump-sass "$B/gemm_bench" | grep -c HGMMA) HGMMA, $(cuobjdump --dump-sass "$B/gemm_bench" | grep -c ' HMMA') HMMA"
    timeout 300 "$B/gemm_bench" 2>&1 | tee "$OUTDIR/gemm_bench.txt"
else
    echo "gemm_bench build FAILED"; grep -m20 error "$OUTDIR/build_gemm_bench.log"; status=1
fi
echo "== activation / rmsnorm vs copy bandwidth (v1 = the kernels before, same run)"
cat "$OUTDIR"/regs_*.txt 2>/dev/null | grep -E "rms_rows|rms_stream|act_flat_kernel<kb_bf16|act_rows_kernel<kb_bf16" | head -12
if [ -x "$B/mem_bench" ]; then
    timeout 300 "$B/mem_bench" 2>&1 | tee "$OUTDIR/mem_bench.txt"
    rc=${PIPESTATUS[0]}
    note "mem_bench: rc=$rc $(tail -1 "$OUTDIR/mem_bench.txt")"
    [ $rc -eq 0 ] || status=1
fi
echo "== summary"
printf '%s' "$summary" | tee "$OUTDIR/summary.txt"
tar czf "$FINAL/kernels_bench_logs.tgz" -C "$OUTDIR" --exclude='*.sass' . &&
    cp "$OUTDIR"/gemm_bench.txt "$OUTDIR"/mem_bench.txt "$FINAL"/ 2>/dev/null
exit $status
