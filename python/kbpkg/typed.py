"""Typed callables from the signatures a package declares (kernel.yaml -> kbpkg.json).

Each export becomes a Python function that checks its arguments against the declaration
(element type, direction, device, contiguity, extent from the shape expressions) and calls
the C function through ctypes. Everything that does not depend on the arguments is decided
once, when the callable is made: the ctypes prototype, the per-argument checks, the shape
expressions compiled to Python functions. Pointer arguments take numpy arrays, torch
tensors, objects with __dlpack__ (CuPy, JAX, ...), integer addresses or None.
"""
import ctypes
import re
import sys

from .errors import ArgumentError

# Declared type -> (ctypes type for values, element size, torch dtype name, numpy dtype
# names, DLPack (code, bits) pairs). numpy has no bf16/fp8: their raw bits (uint16/uint8)
# are accepted, and ml_dtypes' names when installed.
_TYPES = {
    "f16": (None, 2, "float16", ("float16",), ((2, 16),)),
    "bf16": (None, 2, "bfloat16", ("bfloat16", "uint16"), ((4, 16),)),
    "f32": (ctypes.c_float, 4, "float32", ("float32",), ((2, 32),)),
    "f64": (ctypes.c_double, 8, "float64", ("float64",), ((2, 64),)),
    "e4m3": (None, 1, "float8_e4m3fn", ("float8_e4m3fn", "uint8"), ((1, 8),)),
    "e5m2": (None, 1, "float8_e5m2", ("float8_e5m2", "uint8"), ((1, 8),)),
    "e4m3fnuz": (None, 1, "float8_e4m3fnuz", ("float8_e4m3fnuz", "uint8"), ((1, 8),)),
    "e5m2fnuz": (None, 1, "float8_e5m2fnuz", ("float8_e5m2fnuz", "uint8"), ((1, 8),)),
    "i8": (ctypes.c_int8, 1, "int8", ("int8",), ((0, 8),)),
    "u8": (ctypes.c_uint8, 1, "uint8", ("uint8",), ((1, 8),)),
    "i16": (ctypes.c_int16, 2, "int16", ("int16",), ((0, 16),)),
    "i32": (ctypes.c_int32, 4, "int32", ("int32",), ((0, 32),)),
    "i64": (ctypes.c_int64, 8, "int64", ("int64",), ((0, 64),)),
    "u32": (ctypes.c_uint32, 4, "uint32", ("uint32",), ((1, 32),)),
    "u64": (ctypes.c_uint64, 8, "uint64", ("uint64",), ((1, 64),)),
}
_INT_RANGE = {"i8": 8, "u8": 8, "i16": 16, "i32": 32, "i64": 64, "u32": 32, "u64": 64}
_RETURNS = {"status": ctypes.c_int, "void": None}

# DLPack device types (dlpack.h): CPU, CUDA, CUDA host, ROCm, CUDA managed.
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_ROCM, _DL_CUDA_MANAGED = 1, 2, 3, 10, 13


class Arg:
    """One declared argument: name, type, dir (None for values), shape (expressions)."""

    __slots__ = ("name", "type", "dir", "shape", "extent")

    def __init__(self, d):
        self.name, self.type, self.dir = d["name"], d["type"], d.get("dir")
        self.shape = list(d.get("shape", ()))
        self.extent = None

    @property
    def pointer(self):
        return self.dir is not None

    def __repr__(self):
        if self.type == "stream":
            return self.name
        shape = f"[{', '.join(self.shape)}]" if self.shape else ""
        return f"{self.name}: {self.dir + ' ' if self.dir else ''}{self.type}{shape}"


class Signature:
    """An export's declaration, as kbpkg.json's "signatures" member holds it."""

    def __init__(self, name, d):
        self.name, self.returns = name, d.get("returns", "status")
        self.args = [Arg(a) for a in d.get("args", ())]
        scalars = [a.name for a in self.args if not a.pointer and a.type in _INT_RANGE]
        for a in self.args:
            if a.shape:
                a.extent = _compile_shape(a.shape, scalars)

    @property
    def stream_index(self):
        for i, a in enumerate(self.args):
            if a.type == "stream":
                return i
        return None

    def __repr__(self):
        return f"{self.name}({', '.join(map(repr, self.args))}) -> {self.returns}"


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|([-+*/()]))")


