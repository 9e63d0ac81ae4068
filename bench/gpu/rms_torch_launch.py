"""Which kernels torch eager (F.rms_norm) and torch.compile launch for rmsnorm at a few shapes,
and with what grid and block: run under Nsight Compute with launch metrics only, e.g.
  ncu --profile-from-start off --metrics launch__grid_size,launch__block_size,\
launch__registers_per_thread,gpu__time_duration.sum python3 bench/gpu/rms_torch_launch.py
Each shape is warmed (and compiled) first; only one call of each is inside the profiled range."""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from small_profile import profiled  # noqa: E402

SHAPES = [(4096, 1000, "bf16"), (4096, 2048, "f32"), (4096, 2048, "bf16"), (32768, 128, "bf16"),
          (4096, 128, "f32"), (4096, 16384, "bf16"), (4096, 1000, "f16")]
DT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def rms(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, 1e-6)


def main():
    calls = []
    for n, d, t in SHAPES:
        x = torch.randn(n, d, device="cuda").to(DT[t])
        w = torch.rand(d, device="cuda").to(DT[t])
        c = torch.compile(rms, dynamic=False)
        rms(x, w)
        c(x, w)
        calls.append((f"{n}x{d} {t}", [("eager", lambda x=x, w=w: rms(x, w)),
                                         ("compile", lambda x=x, w=w, c=c: c(x, w))]))
    profiled(calls)


if __name__ == "__main__":
    main()
