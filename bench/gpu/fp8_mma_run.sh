#!/usr/bin/env bash
# FP8 block-scaled GEMM, the mma.sync fallback (sm_89 / plain sm_90) on the H200: builds
# radeonflow/gemm for the plain sm_90 target and runs the package check with it, shows the
# matrix instructions of the mma kernel, then times rf_gemm_fp8_blockscale from libraries built
# side by side: the sm_90 build (mma.sync, the default), the same with the PTX m16n8k32 e4m3
# instruction left to ptxas, with one tile height forced (64 or 128 rows), the portable SIMT
# kernel (a library whose target id names sm_80, compiled for sm_90 so it runs here) and the
# sm_90a wgmma build, against cuBLASLt FP8 through torch._scaled_mm (row-wise scales) and the
# dequantise-then-matmul path, in one process (CUDA events, medians of 30, 4 input sets rotated
# so no operand is timed out of L2). Needs nvcc + torch. Usage: bench/gpu/fp8_mma_run.sh [workdir]
# (default /tmp/rf-fp8-mma); with $OUT set, the check log, the timings and the SASS of the mma
# kernel are copied there.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PKG=$ROOT/kernels/radeonflow/gemm
W=${1:-/tmp/rf-fp8-mma}
mkdir -p "$W"
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
FP8="$PKG/src/gemm_fp8.cu $PKG/src/gemm_fp8_mma.cu"
# lib NAME TARGET-ARCH CODEGEN SOURCES [nvcc flags]: a shared library as the builder makes one
lib() {
  local name=$1 arch=$2 gen=$3 src=$4
  shift 4
  nvcc -std=c++17 -O3 -I"$PKG/include" -I"$PKG/src" -I"$ROOT/include" \
    -DKBPKG_TARGET="\"cuda13-$arch-x86_64-linux\"" -Xcompiler -fPIC,-fvisibility=hidden \
    -Xlinker --exclude-libs,ALL -shared -Xptxas -v $gen "$@" $src -o "$W/lib$name.so" \
    >"$W/build-$name.log" 2>&1 || { echo "build $name failed"; tail -30 "$W/build-$name.log"; return 1; }
}
lib gemm sm_90 -arch=sm_90 "$PKG/src/gemm.cu $FP8" &
lib ptx sm_90 -arch=sm_90 "$FP8" -DRF_FP8_MMA_PTX_ON_SM90 &
lib bm64 sm_90 -arch=sm_90 "$FP8" -DRF_FP8_MMA_BM=64 &
lib bm128 sm_90 -arch=sm_90 "$FP8" -DRF_FP8_MMA_BM=128 &
lib simt sm_80 -arch=sm_90 "$FP8" &
lib wgmma sm_90a "-gencode arch=compute_90a,code=sm_90a" "$FP8" &
nvcc -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -I"$PKG/include" -I"$ROOT/include" -c \
  "$PKG/tests/check.c" -o "$W/check.o" &
for j in $(jobs -p); do wait "$j" || true; done
[ -f "$W/libgemm.so" ] && [ -f "$W/check.o" ] || exit 1
echo "built in ${SECONDS}s"
nvcc "$W/check.o" "$PKG/src/gemm_cpu.c" -I"$PKG/include" -I"$ROOT/include" -DKBPKG_REFERENCE_ONLY \
  -L"$W" -lgemm -Xlinker -rpath,"$W" -o "$W/check"
grep -A2 "gemm_fp8_mma" "$W/build-gemm.log" | grep -E "registers|spill" | sed 's/^/ptxas: /' || true
if command -v cuobjdump >/dev/null; then
  for v in gemm ptx; do
    cuobjdump --dump-sass "$W/lib$v.so" >"$W/sass-$v.txt" 2>&1 || true
    awk '/Function : .*gemm_fp8_mma.*128/{f=1} /Function : /&&!/gemm_fp8_mma.*128/{f=0} f' \
      "$W/sass-$v.txt" >"$W/sass-$v-bm128.txt"
    s=$W/sass-$v-bm128.txt
    echo "sass $v gemm_fp8_mma<128>: $(grep -c HMMA "$s") HMMA, $(grep -c QMMA "$s") QMMA," \
      "$(grep -c F2FP "$s") F2FP, $(grep -c LDSM "$s") LDSM, $(grep -c 'LDL\|STL' "$s") LDL/STL"
  done