def _compile_shape(shape, scalars):
    """The shape's expressions as one function of the integer arguments -> tuple of ints.
    Only names, integers, + - * / and parentheses pass (the manifest parser already refused
    anything else); '/' is C's integer division of non-negative sizes."""
    parts = []
    for expr in shape:
        out, pos = [], 0
        while pos < len(expr):
            m = _TOKEN.match(expr, pos)
            if not m or m.end() == pos:
                if expr[pos:].strip():
                    raise ValueError(f"bad shape expression {expr!r}")
                break
            num, name, op = m.groups()
            if name is not None and name not in scalars:
                raise ValueError(f"shape expression {expr!r} names {name!r}, not an integer "
                                 f"argument")
            out.append(num or name or ("//" if op == "/" else op))
            pos = m.end()
        parts.append(" ".join(out))
    src = f"lambda {', '.join(scalars) or '*_'}: ({', '.join(parts)},)"
    return eval(compile(src, "<kbpkg shape>", "eval"), {"__builtins__": {}})


def _prod(values):
    n = 1
    for v in values:
        n *= v
    return n


# ---- what a pointer argument is: one probe per Python type, cached ----

def _numpy_view(obj):
    iface = obj.__array_interface__
    shape = iface["shape"]
    strides = iface.get("strides")
    dtype = obj.dtype
    itemsize = dtype.itemsize
    contiguous = strides is None or _dense(shape, strides, itemsize)
    return iface["data"][0], dtype.name, "cpu", -1, shape, contiguous, None


def _dense(shape, strides, itemsize):
    expect = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


_TORCH_DEVICE = {"cpu": "cpu", "cuda": "cuda"}


def _torch_view(t):
    dev = t.device
    return (t.data_ptr(), str(t.dtype)[6:], _TORCH_DEVICE.get(dev.type, dev.type),
            -1 if dev.index is None else dev.index, tuple(t.shape), t.is_contiguous(), None)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                         ctypes.c_char_p]
_DL_DEVICE_NAME = {_DL_CPU: "cpu", _DL_CUDA_HOST: "cpu", _DL_CUDA: "cuda", _DL_ROCM: "cuda",
                   _DL_CUDA_MANAGED: "cuda"}
_DL_DTYPE_NAME = {(2, 16): "float16", (4, 16): "bfloat16", (2, 32): "float32",
                  (2, 64): "float64", (0, 8): "int8", (1, 8): "uint8", (0, 16): "int16",
                  (0, 32): "int32", (0, 64): "int64", (1, 32): "uint32", (1, 64): "uint64",
                  (1, 16): "uint16"}


def _dlpack_view(obj):
    """The DLTensor behind obj.__dlpack__(): read in place (the capsule is not consumed, so
    its deleter frees it when the capsule goes, after the call)."""
    dev_type, dev_id = obj.__dlpack_device__()
    capsule = obj.__dlpack__() if dev_type in (_DL_CPU, _DL_CUDA_HOST) else obj.__dlpack__(
        stream=None)
    # DLManagedTensor starts with its DLTensor.
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    shape = tuple(t.shape[i] for i in range(t.ndim))
    contiguous = not t.strides or _dense(shape, [t.strides[i] for i in range(t.ndim)], 1)
    dtype = _DL_DTYPE_NAME.get((t.dtype.code, t.dtype.bits), f"dlpack{t.dtype.code}:"
                               f"{t.dtype.bits}") if t.dtype.lanes == 1 else "vector"
    return ((t.data or 0) + t.byte_offset, dtype, _DL_DEVICE_NAME.get(dev_type, str(dev_type)),
            dev_id, shape, contiguous, capsule)


_PROBES = {}


def _probe_for(obj):
    cls = type(obj)
    probe = _PROBES.get(cls)
    if probe is None:
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(obj, torch.Tensor):
            probe = _torch_view
        elif hasattr(obj, "__array_interface__"):
            probe = _numpy_view
        elif hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
            probe = _dlpack_view
        else:
            return None
        _PROBES[cls] = probe
    return probe


def _shape_text(arg, dims, values):
    given = ", ".join(f"{k}={v}" for k, v in values.items() if k in " ".join(arg.shape))
    return (f"{' x '.join(map(str, dims))} = {_prod(dims)} elements (shape "
            f"[{', '.join(arg.shape)}]{' with ' + given if given else ''})")


