"""Shared by the FP8 block-scaled GEMM device scripts (fp8_run.sh, fp8_mma_run.sh,
fp8_mma_profile.sh): the export of a built library, the contract's random inputs rotated
between timed calls, median timing with CUDA events, the contenders a PyTorch user has, and the
fp64 reference. Import with PYTHONPATH=bench/gpu."""
import ctypes

import torch

SETS = 4  # input sets rotated between timed calls, so no operand is timed out of L2


def export(path):
    """rf_gemm_fp8_blockscale of the library at path, callable with ints and pointers."""
    fn = ctypes.CDLL(path).rf_gemm_fp8_blockscale
    fn.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 6
    return fn


def inputs(M, N, K, sets=SETS):
    """sets of (A, B, scale_a, scale_b): e4m3 from N(0, 1/16), scales in [0.5, 1.5)."""
    A = [(torch.randn(M, K, device="cuda") / 4).to(torch.float8_e4m3fn) for _ in range(sets)]
    B = [(torch.randn(N, K, device="cuda") / 4).to(torch.float8_e4m3fn) for _ in range(sets)]
    sa = [torch.rand(M, K // 128, device="cuda") + 0.5 for _ in range(sets)]
    sb = [torch.rand((N + 127) // 128, K // 128, device="cuda") + 0.5 for _ in range(sets)]
    return A, B, sa, sb


def med(fn, n=30, sets=SETS):
    """Median seconds of fn(set index) over n calls after 3 warm-up calls, CUDA events."""
    for i in range(3):
        fn(i % sets)
    ts = []
    for i in range(n):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record(); fn(i % sets); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    return sorted(ts)[n // 2]


def _scaled(A, sa, B, sb, dtype):
    """A and B times their block scales, as dtype."""
    (M, K), N = A.shape, B.shape[0]
    a = (A.to(dtype).view(M, K // 128, 128) * sa.to(dtype)[:, :, None]).view(M, K)
    b = (B.to(dtype).view(N, K // 128, 128) *
         sb.to(dtype).repeat_interleave(128, 0)[:N, :, None]).view(N, K)
    return a, b


def dequant_matmul(A, sa, B, sb):
    """The contract done the plain way: dequantise to bf16, then matmul."""
    a, b = _scaled(A, sa, B, sb, torch.float)
    return a.bfloat16() @ b.bfloat16().t()


def unit_rowwise_scales(M, N):
    """Row-wise scales of ones for rowwise(), made once outside the timed calls."""
    return torch.ones(M, 1, device="cuda"), torch.ones(1, N, device="cuda")


def rowwise(A, B, scales):
    """cuBLASLt FP8 through torch._scaled_mm with row-wise scales (unit_rowwise_scales)."""
    return torch._scaled_mm(A, B.t(), scale_a=scales[0], scale_b=scales[1],
                            out_dtype=torch.bfloat16)


def fp64(A, sa, B, sb):
    """The fp64 product of the dequantised inputs."""
    a, b = _scaled(A, sa, B, sb, torch.double)
    return a @ b.t()


def relerr(C, ref):
    """(||C - ref|| / ||ref||, number of NaN in C)."""
    return ((C.double() - ref).norm() / ref.norm()).item(), int(torch.isnan(C).sum().item())
