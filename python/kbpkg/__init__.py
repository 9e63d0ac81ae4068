"""kbpkg for Python: open installed GPU kernel packages and call their exports via ctypes.

    import kbpkg
    k = kbpkg.load("radeonflow/gemm")          # install from the registry on a miss
    k.rf_gemm_f32(M, N, K, 1.0, a, K, b, N, 0.0, c, N, None)

Exports that the package declares in its kernel.yaml (typed exports) are callables checked
against that declaration: k.signatures lists them. An export declared by name only needs its
C signature from you: k.fn("name", ctypes.c_int, [kbpkg.Ptr, ctypes.c_int64]).
"""
import ctypes
import ctypes.util
import json
import os

from . import typed
from .errors import ArgumentError, Error, KernelError

__all__ = ["Error", "KernelError", "ArgumentError", "Kernel", "Ptr", "load", "library",
           "version"]

# include/kbpkg/kernel.h: kb_open_flags
OPEN_INSTALL = 1
OPEN_BUILD = 2
OPEN_ALLOW_UNSIGNED = 4


class Ptr(ctypes.c_void_p):
    """A void* argument for k.fn: None, an int address, a numpy array or a torch tensor."""

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


class _Options(ctypes.Structure):  # kb_ctx_options
    _fields_ = [
        ("version", ctypes.c_uint),
        ("log", ctypes.c_void_p),
        ("progress", ctypes.c_void_p),
        ("event", ctypes.c_void_p),
        ("payload", ctypes.c_void_p),
        ("log_level", ctypes.c_int),
        ("no_config_files", ctypes.c_int),
    ]


class _Error(ctypes.Structure):  # kb_error
    _fields_ = [
        ("code", ctypes.c_int),
        ("message", ctypes.c_char_p),
        ("path", ctypes.c_char_p),
        ("url", ctypes.c_char_p),
        ("line", ctypes.c_uint),
        ("column", ctypes.c_uint),
    ]


def _candidates():
    env = os.environ.get("KBPKG_LIB")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libkbpkg.so", "libkbpkg.so.0", "libkbpkg.dylib"):
        yield os.path.join(here, name)
    found = ctypes.util.find_library("kbpkg")
    if found:
        yield found


def _declare(lib):
    c_void_p, c_char_p, c_int, c_uint = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint
    sigs = {
        "kb_version": (c_char_p, []),
        "kb_strerror": (c_char_p, [c_int]),
        "kb_ctx_new": (c_int, [ctypes.POINTER(c_void_p), ctypes.POINTER(_Options)]),
        "kb_ctx_free": (None, [c_void_p]),
        "kb_ctx_set": (c_int, [c_void_p, c_char_p, c_char_p]),
        "kb_ctx_last_error": (ctypes.POINTER(_Error), [c_void_p]),
        "kb_kernel_open": (c_int, [ctypes.POINTER(c_void_p), c_void_p, c_char_p, c_uint]),
        "kb_kernel_sym": (c_void_p, [c_void_p, c_char_p]),
        "kb_kernel_target": (c_char_p, [c_void_p]),
        "kb_kernel_name": (c_char_p, [c_void_p]),
        "kb_kernel_version": (c_char_p, [c_void_p]),
        "kb_kernel_path": (c_char_p, [c_void_p]),
        "kb_kernel_reason": (c_char_p, [c_void_p]),
        "kb_kernel_close": (None, [c_void_p]),
    }
    for name, (restype, argtypes) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = restype, argtypes
    return lib


_LIB = None


def library():
    """The loaded libkbpkg (KBPKG_LIB, next to this package, or the system's)."""
    global _LIB
    if _LIB is None:
        tried = []
        for path in _candidates():
            try:
                _LIB = _declare(ctypes.CDLL(path))
                break
            except OSError as e:
                tried.append(f"{path}: {e}")
        if _LIB is None:
            raise Error(-25, "cannot load libkbpkg (set KBPKG_LIB to its path); tried: "
                        + ("; ".join(tried) or "nothing found"))
    return _LIB


def version():
    return library().kb_version().decode()


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


