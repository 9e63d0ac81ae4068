"""Any kbpkg package's typed exports as PyTorch ops, and a layer mapping to swap them in.

    from kbpkg import torch as kt
    rms = kt.ops("kbpkg-community/rmsnorm")       # one namespace per package
    rms.rmsnorm_bf16(out, x, weight, n, d, 1e-6)  # the C arguments, less the stream
    y = rms.rmsnorm_bf16(None, x, weight, n, d, 1e-6)   # out allocated from its shape rule
    kt.kernelize(model, {MyRMSNorm: kt.RMSNORM})  # swap module forwards for package ops

Each typed export is registered as a torch.library op in the namespace kb_<org>_<name>
(with a fake implementation, so torch.compile(fullgraph=True) traces through it and CUDA
graphs capture it). Eager calls skip the dispatcher: the arguments are checked against the
declaration (dtype, device, contiguity, extent) and the C function is called directly on
torch's current stream of the tensors' device. CPU tensors run the package's CPU artifact,
CUDA tensors its GPU artifact for this machine. Under a torch without torch.library's fake
registration (Debian's 1.13) every call is eager. torch is imported on first use.

kt.gemm, kt.rmsnorm, kt.silu_and_mul, kt.gelu_and_mul and kt.gelu_tanh are thin helpers
over the same ops (shapes from the tensors, out allocated, leading dimensions from strides).
"""
import keyword
import re
import types

import kbpkg
from kbpkg import typed

_KERNELS = {}
_OPS = {}
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


def namespace(package):
    """torch.ops namespace of a package: kb_ + org/name with [^a-z0-9] as '_'."""
    return "kb_" + re.sub(r"[^a-z0-9]", "_", package)


_SCHEMA_SCALAR = {"f32": "float", "f64": "float"}


def _schema_name(name):
    """A C argument name as a schema name ('in' is reserved in both Python and the schema)."""
    return name + "_" if keyword.iskeyword(name) else name


def _schema(sig):
    parts = []
    for i, a in enumerate(sig.args):
        if a.type == "stream":
            continue
        if a.pointer:
            mut = f"(a{i}!)" if a.dir in ("out", "inout") else ""
            parts.append(f"Tensor{mut} {_schema_name(a.name)}")
        else:
            parts.append(f"{_SCHEMA_SCALAR.get(a.type, 'SymInt')} {_schema_name(a.name)}")
    return f"{sig.name}({', '.join(parts)}) -> ()"


def _compile_supported(torch):
    lib = getattr(torch, "library", None)
    return lib is not None and (hasattr(lib, "register_fake") or hasattr(lib, "impl_abstract"))


