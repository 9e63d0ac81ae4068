"""Host cost per call of a kbpkg torch op against torch's own op and a C++ extension op doing
the same work, on a tiny input where launch cost dominates (median of repeated batches).

    python3 bench/torch_host_cost.py [cpu|cuda] [--graph] [--d=4096]

Needs a hub holding kbpkg-community/rmsnorm and activation for this machine (KBPKG_REGISTRY,
as tests/gpu/prepare.sh or the CPU demo leave it). --graph also times replaying each inside a
CUDA graph (cuda only). Prints one line per op: us/call eager (and in a graph)."""
import statistics
import sys
import time

import torch

from kbpkg import torch as kt

device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
graph = "--graph" in sys.argv
D = int(next((a[4:] for a in sys.argv if a.startswith("--d=")), 4096))
dtype = torch.bfloat16
x = torch.randn(1, D, device=device, dtype=dtype)
w = torch.randn(D, device=device, dtype=dtype)
xg = torch.randn(1, 2 * D, device=device, dtype=dtype)
out = torch.empty_like(x)
rms_op = kt.ops("kbpkg-community/rmsnorm", device).rmsnorm_bf16
act_op = kt.ops("kbpkg-community/activation", device).act_silu_and_mul_bf16

try:
    from torch.utils.cpp_extension import load_inline

    ext = load_inline("kb_bench_ext", cpp_sources="""
#include <torch/extension.h>
torch::Tensor rms(torch::Tensor x, torch::Tensor w, double eps) {
    auto xf = x.to(torch::kFloat);
    return (xf * torch::rsqrt(xf.pow(2).mean(-1, true) + eps) * w.to(torch::kFloat)).to(x.dtype());
}
torch::Tensor silu_mul(torch::Tensor x) {
    auto g = x.chunk(2, -1);
    return torch::silu(g[0]) * g[1];
}
""", functions=["rms", "silu_mul"], verbose=False)
except Exception as e:  # no compiler: say so, time the rest
    print(f"# cpp_extension unavailable: {e}".splitlines()[0])
    ext = None

rms_norm = getattr(torch.nn.functional, "rms_norm", None)
cases = [
    ("rmsnorm  kbpkg op (out given)", lambda: rms_op(out, x, w, 1, D, 1e-6)),
    ("rmsnorm  kt.rmsnorm helper", lambda: kt.rmsnorm(x, w, 1e-6)),
    ("rmsnorm  torch F.rms_norm", (lambda: rms_norm(x, (D,), w, 1e-6)) if rms_norm else None),
    ("rmsnorm  cpp_extension op", (lambda: ext.rms(x, w, 1e-6)) if ext else None),
    ("silu_mul kbpkg op (out alloc)", lambda: act_op(None, xg, 1, D)),
    ("silu_mul kt.silu_and_mul", lambda: kt.silu_and_mul(xg)),
    ("silu_mul torch silu(g)*u", lambda: torch.nn.functional.silu(xg[:, :D]) * xg[:, D:]),
    ("silu_mul cpp_extension op", (lambda: ext.silu_mul(xg)) if ext else None),
]


def sync():
    if device == "cuda":
        torch.cuda.synchronize()


def per_call(fn, n=2000, reps=7):
    for _ in range(200):
        fn()
    sync()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t1 = time.perf_counter()  # host time: what the caller waits for before its next call
        sync()
        samples.append((t1 - t0) / n * 1e6)
    return statistics.median(samples)


def in_graph(fn, n=200):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    return per_call(g.replay, n=20) / n


print(f"# torch {torch.__version__}, {device}, bf16 1x{D}, median us/call (host)")
for name, fn in cases:
    if fn is None:
        print(f"{name:32s} n/a")
        continue
    line = f"{name:32s} {per_call(fn):8.2f}"
    if graph and device == "cuda":
        line += f"   in graph {in_graph(fn):8.2f}"
    print(line)
