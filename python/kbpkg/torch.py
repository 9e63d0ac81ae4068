"""PyTorch helpers over the first-party packages: tensors in, tensors out, on torch's stream.

    from kbpkg import torch as kt
    c = kt.gemm(a, b)                    # radeonflow/gemm, a: MxK, b: KxN, row-major
    y = kt.rmsnorm(x, weight, eps=1e-6)  # kbpkg-community/rmsnorm
    y = kt.silu_and_mul(x)               # kbpkg-community/activation, x: [..., 2*d]

CPU tensors run the package's CPU artifact, CUDA tensors its GPU artifact for this machine
(CUDA, or ROCm under a ROCm build of torch), launched on the tensors' device and on torch's
current stream there. torch is imported on first use, so `import kbpkg` never needs it.
"""
import contextlib

import kbpkg

_KERNELS = {}
_INT_MAX = 2**31 - 1
_ERR_INCOMPATIBLE = -10  # include/kbpkg/common.h: KB_ERR_INCOMPATIBLE


def _torch():
    import torch  # lazy: the binding works without torch

    return torch


def _kind(t):
    """'cpu' or 'gpu': where a kernel can read t. Other devices (meta, mps, xpu) are refused."""
    if t.device.type == "cpu":
        return "cpu"
    if t.device.type == "cuda":
        return "gpu"
    raise ValueError(f"tensors on {t.device} are not supported: use cpu or cuda tensors")


def _gpu_backend():
    return "rocm" if getattr(_torch().version, "hip", None) else "cuda"


def _kernel(package, kind):
    """The package's artifact for CPU tensors (resolved as if there were no GPU) or for GPU
    tensors (resolved for this machine's GPU), loaded once per process."""
    k = _KERNELS.get((package, kind))
    if k is not None:
        return k
    k = kbpkg.load(package, settings={"probe.devices": "none"} if kind == "cpu" else None)
    want = "cpu" if kind == "cpu" else _gpu_backend()
    if not k.target.startswith(want):
        target = k.target
        k.close()
        what = "CPU tensors" if kind == "cpu" else f"{want} (GPU) tensors"
        raise kbpkg.Error(
            _ERR_INCOMPATIBLE,
            f"{package} resolved to {target} on this machine, which cannot take {what}: "
            f"install a {want} artifact (kbpkg resolve {package} --explain says why not)")
    _KERNELS[(package, kind)] = k
    return k


def _suffix(t):
    torch = _torch()
    names = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
    if t.dtype not in names:
        raise TypeError(f"unsupported dtype {t.dtype}: float32, float16 or bfloat16")
    return names[t.dtype]


def _launch(t):
    """(stream, context) for a call on t's data: torch's current stream of t's device, with
    that device current while the kernel is launched (None and nothing on CPU)."""
    if t.device.type != "cuda":
        return None, contextlib.nullcontext()
    torch = _torch()
    return torch.cuda.current_stream(t.device).cuda_stream, torch.cuda.device(t.device)


def _check_same(names, *tensors):
    """Every tensor on the first one's device and of its dtype; names name them in errors."""
    torch = _torch()
    for name, t in zip(names, tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__module__}."
                            f"{type(t).__name__} (numpy arrays: use kbpkg.load() directly, "
                            f"or torch.from_numpy)")
    first = tensors[0]
    _kind(first)
    for name, t in zip(names[1:], tensors[1:]):
        if t.device != first.device:
            raise ValueError(f"tensors on different devices: {name} is on {t.device}, "
                             f"{names[0]} on {first.device}")
        if t.dtype != first.dtype:
            raise TypeError(f"tensors of different dtypes: {name} is {t.dtype}, "
                            f"{names[0]} {first.dtype}")


def _overlap(a, b):
    """Whether the bytes of two contiguous tensors intersect."""
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a0 < b0 + b.numel() * b.element_size() and b0 < a0 + a.numel() * a.element_size()


def _rows(t, name):
    """Row-major with unit column stride: the leading dimension is stride(0)."""
    if t.dim() != 2:
        raise ValueError(f"{name} must be 2-D, got {tuple(t.shape)}")
    if t.stride(1) != 1 or t.stride(0) < t.shape[1]:
        raise ValueError(f"{name} must be row-major contiguous in its last dimension "
                         f"(strides {t.stride()}); call .contiguous()")
    return t.stride(0)


