"""The first-party packages' CPU artifacts (through kbpkg.torch, the ops a PyTorch user calls)
against torch eager and torch.compile on the same CPU tensors, in one process.

Each round times every variant of a case back to back (calls repeated for at least --min-ms,
the mean per call), and the table gives each variant's median over --rounds rounds and the
ratios (torch time / kbpkg time: above 1, kbpkg is faster). Every kbpkg result is compared
with eager's first; a mismatch fails the run. Run by bench/cpu/torch_cpu.sh, which installs the
CPU artifacts into a temporary hub."""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from kbpkg import torch as kt


def rms_eager(x, w, eps=1e-6):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, eps)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rms_manual(x, w, eps=1e-6):
    """What a model without F.rms_norm writes, and what torch.compile fuses."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def silu_mul_eager(x):
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def gelu_tanh_eager(x):
    return F.gelu(x, approximate="tanh")


def per_call(fn, min_s):
    fn()
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_s:
            return elapsed / calls


def compiled(fn):
    try:
        return torch.compile(fn, dynamic=False)
    except Exception as e:  # noqa: BLE001 - report and go on without it
        print(f"# torch.compile unavailable: {e}", file=sys.stderr)
        return None


def cases(quick):
    bf = torch.bfloat16
    gemm = [(512, 512, 512), (2048, 2048, 2048), (777, 1000, 3000), (1, 4096, 4096),
            (16, 4096, 4096), (128, 4096, 4096)]
    mem = [(512, 1024), (4096, 4096), (4095, 4095), (1, 14336), (16384, 1024)]
    rms = [(512, 4096), (4096, 4096), (4096, 4095), (1, 8192), (32768, 1024)]
    if quick:
        gemm, mem, rms = gemm[:1], mem[:1], rms[:1]
    g = torch.Generator().manual_seed(0)
    for m, n, k in gemm:
        for dt in (torch.float32, bf):
            a = torch.randn(m, k, generator=g).to(dt)
            b = torch.randn(k, n, generator=g).to(dt)
            yield (f"gemm {str(dt)[6:]}", f"{m}x{n}x{k}", 2.0 * m * n * k, 0,
                   lambda a=a, b=b: kt.gemm(a, b), lambda a=a, b=b: a @ b, None)
    for n, d in mem:
        x = torch.randn(n, 2 * d, generator=g).to(bf)
        yield ("silu_and_mul bf16", f"{n}x{d}", 0, 6 * n * d, lambda x=x: kt.silu_and_mul(x),
               lambda x=x: silu_mul_eager(x), silu_mul_eager)
        y = torch.randn(n, d, generator=g).to(bf)
        yield ("gelu_tanh bf16", f"{n}x{d}", 0, 4 * n * d, lambda y=y: kt.gelu_tanh(y),
               lambda y=y: gelu_tanh_eager(y), gelu_tanh_eager)
    for n, d in rms:
        x = torch.randn(n, d, generator=g).to(bf)
        w = (1 + 0.1 * torch.randn(d, generator=g)).to(bf)
        yield ("rmsnorm bf16", f"{n}x{d}", 0, 4 * n * d + 2 * d,
               lambda x=x, w=w: kt.rmsnorm(x, w), lambda x=x, w=w: rms_eager(x, w), rms_manual)


def args_of(fn):
    return fn.__defaults__ or ()


def check(name, shape, got, want):
    got, want = got.float(), want.float()
    scale = want.abs().max().item() or 1.0
    err = (got - want).abs().max().item() / scale
    tol = 2e-2 if "gemm" not in name else 1e-2
    if not err <= tol:
        sys.exit(f"torch_cpu: {name} {shape}: kbpkg and eager differ by {err:.3g} of the "
                 f"largest value (allowed {tol})")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-ms", type=float, default=30.0)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--settle-ms", type=float, default=100.0)
    o = p.parse_args()
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"{os.cpu_count()} CPUs; {o.rounds} rounds, medians; ratio = torch time / kbpkg time")
    print("| op | shape | kbpkg | eager | compile | eager/kbpkg | compile/kbpkg |")
    print("|---|---|---|---|---|---|---|")
    for name, shape, flops, nbytes, lib, eager, to_compile in cases(o.quick):
        check(name, shape, lib(), eager())
        comp = None
        if to_compile is not None and not o.no_compile:
            c = compiled(to_compile)
            if c is not None:
                args = args_of(eager)
                comp = lambda c=c, args=args: c(*args)  # noqa: E731
                check(name, shape, lib(), comp())
        variants = [lib, eager] + ([comp] if comp else [])
        times = [[] for _ in variants]
        for _ in range(o.rounds):
            for i, v in enumerate(variants):
                # torch's OpenMP workers spin a while after a parallel region; let them sleep
                # before the next variant's calls, or it shares the cores with them
                time.sleep(o.settle_ms / 1e3)
                times[i].append(per_call(v, o.min_ms / 1e3))
        med = [statistics.median(t) for t in times]

        def rate(t):
            return f"{flops / t / 1e9:.0f} GF/s" if flops else f"{nbytes / t / 1e9:.1f} GB/s"

        cells = [f"{m * 1e3:.3f} ms ({rate(m)})" for m in med]
        if len(cells) < 3:
            cells.append("-")
        ratios = [f"{med[1] / med[0]:.2f}", f"{med[2] / med[0]:.2f}" if comp else "-"]
        print(f"| {name} | {shape} | " + " | ".join(cells + ratios) + " |", flush=True)


if __name__ == "__main__":
    main()