def _check_pointer(export, arg, obj, device, scalars):
    """(address, keep-alive) for obj as arg, or ArgumentError saying what was expected."""
    if obj is None:
        return None, None
    if isinstance(obj, int):
        return obj, None
    probe = _probe_for(obj)
    if probe is None:
        raise ArgumentError(
            f"{export}: argument '{arg.name}' must be an array ({arg.type}, {arg.dir}): a "
            f"numpy array, a torch tensor, an object with __dlpack__, an int address or None; "
            f"got {type(obj).__module__}.{type(obj).__name__}")
    addr, dtype, dev, _, shape, contiguous, keep = probe(obj)
    info = _TYPES[arg.type]
    if dtype not in info[3] and dtype != info[2]:
        raise ArgumentError(f"{export}: argument '{arg.name}' must hold {arg.type} elements, "
                            f"got {dtype}")
    if dev != device:
        raise ArgumentError(f"{export}: argument '{arg.name}' is on {dev}, but this artifact "
                            f"runs on {device}")
    if not contiguous:
        raise ArgumentError(f"{export}: argument '{arg.name}' must be contiguous (row-major, "
                            f"no gaps); got shape {tuple(shape)} with other strides: make a "
                            f"contiguous copy")
    if arg.extent is not None:
        dims = arg.extent(*scalars.values()) if scalars else arg.extent()
        if _prod(shape) != _prod(dims):
            raise ArgumentError(f"{export}: argument '{arg.name}' must have "
                                f"{_shape_text(arg, dims, scalars)}; got shape {tuple(shape)}")
    return addr, keep


def make_callable(export, sig, address, device, on_status):
    """The Python function for one export at address, running on device ("cpu"/"cuda").
    on_status(export, status) raises for a non-zero status."""
    argtypes = []
    for a in sig.args:
        if a.pointer or a.type == "stream":
            argtypes.append(ctypes.c_void_p)
        else:
            argtypes.append(_TYPES[a.type][0])
    restype = _RETURNS.get(sig.returns, _TYPES.get(sig.returns, (None,))[0])
    cfn = ctypes.CFUNCTYPE(restype, *argtypes)(address)
    nargs = len(sig.args)
    stream_at = sig.stream_index
    int_args = [(i, a.name, _INT_RANGE[a.type], a.type[0] == "u") for i, a in enumerate(sig.args)
                if not a.pointer and a.type in _INT_RANGE]
    float_args = [(i, a.name) for i, a in enumerate(sig.args)
                  if not a.pointer and a.type in ("f32", "f64")]
    pointers = [(i, a) for i, a in enumerate(sig.args) if a.pointer]
    status = sig.returns == "status"
    names = [a.name for a in sig.args]

    def call(*args):
        if len(args) != nargs:
            if stream_at == nargs - 1 and len(args) == nargs - 1:
                args = args + (None,)
            else:
                raise ArgumentError(f"{export} takes {nargs} arguments ({', '.join(names)}), "
                                    f"got {len(args)}")
        scalars = {}
        for i, name, bits, unsigned in int_args:
            v = args[i]
            if v.__class__ is not int:
                try:
                    v = int(v.__index__())
                except (AttributeError, TypeError):
                    raise ArgumentError(f"{export}: argument '{name}' must be an integer, got "
                                        f"{type(v).__name__}") from None
            lo, hi = (0, (1 << bits) - 1) if unsigned else (-(1 << (bits - 1)),
                                                              (1 << (bits - 1)) - 1)
            if not lo <= v <= hi:
                raise ArgumentError(f"{export}: argument '{name}' = {v} does not fit "
                                    f"{'u' if unsigned else 'i'}{bits} ({lo} to {hi})")
            scalars[name] = v
        for i, name in float_args:
            if not isinstance(args[i], (int, float)):
                raise ArgumentError(f"{export}: argument '{name}' must be a number, got "
                                    f"{type(args[i]).__name__}")
        cargs = list(args)
        keep = []
        for i, a in pointers:
            cargs[i], k = _check_pointer(export, a, args[i], device, scalars)
            if k is not None:
                keep.append(k)
        for i, _, _, _ in int_args:
            cargs[i] = scalars[names[i]]
        result = cfn(*cargs)
        if status and result != 0:
            on_status(export, result)
        return None if status else result

    call.__name__ = export
    call.__qualname__ = export
    call.__doc__ = f"{sig!r} on {device}"
    call.signature = sig
    return call


def fast_callable(sig, address):
    """The bare ctypes function (argtypes set once) for callers that checked the arguments
    themselves (kbpkg.torch's op path)."""
    argtypes = [ctypes.c_void_p if a.pointer or a.type == "stream" else _TYPES[a.type][0]
                for a in sig.args]
    restype = _RETURNS.get(sig.returns, _TYPES.get(sig.returns, (None,))[0])
    return ctypes.CFUNCTYPE(restype, *argtypes)(address)
