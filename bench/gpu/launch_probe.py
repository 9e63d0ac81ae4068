"""Per-call time of a trivial kernel of ours against torch's own, as CUDA-graph replays
(mem_sweep.Timer: a graph of K calls, events around each replay, median) and, with --once,
one call of each for Nsight Compute to time alone. Usage: launch_probe.py DIR [--once]"""
import ctypes
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from mem_sweep import Timer  # noqa: E402

d = sys.argv[1]
libs = {}
for name in ["static", "shared"]:
    lib = ctypes.CDLL(f"{d}/libprobe_{name}.so")
    lib.probe_copy.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int64, ctypes.c_void_p]
    lib.probe_copy.restype = ctypes.c_int
    libs[name] = lib
SETS = 4
timer = Timer("cuda", 0.3)
print(f"{'bytes':>9} {'torch copy_':>12} {'torch add':>10} {'ours static':>12} {'ours shared':>12}  (us per call)")
for nbytes in [16 * 1024, 40960, 1 << 20]:
    src = [torch.randn(nbytes // 4, device="cuda") for _ in range(SETS)]
    dst = [torch.empty_like(s) for s in src]

    def ours(lib):
        def call(i):
            rc = lib.probe_copy(dst[i].data_ptr(), src[i].data_ptr(), nbytes,
                                torch.cuda.current_stream().cuda_stream)
            assert rc == 0, rc
        return call

    calls = {"torch copy_": lambda i: dst[i].copy_(src[i]),
             "torch add": lambda i: torch.add(src[i], 1.0, out=dst[i]),
             "ours static": ours(libs["static"]), "ours shared": ours(libs["shared"])}
    if "--once" in sys.argv:
        for c in calls.values():
            c(0)
        torch.cuda.synchronize()
        continue
    t = {k: timer.per_call_us(c, SETS, 2.0) for k, c in calls.items()}
    for k in ["ours static", "ours shared"]:
        calls[k](0)
        torch.cuda.synchronize()
        assert torch.equal(dst[0], src[0]), k
    print(f"{nbytes:>9} " + " ".join(f"{t[k]:>12.2f}" for k in calls))
