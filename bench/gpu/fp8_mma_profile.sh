#!/usr/bin/env bash
# Where the FP8 mma.sync kernel (plain sm_90 build) spends its time on the H200: a second timing
# of it against the SIMT kernel, torch._scaled_mm (row-wise) and dequantise-then-matmul (the
# spread against fp8_mma_run.sh's run), then one Nsight Compute profile of the kernel at
# 4096^3 (speed of light, pipe utilisation, warp stalls, shared-memory conflicts; clocks left
# alone). Needs nvcc, torch and ncu. Usage: bench/gpu/fp8_mma_profile.sh [workdir]; with $OUT
# set, the timings, the SASS and the ncu report text are copied there.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PKG=$ROOT/kernels/radeonflow/gemm
W=${1:-/tmp/rf-fp8-mma-prof}
mkdir -p "$W"
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
lib() {
  nvcc -std=c++17 -O3 -I"$PKG/include" -I"$PKG/src" -I"$ROOT/include" \
    -DKBPKG_TARGET="\"cuda13-$2-x86_64-linux\"" -Xcompiler -fPIC,-fvisibility=hidden -shared \
    -arch=sm_90 "$PKG/src/gemm_fp8.cu" "$PKG/src/gemm_fp8_mma.cu" -o "$W/lib$1.so"
}
lib gemm sm_90 &
lib simt sm_80 &
for j in $(jobs -p); do wait "$j"; done
cuobjdump --dump-sass "$W/libgemm.so" | awk '/Function : /{f=/gemm_fp8_mma.*128/} f' >"$W/sass-bm128.txt" || true
cat >"$W/drive.py" <<'PY'
import ctypes, os, sys, torch
W = os.environ["W"]
fns = {}
for v in ("gemm", "simt"):
    f = ctypes.CDLL(f"{W}/lib{v}.so").rf_gemm_fp8_blockscale
    f.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 6
    fns[v] = f
SETS, s = 4, torch.cuda.current_stream().cuda_stream
def med(fn, n=30):
    for i in range(3): fn(i % SETS)
    ts = []
    for i in range(n):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record(); fn(i % SETS); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) / 1e3)
    return sorted(ts)[n // 2]
profile = len(sys.argv) > 1
for M, N, K in [(4096, 4096, 4096)] if profile else [(4096, 4096, 4096), (128, 7168, 2048)]:
    A = [(torch.randn(M, K, device="cuda") / 4).to(torch.float8_e4m3fn) for _ in range(SETS)]
    B = [(torch.randn(N, K, device="cuda") / 4).to(torch.float8_e4m3fn) for _ in range(SETS)]
    sa = [torch.rand(M, K // 128, device="cuda") + 0.5 for _ in range(SETS)]
    sb = [torch.rand((N + 127) // 128, K // 128, device="cuda") + 0.5 for _ in range(SETS)]
    C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    ours = lambda v: (lambda i: fns[v](M, N, K, A[i].data_ptr(), sa[i].data_ptr(), B[i].data_ptr(), sb[i].data_ptr(), C.data_ptr(), s))
    if profile:
        for i in range(3): ours("gemm")(i)
        torch.cuda.synchronize()
        continue
    ra, rb = torch.ones(M, 1, device="cuda"), torch.ones(1, N, device="cuda")
    row = lambda i: torch._scaled_mm(A[i], B[i].t(), scale_a=ra, scale_b=rb, out_dtype=torch.bfloat16)
    def deq(i):
        a = (A[i].float().view(M, K // 128, 128) * sa[i][:, :, None]).view(M, K).bfloat16()
        b = (B[i].float().view(N, K // 128, 128) * sb[i].repeat_interleave(128, 0)[:N, :, None]).view(N, K).bfloat16()
        return a @ b.t()
    t = {"mma": med(ours("gemm")), "simt": med(ours("simt"), 10), "row": med(row), "deq": med(deq)}
    tf = {k: 2 * M * N * K / x / 1e12 for k, x in t.items()}
    print(f"{M}x{N}x{K} TFLOP/s: mma {tf['mma']:.0f} simt {tf['simt']:.1f} _scaled_mm row-wise {tf['row']:.0f} "
          f"dequant+mm {tf['deq']:.0f} | mma/simt {t['simt'] / t['mma']:.1f}x, vs row-wise {t['row'] / t['mma']:.2f}, vs deq {t['deq'] / t['mma']:.2f}")
PY
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
W=$W python3 "$W/drive.py" | tee "$W/timing.txt"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
W=$W "$NCU" --clock-control none -k regex:gemm_fp8_mma --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
  --section MemoryWorkloadAnalysis_Tables --section InstructionStats --section Occupancy \
  python3 "$W/drive.py" profile >"$W/ncu.txt" 2>&1 || echo "ncu failed: $(tail -3 "$W/ncu.txt")"
[ -n "${OUT:-}" ] && cp "$W/timing.txt" "$W/ncu.txt" "$W/sass-bm128.txt" "$OUT"/ 2>/dev/null || true
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Executed Ipc A|Achieved Occupancy|Stall|pipe|Pipe|Bank|bank" "$W/ncu.txt" | head -40 || true
grep -E "HMMA|F2FP|LDSM" -o "$W/sass-bm128.txt" | sort | uniq -c || true
echo "total ${SECONDS}s"
