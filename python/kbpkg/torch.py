"""PyTorch helpers over the first-party packages: tensors in, tensors out, on torch's stream.

    from kbpkg import torch as kt
    c = kt.gemm(a, b)                    # radeonflow/gemm, a: MxK, b: KxN, row-major
    y = kt.rmsnorm(x, weight, eps=1e-6)  # kbpkg-community/rmsnorm
    y = kt.silu_and_mul(x)               # kbpkg-community/activation, x: [..., 2*d]

torch is imported on first use, so `import kbpkg` never needs it.
"""
import kbpkg

_KERNELS = {}


def _torch():
    import torch  # lazy: the binding works without torch

    return torch


def _kernel(package):
    k = _KERNELS.get(package)
    if k is None:
        k = _KERNELS[package] = kbpkg.load(package)
    return k


def _suffix(t):
    torch = _torch()
    names = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
    if t.dtype not in names:
        raise TypeError(f"unsupported dtype {t.dtype}: float32, float16 or bfloat16")
    return names[t.dtype]


def _stream(t):
    """The current torch stream of t's device (None on CPU)."""
    if t.device.type != "cuda":
        return None
    return _torch().cuda.current_stream(t.device).cuda_stream


def _check_same(*tensors):
    first = tensors[0]
    for t in tensors[1:]:
        if t.device != first.device:
            raise ValueError(f"tensors on different devices: {first.device} and {t.device}")
        if t.dtype != first.dtype:
            raise TypeError(f"tensors of different dtypes: {first.dtype} and {t.dtype}")


def _rows(t, name):
    """Row-major with unit column stride: the leading dimension is stride(0)."""
    if t.dim() != 2:
        raise ValueError(f"{name} must be 2-D, got {tuple(t.shape)}")
    if t.stride(1) != 1 or t.stride(0) < t.shape[1]:
        raise ValueError(f"{name} must be row-major contiguous in its last dimension "
                         f"(strides {t.stride()}); call .contiguous()")
    return t.stride(0)


def gemm(a, b, c=None, alpha=1.0, beta=0.0):
    """c = alpha * a @ b + beta * c with radeonflow/gemm; c is created when None."""
    torch = _torch()
    _check_same(a, b)
    lda, ldb = _rows(a, "a"), _rows(b, "b")
    M, K = a.shape
    if b.shape[0] != K:
        raise ValueError(f"shapes do not chain: a {tuple(a.shape)}, b {tuple(b.shape)}")
    N = b.shape[1]
    if c is None:
        c = (torch.zeros if beta else torch.empty)((M, N), dtype=a.dtype, device=a.device)
    _check_same(a, c)
    ldc = _rows(c, "c")
    if tuple(c.shape) != (M, N):
        raise ValueError(f"c must be {M}x{N}, got {tuple(c.shape)}")
    fn = getattr(_kernel("radeonflow/gemm"), "rf_gemm_" + _suffix(a))
    fn(M, N, K, float(alpha), a, lda, b, ldb, float(beta), c, ldc, _stream(a))
    return c


def _contiguous(t, name):
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous; call .contiguous()")


def rmsnorm(x, weight, eps=1e-6, out=None):
    """RMS-normalise the last dimension of x and scale by weight (kbpkg-community/rmsnorm)."""
    torch = _torch()
    _check_same(x, weight)
    _contiguous(x, "x")
    _contiguous(weight, "weight")
    d = x.shape[-1]
    if weight.shape != (d,):
        raise ValueError(f"weight must be ({d},), got {tuple(weight.shape)}")
    out = torch.empty_like(x) if out is None else out
    fn = getattr(_kernel("kbpkg-community/rmsnorm"), "rmsnorm_" + _suffix(x))
    fn(out, x, weight, x.numel() // d, d, float(eps), _stream(x))
    return out


def _gated(op, x, out):
    torch = _torch()
    _contiguous(x, "x")
    if x.shape[-1] % 2:
        raise ValueError(f"the last dimension must be 2*d, got {x.shape[-1]}")
    d = x.shape[-1] // 2
    out = torch.empty(*x.shape[:-1], d, dtype=x.dtype, device=x.device) if out is None else out
    fn = getattr(_kernel("kbpkg-community/activation"), f"act_{op}_{_suffix(x)}")
    fn(out, x, x.numel() // x.shape[-1], d, _stream(x))
    return out


def silu_and_mul(x, out=None):
    """silu(x[..., :d]) * x[..., d:] (kbpkg-community/activation)."""
    return _gated("silu_and_mul", x, out)


def gelu_and_mul(x, out=None):
    """gelu(x[..., :d]) * x[..., d:] (kbpkg-community/activation)."""
    return _gated("gelu_and_mul", x, out)