def _int32(**sizes):
    for name, v in sizes.items():
        if v > _INT_MAX:
            raise ValueError(f"{name} = {v} does not fit the kernel's int (at most {_INT_MAX})")


def gemm(a, b, c=None, alpha=1.0, beta=0.0):
    """c = alpha * a @ b + beta * c with radeonflow/gemm; c is created when None."""
    torch = _torch()
    _check_same(("a", "b"), a, b)
    suffix = _suffix(a)
    lda, ldb = _rows(a, "a"), _rows(b, "b")
    M, K = a.shape
    if b.shape[0] != K:
        raise ValueError(f"shapes do not chain: a {tuple(a.shape)}, b {tuple(b.shape)}")
    N = b.shape[1]
    if c is None:
        c = (torch.zeros if beta else torch.empty)((M, N), dtype=a.dtype, device=a.device)
    _check_same(("a", "c"), a, c)
    ldc = _rows(c, "c")
    if tuple(c.shape) != (M, N):
        raise ValueError(f"c must be {M}x{N}, got {tuple(c.shape)}")
    _int32(M=M, N=N, K=K, lda=lda, ldb=ldb, ldc=ldc)
    fn = getattr(_kernel("radeonflow/gemm", _kind(a)), "rf_gemm_" + suffix)
    stream, ctx = _launch(a)
    with ctx:
        fn(M, N, K, float(alpha), a, lda, b, ldb, float(beta), c, ldc, stream)
    return c


def _contiguous(t, name):
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous; call .contiguous()")


def _out(out, like, shape, name="out"):
    """A new tensor of shape like `like`, or out checked against it."""
    torch = _torch()
    if out is None:
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    _check_same(("x", name), like, out)
    _contiguous(out, name)
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"{name} must be {tuple(shape)}, got {tuple(out.shape)}")
    return out


def rmsnorm(x, weight, eps=1e-6, out=None):
    """RMS-normalise the last dimension of x and scale by weight (kbpkg-community/rmsnorm).
    out may be x itself (in place), but not partly overlap it."""
    _check_same(("x", "weight"), x, weight)
    suffix = _suffix(x)
    _contiguous(x, "x")
    _contiguous(weight, "weight")
    if x.dim() < 1:
        raise ValueError("x must have at least one dimension")
    d = x.shape[-1]
    if tuple(weight.shape) != (d,):
        raise ValueError(f"weight must be ({d},), got {tuple(weight.shape)}")
    out = _out(out, x, x.shape)
    if x.numel() == 0:
        return out
    if out.data_ptr() != x.data_ptr() and _overlap(out, x):
        raise ValueError("out must be x itself or not overlap it")
    fn = getattr(_kernel("kbpkg-community/rmsnorm", _kind(x)), "rmsnorm_" + suffix)
    stream, ctx = _launch(x)
    with ctx:
        fn(out, x, weight, x.numel() // d, d, float(eps), stream)
    return out


def _activation(op, x, out, gated):
    _check_same(("x",), x)
    suffix = _suffix(x)
    _contiguous(x, "x")
    if x.dim() < 1:
        raise ValueError("x must have at least one dimension")
    if gated and x.shape[-1] % 2:
        raise ValueError(f"the last dimension must be 2*d, got {x.shape[-1]}")
    d = x.shape[-1] // 2 if gated else x.shape[-1]
    out = _out(out, x, (*x.shape[:-1], d))
    if out.numel() == 0:
        return out
    if _overlap(out, x):
        raise ValueError("out must not overlap x")
    fn = getattr(_kernel("kbpkg-community/activation", _kind(x)), f"act_{op}_{suffix}")
    stream, ctx = _launch(x)
    with ctx:
        fn(out, x, x.numel() // x.shape[-1], d, stream)
    return out


def silu_and_mul(x, out=None):
    """silu(x[..., :d]) * x[..., d:] (kbpkg-community/activation)."""
    return _activation("silu_and_mul", x, out, True)


def gelu_and_mul(x, out=None):
    """gelu(x[..., :d]) * x[..., d:], erf form (kbpkg-community/activation)."""
    return _activation("gelu_and_mul", x, out, True)


def gelu_tanh(x, out=None):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) elementwise (kbpkg-community/activation)."""
    return _activation("gelu_tanh", x, out, False)
