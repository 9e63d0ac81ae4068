"""Per-call time of a trivial kernel of ours against torch's own, as CUDA-graph replays
(mem_sweep.Timer: a graph of K calls, events around each replay, median) and, with --once,
one call of each for Nsight Compute to time alone. Usage: launch_probe.py DIR [--once]"""
import ctypes
import os
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

# The packages' kernels at few rows, where mem_sweep.sh reads them 0.5 us above torch.compile:
# in this process, beside the probe's copy, mem_variants' copy and torch's add of the same
# output, rotating over 4 input sets and over 32 (what the sweep uses for small shapes).
if "--once" not in sys.argv and os.path.exists(f"{d}/libactivation.so"):
    from mem_sweep import Packages  # noqa: E402
    pk = Packages(d)
    pk.variants.copy_variant.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int64, ctypes.c_void_p]
    st = lambda: torch.cuda.current_stream().cuda_stream
    print(f"\n{'op':9} {'shape':>9} {'sets':>4} {'ours':>7} {'probe copy':>10} {'variants copy':>13} {'torch add':>9}  (us per call)")
    for op, rows, width in [("silu", 1, 128), ("silu", 7, 4095), ("silu", 64, 4096),
                            ("rmsnorm", 1, 128), ("rmsnorm", 1, 4096), ("rmsnorm", 7, 4095)]:
        for sets in [4, 32]:
            inw = 2 * width if op == "silu" else width
            xs = [torch.randn(rows, inw, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
            w = torch.randn(width, device="cuda", dtype=torch.bfloat16)
            out = torch.empty(rows, width, device="cuda", dtype=torch.bfloat16)
            nb = rows * width * 2 // 16 * 16
            src = [torch.empty(nb, device="cuda", dtype=torch.uint8) for _ in range(sets)]
            dst = torch.empty(nb, device="cuda", dtype=torch.uint8)
            one = torch.ones(rows, width, device="cuda", dtype=torch.bfloat16)
            if op == "silu":
                ours = lambda i: pk.act.act_silu_and_mul_bf16(out.data_ptr(), xs[i].data_ptr(), rows, width, st())
            else:
                ours = lambda i: pk.rms.rmsnorm_bf16(out.data_ptr(), xs[i].data_ptr(), w.data_ptr(), rows, width, 1e-6, st())
            calls = [ours,
                     lambda i: libs["static"].probe_copy(dst.data_ptr(), src[i].data_ptr(), nb, st()),
                     lambda i: pk.variants.copy_variant(dst.data_ptr(), src[i].data_ptr(), nb, st()),
                     lambda i: torch.add(xs[i][:, :width], one, out=out)]
            t = [timer.per_call_us(c, sets, 2.0) for c in calls]
            print(f"{op:9} {rows:>4}x{width:<5} {sets:>4} {t[0]:7.2f} {t[1]:10.2f} {t[2]:13.2f} {t[3]:9.2f}")
