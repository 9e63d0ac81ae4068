"""Does the same library time the same in every slot? bench/gpu/mem_sweep.py read an identical
copy of our libraries (the 'before' slot) 5-11% faster than ours at some small shapes
(docs/perf.md, memory-bound "Thirteenth pass"). This loads byte-identical copies of
librmsnorm.so from distinct paths (each its own module on the GPU), in order, and times them
side by side with mem_sweep's Timer (a CUDA graph each, rounds in balanced orders): copy 0
twice (two graphs of one module), copies 1 and 2 once; then again with the graphs built in the
reverse order. Any gap between copies is then the module (where its code and constants sit), not
the code, the graph or the order of timing. On an H100 (2026-12-07) the copies read 0.998-1.002
of each other: the gap was the sweep's orders (mem_sweep.balanced_orders).
Usage: python3 bench/gpu/module_slot.py LIBDIR [rows x width ...]   (LIBDIR holds librmsnorm.so)
"""
import ctypes
import os
import shutil
import statistics
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mem_sweep import Timer  # noqa: E402

COPIES = 3


def load_copies(lib_dir):
    tmp = tempfile.mkdtemp(prefix="kbpkg-slot-")
    libs = []
    for i in range(COPIES):
        p = os.path.join(tmp, f"copy{i}", "librmsnorm.so")
        os.makedirs(os.path.dirname(p))
        shutil.copy(os.path.join(lib_dir, "librmsnorm.so"), p)
        lib = ctypes.CDLL(p)  # RTLD_LOCAL: a module of its own
        f = lib.rmsnorm_bf16
        f.argtypes = ([ctypes.c_void_p] * 3 + [ctypes.c_int64] * 2
                      + [ctypes.c_float, ctypes.c_void_p])
        f.restype = ctypes.c_int
        libs.append(f)
    return libs


def main():
    lib_dir = sys.argv[1]
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[2:]] or [
        (64, 4096), (64, 5120), (512, 1000), (4096, 128), (64, 8192), (4096, 4096)]
    fns = load_copies(lib_dir)
    timer = Timer("cuda", rounds=21)
    print(f"device {torch.cuda.get_device_name()}; {COPIES} copies of {lib_dir}/librmsnorm.so")
    print(f"{'shape':>11} {'order':>8} | " + " ".join(f"{n:>8}" for n in
                                                      ["copy0", "copy0b", "copy1", "copy2"])
          + " us | copy0b/0 copy1/0 copy2/0")
    for rows, width in shapes:
        sets = 4
        xs = [torch.randn(rows, width, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
        w = torch.rand(width, device="cuda", dtype=torch.bfloat16) + 0.5
        out = torch.empty(rows, width, device="cuda", dtype=torch.bfloat16)

        def of(f):
            def call(i):
                rc = f(out.data_ptr(), xs[i].data_ptr(), w.data_ptr(), rows, width, 1e-6,
                       torch.cuda.current_stream().cuda_stream)
                assert rc == 0, rc
            return call
        ref = None
        for f in fns:  # every copy computes the same bytes
            of(f)(0)
            torch.cuda.synchronize()
            ref = out.clone() if ref is None else ref
            assert torch.equal(out, ref)
        for order in ("forward", "reverse"):
            calls = {"copy0": of(fns[0]), "copy0b": of(fns[0]), "copy1": of(fns[1]),
                     "copy2": of(fns[2])}
            if order == "reverse":
                calls = dict(reversed(list(calls.items())))
            t = timer.per_call_us(calls, sets, 2.0)
            print(f"{rows:>5}x{width:<5} {order:>8} | " + " ".join(
                f"{t[n]:8.3f}" for n in ["copy0", "copy0b", "copy1", "copy2"]) + " us | "
                + " ".join(f"{t[n] / t['copy0']:8.3f}" for n in ["copy0b", "copy1", "copy2"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
