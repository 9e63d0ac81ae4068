#!/usr/bin/env bash
# FP8 block-scaled GEMM on the H200: builds radeonflow/gemm for sm_90a, runs its package check,
# then times rf_gemm_fp8_blockscale against torch._scaled_mm (row-wise scales) and the
# dequantise-then-matmul path in one process (CUDA events, medians of 50). Needs nvcc + torch.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PKG=$ROOT/kernels/radeonflow/gemm
W=${TMPDIR:-/tmp}/rf-fp8; mkdir -p "$W"
nvcc -std=c++17 -O3 -I"$PKG/include" -I"$ROOT/include" -DKBPKG_TARGET='"cuda13-sm_90a-x86_64-linux"' \
  -Xcompiler -fPIC,-fvisibility=hidden -Xlinker --exclude-libs,ALL -shared \
  -gencode arch=compute_90a,code=sm_90a "$PKG/src/gemm.cu" "$PKG/src/gemm_fp8.cu" -o "$W/libgemm.so"
nvcc -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -I"$PKG/include" -I"$ROOT/include" \
  "$PKG/tests/check.c" "$PKG/src/gemm_cpu.c" -L"$W" -lgemm -Xlinker -rpath,"$W" -o "$W/check"
"$W/check" | tail -3
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
LIB=$W/libgemm.so python3 - <<'PY'
import ctypes, os, torch
lib = ctypes.CDLL(os.environ["LIB"])
f = lib.rf_gemm_fp8_blockscale
f.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 6
def med(fn, n=50):
    for _ in range(5): fn()
    ts = []
    for _ in range(n):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record(); fn(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) / 1e3)
    return sorted(ts)[n // 2]
for M, N, K in [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 7168, 2048), (128, 7168, 2048)]:
    A = (torch.randn(M, K, device="cuda") / 4).to(torch.float8_e4m3fn)
    B = (torch.randn(N, K, device="cuda") / 4).to(torch.float8_e4m3fn)
    sa = torch.rand(M, K // 128, device="cuda") + 0.5
    sb = torch.rand((N + 127) // 128, K // 128, device="cuda") + 0.5
    C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    s = torch.cuda.current_stream().cuda_stream
    ours = lambda: f(M, N, K, A.data_ptr(), sa.data_ptr(), B.data_ptr(), sb.data_ptr(), C.data_ptr(), s)
    ra, rb = torch.ones(M, 1, device="cuda"), torch.ones(1, N, device="cuda")
    scaled = lambda: torch._scaled_mm(A, B.t(), scale_a=ra, scale_b=rb, out_dtype=torch.bfloat16)
    def deq():
        a = (A.float().view(M, K // 128, 128) * sa[:, :, None]).view(M, K).bfloat16()
        b = (B.float().view(N, K // 128, 128) * sb.repeat_interleave(128, 0)[:N, :, None]).view(N, K).bfloat16()
        return a @ b.t()
    ours(); torch.cuda.synchronize()
    ref = deq().float()
    err = ((C.float() - ref).abs().max() / ref.abs().max()).item()
    fl = 2 * M * N * K
    t0, t1, t2 = med(ours), med(scaled), med(deq)
    print(f"{M}x{N}x{K}: rf_gemm_fp8_blockscale {fl/t0/1e12:.0f} TFLOP/s | _scaled_mm rowwise "
          f"{fl/t1/1e12:.0f} | dequant+matmul {fl/t2/1e12:.0f} | ratio {t1/t0:.2f} / {t2/t0:.2f}x"
          f" | max rel err vs dequant {err:.2e}")
PY
