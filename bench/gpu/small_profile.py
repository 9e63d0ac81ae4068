"""Our export and torch.compile's kernel at a few small shapes, one call of each inside the
profiled range, for Nsight Compute to compare kernel by kernel (duration, cycles, instructions,
stalls): whether the 0.1-0.2 us torch.compile keeps at 1-64 rows is inside the kernel or
around it. Run under ncu from the repo root, e.g.
  ncu --profile-from-start off --nvtx --section SpeedOfLight --section LaunchStats \\
      --section WarpStateStats --metrics smsp__inst_executed.sum,sm__cycles_elapsed.max \\
      python3 bench/gpu/small_profile.py LIBDIR
LIBDIR holds librmsnorm.so and libactivation.so (bench/gpu/mem_prebuild.sh). Each shape is warmed
(and compiled) first."""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mem_sweep import Packages  # noqa: E402

SHAPES = [("rmsnorm", 1, 128, "bf16"), ("rmsnorm", 7, 1000, "bf16"), ("rmsnorm", 7, 1001, "bf16"),
          ("rmsnorm", 64, 1000, "bf16"), ("silu", 1, 2048, "bf16"), ("silu", 1, 4095, "f32"),
          ("silu", 7, 16384, "bf16"), ("silu", 64, 2048, "bf16"), ("silu", 512, 128, "bf16")]
if os.environ.get("SMALL_PROFILE_SHAPES"):  # e.g. silu:7x16384:bf16,rmsnorm:1x128:f32
    SHAPES = [(op, int(nd.split("x")[0]), int(nd.split("x")[1]), t) for op, nd, t in
              (s.split(":") for s in os.environ["SMALL_PROFILE_SHAPES"].split(","))]
DT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def rms(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, 1e-6)


def silu(x):
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def main():
    pk = Packages(sys.argv[1])
    calls = []
    for op, n, d, t in SHAPES:
        if op == "rmsnorm":
            x = torch.randn(n, d, device="cuda").to(DT[t])
            w = torch.rand(d, device="cuda").to(DT[t])
            out = torch.empty_like(x)
            f = getattr(pk.rms, "rmsnorm_" + t)
            c = torch.compile(rms, dynamic=False)

            def ours(f=f, out=out, x=x, w=w, n=n, d=d):
                assert f(out.data_ptr(), x.data_ptr(), w.data_ptr(), n, d, 1e-6, None) == 0

            def theirs(c=c, x=x, w=w):
                c(x, w)
        else:
            x = torch.randn(n, 2 * d, device="cuda").to(DT[t])
            out = torch.empty(n, d, device="cuda", dtype=DT[t])
            f = getattr(pk.act, "act_silu_and_mul_" + t)
            c = torch.compile(silu, dynamic=False)

            def ours(f=f, out=out, x=x, n=n, d=d):
                assert f(out.data_ptr(), x.data_ptr(), n, d, None) == 0

            def theirs(c=c, x=x):
                c(x)
        for _ in range(3):
            ours()
            theirs()
        calls.append((f"{op} {n}x{d} {t}", [("ours", ours), ("compile", theirs)]))
    profiled(calls)


def profiled(calls):
    """calls: [(shape name, [(label, fn), ...])]: each fn once inside the profiler's range, in an
    NVTX range named 'shape label' (ncu --nvtx), then the shape names."""
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for name, fns in calls:
        for label, fn in fns:
            torch.cuda.nvtx.range_push(f"{name} {label}")
            fn()
            torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    for name, _ in calls:
        print(name)


if __name__ == "__main__":
    main()
