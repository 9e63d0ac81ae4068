"""C signatures of the first-party packages' exports, taken from kernels/*/*/include/*.h.

Each entry is name -> (restype, [argtypes]). Pointers are Ptr (a void* that also accepts
numpy arrays and torch tensors), streams are Ptr (cudaStream_t / hipStream_t, None on CPU).
"""
import ctypes


class Ptr(ctypes.c_void_p):
    """A void* argument: None, an int address, a numpy array or a torch tensor."""

    @classmethod
    def from_param(cls, obj):
        if obj is None or isinstance(obj, int):
            return ctypes.c_void_p(obj)
        iface = getattr(obj, "__array_interface__", None)
        if iface is not None:
            return ctypes.c_void_p(iface["data"][0])
        data_ptr = getattr(obj, "data_ptr", None)
        if callable(data_ptr):
            return ctypes.c_void_p(data_ptr())
        return ctypes.c_void_p.from_param(obj)


_int, _i64, _f32 = ctypes.c_int, ctypes.c_int64, ctypes.c_float

# include/rf_gemm.h: row-major C = alpha*A*B + beta*C.
_GEMM = (_int, [_int, _int, _int, _f32, Ptr, _int, Ptr, _int, _f32, Ptr, _int, Ptr])
# include/kb_activation.h: (out, in, n, d, stream).
_ACT = (_int, [Ptr, Ptr, _i64, _i64, Ptr])
# include/kb_rmsnorm.h: (out, x, weight, n, d, eps, stream).
_RMS = (_int, [Ptr, Ptr, Ptr, _i64, _i64, _f32, Ptr])

SIGNATURES = {
    "radeonflow/gemm": {
        "rf_gemm_bf16": _GEMM,
        "rf_gemm_f16": _GEMM,
        "rf_gemm_f32": _GEMM,
    },
    "kbpkg-community/activation": {
        f"act_{op}_{dt}": _ACT
        for op in ("silu_and_mul", "gelu_and_mul", "gelu_tanh")
        for dt in ("f32", "bf16", "f16")
    },
    "kbpkg-community/rmsnorm": {f"rmsnorm_{dt}": _RMS for dt in ("f32", "bf16", "f16")},
}