class Op:
    """One typed export as a torch callable: op(*C args less the stream). Out arguments
    given as None are allocated from their shape rule (dtype from the declaration, device of
    the other tensors); the call returns the out and inout tensors (one: itself)."""

    def __init__(self, package, sig):
        torch = _torch()
        self.package, self.sig, self.name = package, sig, sig.name
        self._args = [a for a in sig.args if a.type != "stream"]
        self._nargs = len(self._args)
        self._stream = sig.stream_index
        self._outs = [i for i, a in enumerate(self._args) if a.pointer and a.dir != "in"]
        self._allocs = [(i, a) for i, a in enumerate(self._args) if a.pointer and a.dir == "out"]
        self._ints = [a.name for a in self._args if not a.pointer and a.type in typed._INT_RANGE]
        self._int_pos = [i for i, a in enumerate(self._args)
                         if not a.pointer and a.type in typed._INT_RANGE]
        self._pointers = [i for i, a in enumerate(self._args) if a.pointer]
        self._dtype = {i: getattr(torch, typed._TYPES[a.type][2], None)
                       for i, a in enumerate(self._args) if a.pointer}
        self._calls = {}
        self._torch_op = None
        self._compiling = None
        if _compile_supported(torch):
            self._torch_op = self._register(torch)
            self._compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)

    def _callable(self, kind):
        """The checked C call for tensors of kind 'cpu'/'gpu' (loaded on first use)."""
        f = self._calls.get(kind)
        if f is None:
            k = _kernel(self.package, kind)
            f = getattr(k, self.name)
            self._calls[kind] = f
        return f

    def _launch(self, args):
        """Run on the artifact of the first tensor's device, on torch's current stream."""
        t = self._first_tensor(args)
        dev = t.device
        cargs = list(args)
        if dev.type == "cpu":
            if self._stream is not None:
                cargs.insert(self._stream, None)
            return self._callable("cpu")(*cargs)
        if dev.type != "cuda":
            raise ValueError(f"{self.name}: tensors on {dev} are not supported: use cpu or "
                             f"cuda tensors")
        torch = _torch()
        f = self._callable("gpu")
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        stream = raw(index) if raw else torch.cuda.current_stream(dev).cuda_stream
        if self._stream is not None:
            cargs.insert(self._stream, stream)
        if index == torch.cuda.current_device():
            return f(*cargs)
        with torch.cuda.device(index):
            return f(*cargs)

    def _register(self, torch):
        """torch.ops.kb_<org>_<name>.<export>, defined once per process; its kernels look the
        Op up when called, so a later ops() (after the kernels were closed) is the one run."""
        ns = namespace(self.package)
        qualname = f"{ns}::{self.name}"
        if qualname in _DEFINED:
            return getattr(getattr(torch.ops, ns), self.name)
        lib = _library(torch, ns)
        lib.define(_schema(self.sig))
        _DEFINED.add(qualname)
        package, name = self.package, self.name

        def impl(*args):
            _OPS[package]._ops[name]._launch(args)

        for key in ("CPU", "CUDA"):
            lib.impl(self.name, impl, key)

        def fake(*args):
            return None

        register = getattr(torch.library, "register_fake", None) or torch.library.impl_abstract
        register(f"{ns}::{self.name}", lib=lib)(fake)
        return getattr(getattr(torch.ops, ns), self.name)

    def _first_tensor(self, args):
        for i in self._pointers:
            if args[i] is not None:
                return args[i]
        raise kbpkg.ArgumentError(f"{self.name}: give at least one tensor (its device picks "
                                  f"the artifact)")

    def _allocate(self, args):
        like = self._first_tensor(args)
        torch = _torch()
        values = [args[i] for i in self._int_pos]
        args = list(args)
        for i, a in self._allocs:
            if args[i] is None:
                dims = a.extent(*values) if a.extent else (0,)
                args[i] = torch.empty(dims, dtype=self._dtype[i], device=like.device)
        return args

    def __call__(self, *args):
        if len(args) != self._nargs:
            raise kbpkg.ArgumentError(
                f"{self.name} takes {self._nargs} arguments "
                f"({', '.join(a.name for a in self._args)}; the stream is torch's), got "
                f"{len(args)}")
        for i, _ in self._allocs:
            if args[i] is None:
                args = self._allocate(args)
                break
        if self._compiling is not None and self._compiling():
            self._torch_op(*args)
        else:
            self._launch(args)
        outs = self._outs
        if len(outs) == 1:
            return args[outs[0]]
        return tuple(args[i] for i in outs) if outs else None

    def __repr__(self):
        return f"<kbpkg.torch op {namespace(self.package)}::{self.name} {self.sig!r}>"


_LIBS = {}
_DEFINED = set()


def _library(torch, ns):
    lib = _LIBS.get(ns)
    if lib is None:
        lib = torch.library.Library(ns, "DEF")
        _LIBS[ns] = lib
    return lib


class PackageOps:
    """The typed exports of one package as Op attributes (ops.rmsnorm_f32)."""

    def __init__(self, package, signatures):
        self.package = package
        self.namespace = namespace(package)
        self._ops = {name: Op(package, sig) for name, sig in sorted(signatures.items())}

    def __getattr__(self, name):
        try:
            return self.__dict__["_ops"][name]
        except KeyError:
            raise AttributeError(f"{self.package} declares no typed export '{name}' (typed: "
                                 f"{', '.join(self._ops) or 'none'})") from None

    def __getitem__(self, name):
        return getattr(self, name)

    def __iter__(self):
        return iter(self._ops)

    def __dir__(self):
        return list(self._ops)


def ops(package, device="cpu"):
    """The package's typed exports as torch ops, registered once per process. device picks
    the artifact whose kbpkg.json declares them ("cpu" or "cuda"); calls then run on the
    tensors' own device."""
    o = _OPS.get(package)
    if o is None:
        k = _kernel(package, "cpu" if device == "cpu" else "gpu")
        if not k.signatures:
            raise kbpkg.Error(-28, f"{package} declares no typed exports (exports with args "
                              f"in its kernel.yaml), so it has no torch ops")
        o = PackageOps(package, k.signatures)
        _OPS[package] = o
    return o


# ---- thin helpers over the first-party packages ----

_SUFFIX = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def _suffix(t):
    s = _SUFFIX.get(str(t.dtype)[6:])
    if s is None:
        raise TypeError(f"unsupported dtype {t.dtype}: float32, float16 or bfloat16")
    return s


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


def _compiling():
    """Whether torch.compile is tracing (addresses are not known then: overlap checks wait for
    the eager call)."""
    f = getattr(getattr(_torch(), "compiler", None), "is_compiling", None)
    return bool(f and f())


def _overlap(a, b):
    """Whether the bytes of two contiguous tensors intersect."""
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a0 < b0 + b.numel() * b.element_size() and b0 < a0 + a.numel() * a.element_size()