class _Ctx:
    """One kb_ctx: the settings and the last error of the calls made through it."""

    def __init__(self, settings=None):
        lib = library()
        self.lib = lib
        self.ptr = ctypes.c_void_p()
        opts = _Options(1, None, None, None, None, 2, 0)  # KB_LOG_INFO, read config files
        rc = lib.kb_ctx_new(ctypes.byref(self.ptr), ctypes.byref(opts))
        if rc:
            why = _s(lib.kb_strerror(rc))
            if self.ptr:  # a bad config file: the ctx says which file, line and key
                e = lib.kb_ctx_last_error(self.ptr).contents
                why = _s(e.message) if e.message else why
                lib.kb_ctx_free(self.ptr)
                self.ptr = ctypes.c_void_p()
            raise Error(rc, "cannot create a kbpkg context: " + why)
        for key, value in (settings or {}).items():
            self.check(lib.kb_ctx_set(self.ptr, key.encode(), str(value).encode()))

    def check(self, rc):
        if rc == 0:
            return
        e = self.lib.kb_ctx_last_error(self.ptr).contents
        message = _s(e.message) if e.code == rc and e.message else _s(self.lib.kb_strerror(rc))
        raise Error(rc, message, _s(e.path) if e.code == rc else None,
                    _s(e.url) if e.code == rc else None)

    def free(self):
        if self.ptr:
            self.lib.kb_ctx_free(self.ptr)
            self.ptr = ctypes.c_void_p()


class Kernel:
    """A loaded package: .name, .version, .target, .path, .reason and its exports."""

    def __init__(self, ctx, handle):
        self._ctx, self._handle, self._fns = ctx, handle, {}
        lib = ctx.lib
        self.name = _s(lib.kb_kernel_name(handle))
        self.version = _s(lib.kb_kernel_version(handle))
        self.target = _s(lib.kb_kernel_target(handle))
        self.path = _s(lib.kb_kernel_path(handle))
        self.reason = _s(lib.kb_kernel_reason(handle))
        self.device = "cpu" if self.target.startswith("cpu") else "cuda"
        self.signatures = _read_signatures(self.path)

    def __repr__(self):
        return f"<kbpkg.Kernel {self.name}@{self.version} {self.target}>"

    def _sym(self, name):
        if not self._handle:
            raise Error(-3, f"{self.name}@{self.version} is closed")
        addr = self._ctx.lib.kb_kernel_sym(self._handle, name.encode())
        if not addr:
            raise Error(-5, f"{self.name}@{self.version} ({self.target}) does not export "
                        f"'{name}'")
        return addr

    def fn(self, name, restype, argtypes, check=False):
        """The export name as a ctypes function with the signature you give.
        check=True raises KernelError when it returns non-zero."""
        proto = ctypes.CFUNCTYPE(restype, *argtypes)
        f = proto(self._sym(name))
        if check:
            f.errcheck = _status_check(name)
        self._fns[name] = f
        return f

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._fns:
            return self._fns[name]
        sig = self.signatures.get(name)
        if sig is None:
            self._sym(name)  # a name the package does not export says so first
            raise Error(-28, f"{self.name} declares no signature for export '{name}' (a typed "
                        f"export in its kernel.yaml): give it with k.fn('{name}', restype, "
                        f"argtypes)")
        f = typed.make_callable(name, sig, self._sym(name), self.device, _raise_status)
        self._fns[name] = f
        return f

    def close(self):
        if self._handle:
            self._fns.clear()
            self._ctx.lib.kb_kernel_close(self._handle)
            self._handle = None
            self._ctx.free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _read_signatures(path):
    """The typed exports of the installed artifact: its kbpkg.json's "signatures"."""
    try:
        with open(os.path.join(path, "kbpkg.json"), encoding="utf-8") as f:
            sigs = json.load(f).get("signatures") or {}
    except (OSError, ValueError):
        return {}
    return {name: typed.Signature(name, d) for name, d in sigs.items()}


_STATUS = {-1: "invalid argument (a size, leading dimension or pointer)",
           -2: "the GPU runtime refused the launch", -3: "this build cannot run the call"}


def _raise_status(name, status):
    raise KernelError(status, f"{name} returned {status}: {_STATUS.get(status, 'failed')}")


def _status_check(name):
    def errcheck(result, func, args):
        if result != 0:
            raise KernelError(result, f"{name} returned {result}")
        return result

    return errcheck


def load(ref, install=True, build=False, allow_unsigned=False, settings=None):
    """Open "org/name[@constraint]" for this machine.

    install: on a miss, resolve and install from the registry (else installed only).
    build: with install, build from source when no artifact fits.
    settings: kbpkg settings for this load, e.g. {"registry": "/srv/hub", "cache.dir": ...}.
    Raises kbpkg.Error with libkbpkg's message and code.
    """
    ctx = _Ctx(settings)
    flags = (OPEN_INSTALL if install else 0) | (OPEN_BUILD if install and build else 0)
    flags |= OPEN_ALLOW_UNSIGNED if allow_unsigned else 0
    handle = ctypes.c_void_p()
    try:
        ctx.check(ctx.lib.kb_kernel_open(ctypes.byref(handle), ctx.ptr, ref.encode(), flags))
    except Error:
        ctx.free()
        raise
    return Kernel(ctx, handle)