fi
"$W/check" >"$W/check.log" 2>&1 && echo "check: PASSED (sm_90 build)" || echo "check: FAILED (sm_90 build)"
grep -E "library|fp8|FAIL" "$W/check.log" | tail -24
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv,noheader || true
W=$W PYTHONPATH="$ROOT/bench/gpu" python3 - <<'PY'
import os, torch
from fp8_common import export, inputs, med, dequant_matmul, unit_rowwise_scales, rowwise, fp64, relerr
W = os.environ["W"]
VARIANTS = [v for v in ["gemm", "ptx", "bm64", "bm128", "simt", "wgmma"] if os.path.exists(f"{W}/lib{v}.so")]
fns = {v: export(f"{W}/lib{v}.so") for v in VARIANTS}
s = torch.cuda.current_stream().cuda_stream
log = open(f"{W}/timing.txt", "w")
# unaligned A (1 byte off): the mma kernel declines it and the SIMT kernel answers
M, N, K = 257, 383, 384
buf = (torch.randn(M * K + 16, device="cuda") / 4).to(torch.float8_e4m3fn)
A = buf[1:1 + M * K].view(M, K)
B = (torch.randn(N, K, device="cuda") / 4).to(torch.float8_e4m3fn)
sa = torch.rand(M, K // 128, device="cuda") + 0.5
sb = torch.rand((N + 127) // 128, K // 128, device="cuda") + 0.5
C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
rc = fns["gemm"](M, N, K, A.data_ptr(), sa.data_ptr(), B.data_ptr(), sb.data_ptr(), C.data_ptr(), s)
torch.cuda.synchronize()
e, nan = relerr(C, fp64(A, sa, B, sb))
print(f"unaligned A {M}x{N}x{K}: rc {rc}, rel err {e:.2e}, NaN {nan}", file=log)
print(f"unaligned A {M}x{N}x{K}: rc {rc}, rel err {e:.2e}, NaN {nan}")
shapes = [(4096, 4096, 4096), (128, 7168, 2048), (4096, 7168, 2048), (8192, 8192, 8192)]
rows = []
for M, N, K in shapes:
    A, B, sa, sb = inputs(M, N, K)
    C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    ref = fp64(A[0], sa[0], B[0], sb[0])
    def ours(v):
        def run(i):
            rc = fns[v](M, N, K, A[i].data_ptr(), sa[i].data_ptr(), B[i].data_ptr(), sb[i].data_ptr(), C.data_ptr(), s)
            assert rc == 0, (v, rc)
        return run
    errs = {}
    for v in VARIANTS:
        C.fill_(float("nan")); ours(v)(0); torch.cuda.synchronize()
        errs[v] = relerr(C, ref)
    scales = unit_rowwise_scales(M, N)
    row = lambda i: rowwise(A[i], B[i], scales)
    deq = lambda i: dequant_matmul(A[i], sa[i], B[i], sb[i])
    fl = 2 * M * N * K
    t = {v: med(ours(v), 10 if v == "simt" else 30) for v in VARIANTS}
    t["rowwise"] = med(row); t["deq"] = med(deq)
    tf = {k: fl / x / 1e12 for k, x in t.items()}
    rows.append((M, N, K, tf, t, errs))
    print(M, N, K, {k: round(x, 1) for k, x in tf.items()}, {k: t[k] * 1e3 for k in t}, errs, file=log)
    del A, B, sa, sb, C, ref
    torch.cuda.empty_cache()
log.close()
print("TFLOP/s, medians (mma = the sm_90 build's default; ptx = m16n8k32 e4m3 left to ptxas)")
print(f"{'M x N x K':>17} {'mma':>5} {'ptx':>5} {'bm64':>5} {'bm128':>5} {'simt':>5} {'wgmma':>5} {'row':>5} {'deq':>5} | {'/simt':>6} {'/row':>5} {'/deq':>5} | rel err mma, ptx, simt")
for M, N, K, tf, t, errs in rows:
    ee = ", ".join(f"{errs[v][0]:.1e}" + (f" NaN={errs[v][1]}" if errs[v][1] else "") for v in ("gemm", "ptx", "simt"))
    tf = {v: tf.get(v, float("nan")) for v in ["gemm", "ptx", "bm64", "bm128", "simt", "wgmma", "rowwise", "deq"]}
    t = {v: t.get(v, float("nan")) for v in tf}
    errs = {v: errs.get(v, (float("nan"), 0)) for v in tf}
    print(f"{M:>5}x{N:>5}x{K:>5} {tf['gemm']:5.0f} {tf['ptx']:5.0f} {tf['bm64']:5.0f} {tf['bm128']:5.0f} {tf['simt']:5.1f} {tf['wgmma']:5.0f} {tf['rowwise']:5.0f} {tf['deq']:5.0f} |"
          f" {t['simt'] / t['gemm']:6.1f} {t['rowwise'] / t['gemm']:5.2f} {t['deq'] / t['gemm']:5.2f} | {ee}")
bad = [(r[0], r[1], r[2], v) for r in rows for v, (e, n) in r[5].items() if n or not e <= 1e-2]
print("rel err over 1e-2 or NaN:", bad if bad else "none")
PY
[ -n "${OUT:-}" ] && cp "$W/check.log" "$W/timing.txt" "$W"/sass-*-bm128.txt "$OUT"/ 2>/dev/null || true
echo "total ${SECONDS}s"