def _rows(t, name):
    """t as the dense [rows, ld] matrix its rows live in (ld = stride(0) >= cols), and ld.
    A row-padded view is widened over its own padding (torch refuses it past the storage)."""
    if t.dim() != 2:
        raise ValueError(f"{name} must be 2-D, got {tuple(t.shape)}")
    if t.stride(1) != 1 or t.stride(0) < t.shape[1]:
        raise ValueError(f"{name} must be row-major contiguous in its last dimension "
                         f"(strides {t.stride()}); call .contiguous()")
    ld = t.stride(0) if t.shape[0] > 1 else t.shape[1]
    if ld == t.shape[1]:
        return t, ld
    return t.as_strided((t.shape[0], ld), (ld, 1)), ld


def gemm(a, b, c=None, alpha=1.0, beta=0.0):
    """c = alpha * a @ b + beta * c with radeonflow/gemm; c is created when None."""
    torch = _torch()
    _check_same(("a", "b"), a, b)
    suffix = _suffix(a)
    M, K = a.shape
    if b.dim() != 2 or b.shape[0] != K:
        raise ValueError(f"shapes do not chain: a {tuple(a.shape)}, b {tuple(b.shape)}")
    N = b.shape[1]
    if c is None:
        c = (torch.zeros if beta else torch.empty)((M, N), dtype=a.dtype, device=a.device)
    _check_same(("a", "c"), a, c)
    if tuple(c.shape) != (M, N):
        raise ValueError(f"c must be {M}x{N}, got {tuple(c.shape)}")
    if M == 0 or N == 0:
        return c
    if K == 0:  # a @ b is zero, and no operand has an element to hand over: beta * c, BLAS-wise
        return c.zero_() if beta == 0 else c.mul_(beta)
    a2, lda = _rows(a, "a")
    b2, ldb = _rows(b, "b")
    c2, ldc = _rows(c, "c")
    ops("radeonflow/gemm")["rf_gemm_" + suffix](M, N, K, float(alpha), a2, lda, b2, ldb,
                                                float(beta), c2, ldc)
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
    if x.dim() < 1:
        raise ValueError("x must have at least one dimension")
    d = x.shape[-1]
    if tuple(weight.shape) != (d,):
        raise ValueError(f"weight must be ({d},), got {tuple(weight.shape)}")
    out = _out(out, x, x.shape)
    if x.numel() == 0:
        return out
    if not _compiling() and out.data_ptr() != x.data_ptr() and _overlap(out, x):
        raise ValueError("out must be x itself or not overlap it")
    ops("kbpkg-community/rmsnorm")["rmsnorm_" + suffix](out, x, weight, x.numel() // d, d,
                                                       float(eps))
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
    if not _compiling() and _overlap(out, x):
        raise ValueError("out must not overlap x")
    ops("kbpkg-community/activation")[f"act_{op}_{suffix}"](out, x, x.numel() // x.shape[-1], d)
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


# ---- layer mapping: swap a module class's forward for a package op ----

class Layer:
    """A replacement forward for one module class: forward(module, *inputs) calls package ops;
    dtypes lists what the package provides (a module of another dtype keeps its forward)."""

    def __init__(self, package, forward, dtypes=("float32", "float16", "bfloat16")):
        self.package, self.forward, self.dtypes = package, forward, tuple(dtypes)

    def unfit(self, module):
        """Why this layer cannot run module here, or None."""
        params = list(module.parameters(recurse=False)) or list(module.buffers(recurse=False))
        if params:
            t = params[0]
            if str(t.dtype)[6:] not in self.dtypes:
                return f"{self.package} has no {str(t.dtype)[6:]} kernel"
            try:
                kind = _kind(t)
            except ValueError as e:
                return str(e)
        else:
            kind = "cpu"
        try:
            ops(self.package, "cpu" if kind == "cpu" else "cuda")
            _kernel(self.package, kind)
        except kbpkg.Error as e:
            return e.message
        return None


RMSNORM = Layer("kbpkg-community/rmsnorm",
                lambda m, x: rmsnorm(x, m.weight, getattr(m, "eps", None) or 1e-6))
SILU_AND_MUL = Layer("kbpkg-community/activation", lambda m, x: silu_and_mul(x))
GELU_AND_MUL = Layer("kbpkg-community/activation", lambda m, x: gelu_and_mul(x))
GELU_TANH = Layer("kbpkg-community/activation", lambda m, x: gelu_tanh(x))


def kernelize(model, mapping):
    """Swap the forward of every submodule whose class is in mapping ({cls: Layer}) for the
    layer's package op. Where no artifact or dtype fits, the module keeps its own forward.
    Returns {qualified name: "kbpkg-community/rmsnorm" or "kept: <why>"}; a kept module's
    reason is also in module.kbpkg_reason."""
    report = {}
    for name, module in model.named_modules():
        layer = mapping.get(type(module))
        if layer is None:
            continue
        why = layer.unfit(module)
        if why:
            module.kbpkg_reason = why
            report[name or "."] = f"kept: {why}"
            continue
        module.forward = types.MethodType(layer.forward, module)
        module.kbpkg_reason = None
        report[name or "."] = layer.package
    return report

