#!/usr/bin/env python3
"""kbpkg.torch on CUDA tensors against torch references, on a machine with torch and a GPU.

Installs and publishes nothing: the packages come from the registry and cache that the
environment names (KBPKG_REGISTRY, KBPKG_CACHE, KBPKG_CONFIG_DIR, KBPKG_LIB; tests/gpu/run.sh
sets them after publishing /tmp/hub-full), and this tree's python/kbpkg is the binding.

Checks gemm (bf16, f16, f32; odd shapes, padded leading dimensions, alpha/beta), rmsnorm and
the activations against float64 references on upcast inputs (||out - ref|| / ||ref|| under a
per-dtype bound), fresh random inputs every run (KBPKG_CHECK_SEED reproduces), NaN-poisoned
outputs, device and dtype mismatches (a clear error, inputs untouched), a non-blocking
torch.cuda.Stream (the kernels must wait for the work queued before them on it), CUDA graph
capture, and CPU tensors on the same machine (the CPU artifact, not the GPU one).

Exit 0 when every check passes, 1 when one fails, 77 (skipped) without torch or CUDA.
"""
import math
import os
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


try:
    import torch
    import torch.nn.functional as F
except ImportError:
    skip(f"torch is not installed for {sys.executable}")
if not torch.cuda.is_available():
    skip(f"torch {torch.__version__} sees no CUDA device")

sys.path.insert(0, os.path.join(ROOT, "python"))
import kbpkg  # noqa: E402
from kbpkg import torch as kt  # noqa: E402

DEV = torch.device("cuda", torch.cuda.current_device())
SEED = int(os.environ.get("KBPKG_CHECK_SEED") or (time.time_ns() ^ os.getpid()) % 2**63)
GEN = {"cuda": torch.Generator(device=DEV), "cpu": torch.Generator()}
for g in GEN.values():
    g.manual_seed(SEED)

# ||out - ref|| / ||ref|| bounds (METHOD: fp32 arithmetic far under 1e-3, bf16 between 1e-3
# and 1e-2); the 16-bit results carry one rounding to their type on top of fp32 math.
TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}
TOL_GEMM = {torch.float32: 1e-4, torch.float16: 2e-3, torch.bfloat16: 1e-2}
DTYPES = (torch.bfloat16, torch.float16, torch.float32)

results = []


def check(name):
    def wrap(fn):
        results.append((name, fn))
        return fn

    return wrap


def rand(*shape, dtype=torch.float32, device=DEV, scale=1.0):
    """Fresh normal data (never zeros), rounded to dtype."""
    g = GEN["cpu" if torch.device(device).type == "cpu" else "cuda"]
    return (torch.randn(*shape, generator=g, device=device) * scale).to(dtype)


def poisoned(shape, dtype, device=DEV):
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


def relerr(out, ref):
    out64 = out.double()
    if torch.isnan(out64).any():
        return math.inf
    den = ref.norm().item()
    return (out64 - ref).norm().item() / den if den > 0 else (out64 - ref).norm().item()


def expect_close(what, out, ref, tol):
    nan = int(torch.isnan(out.double()).sum())
    err = relerr(out, ref)
    if nan or not err <= tol:
        raise AssertionError(f"{what}: relerr {err:.2e} (bound {tol:.0e}), {nan} NaN of "
                             f"{out.numel()}")
    return err


def expect_raises(exc, fragments, fn):
    try:
        fn()
    except exc as e:
        msg = str(e)
        for f in fragments:
            if f not in msg:
                raise AssertionError(f"{exc.__name__} message lacks {f!r}: {msg!r}")
        return msg
    raise AssertionError(f"no {exc.__name__} raised (wanted one naming {fragments})")


def ref_rmsnorm(x, w, eps):
    x64, w64 = x.double(), w.double()
    return x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * w64


def ref_act(op, x):
    x64 = x.double()
    if op == "gelu_tanh":
        return F.gelu(x64, approximate="tanh")
    g, u = x64.chunk(2, dim=-1)
    return (F.silu(g) if op == "silu_and_mul" else F.gelu(g)) * u


ACT = {"silu_and_mul": kt.silu_and_mul, "gelu_and_mul": kt.gelu_and_mul,
       "gelu_tanh": kt.gelu_tanh}

# ---- the artifacts each kind of tensor gets ----


@check("targets: CUDA tensors load cuda artifacts, CPU tensors cpu ones")
def _():
    seen = []
    for pkg in ("radeonflow/gemm", "kbpkg-community/rmsnorm", "kbpkg-community/activation"):
        g, c = kt._kernel(pkg, "gpu"), kt._kernel(pkg, "cpu")
        assert g.target.startswith("cuda"), f"{pkg} for CUDA tensors: {g.target}"
        assert c.target.startswith("cpu-"), f"{pkg} for CPU tensors: {c.target}"
        seen.append(f"{pkg} {g.target} / {c.target}")
    return "; ".join(seen)


# ---- gemm ----

GEMM_SHAPES = [(256, 256, 256), (129, 65, 127), (1, 4097, 33), (4095, 4097, 1000), (33, 8, 0),
               (7, 1, 5)]


@check("gemm: bf16/f16/f32, odd shapes, c created, NaN-poisoned c with beta=0")
def _():
    worst = {}
    for dt in DTYPES:
        for M, N, K in GEMM_SHAPES:
            a, b = rand(M, K, dtype=dt), rand(K, N, dtype=dt)
            ref = a.double() @ b.double()
            what = f"gemm {dt} {M}x{N}x{K}"
            err = expect_close(what + " (c=None)", kt.gemm(a, b), ref, TOL_GEMM[dt])
            c = poisoned((M, N), dt)
            out = kt.gemm(a, b, c, alpha=1.0, beta=0.0)
            assert out is c, "gemm did not write into the c it was given"
            expect_close(what + " (poisoned c, beta 0)", c, ref, TOL_GEMM[dt])
            worst[dt] = max(worst.get(dt, 0.0), err)
    return ", ".join(f"{str(k)[6:]} worst relerr {v:.1e}" for k, v in worst.items())


@check("gemm: alpha and beta with c read, padded (odd) leading dimensions")
def _():
    out = []
    for dt in DTYPES:
        for M, N, K, alpha, beta in [(200, 136, 72, 1.5, 0.5), (67, 33, 129, -0.75, 2.0),
                                     (64, 64, 64, 0.0, 1.0)]:
            # a, b and c views into wider buffers: lda = K + 7, ldb = N + 3, ldc = N + 5
            a = rand(M, K + 7, dtype=dt)[:, :K]
            b = rand(K, N + 3, dtype=dt)[:, :N]
            cbuf = rand(M, N + 5, dtype=dt)
            c = cbuf[:, :N]
            pad_before = cbuf[:, N:].clone()
            ref = alpha * (a.double() @ b.double()) + beta * c.double()
            kt.gemm(a, b, c, alpha=alpha, beta=beta)
            err = expect_close(f"gemm {dt} {M}x{N}x{K} alpha {alpha} beta {beta} lda {K + 7}",
                               c, ref, TOL_GEMM[dt])
            assert torch.equal(cbuf[:, N:], pad_before), "gemm wrote past N into c's padding"
            out.append(f"{err:.1e}")
    return "relerr " + " ".join(out)


# ---- rmsnorm ----

RMS_SHAPES = [(16, 4096), (1000, 1024), (3, 4095), (7, 13), (2, 40000), (2, 3, 512), (64, 8192),
              (300, 24)]


@check("rmsnorm: shapes and dtypes vs float64, NaN-poisoned out, in place, misaligned rows")
def _():
    worst = {}
    for dt in DTYPES:
        for shape in RMS_SHAPES:
            d = shape[-1]
            x, w = rand(*shape, dtype=dt, scale=3.0), rand(d, dtype=dt)
            eps = 1e-6
            ref = ref_rmsnorm(x, w, eps)
            out = poisoned(shape, dt)
            assert kt.rmsnorm(x, w, eps, out=out) is out
            err = expect_close(f"rmsnorm {dt} {shape}", out, ref, TOL[dt])
            expect_close(f"rmsnorm {dt} {shape} (out=None)", kt.rmsnorm(x, w, eps), ref, TOL[dt])
            y = x.clone()
            kt.rmsnorm(y, w, eps, out=y)
            expect_close(f"rmsnorm {dt} {shape} in place", y, ref, TOL[dt])
            worst[dt] = max(worst.get(dt, 0.0), err)
        # rows one element off 16-byte alignment: the kernels' scalar path
        n, d = 9, 4096
        buf = rand(n * d + 1, dtype=dt, scale=3.0)
        x = buf[1:].view(n, d)
        w = rand(d, dtype=dt)
        expect_close(f"rmsnorm {dt} misaligned x", kt.rmsnorm(x, w), ref_rmsnorm(x, w, 1e-6), TOL[dt])
    return ", ".join(f"{str(k)[6:]} worst relerr {v:.1e}" for k, v in worst.items())


# ---- activations ----

# (norm-wise errors need more than a handful of elements: one tiny result alone can sit at
# the 16-bit types' subnormal spacing)
ACT_SHAPES = [(64, 2 * 4096), (3, 2 * 13), (5, 7, 2 * 1000), (1, 2 * 64), (128, 2 * 14336)]


@check("activations: silu/gelu and mul, gelu_tanh vs float64 (torch formulas), poisoned out")
def _():
    worst = {}
    for op, fn in ACT.items():
        for dt in DTYPES:
            for shape in ACT_SHAPES:
                if op == "gelu_tanh":
                    shape = (*shape[:-1], shape[-1] // 2)
                x = rand(*shape, dtype=dt, scale=3.0)
                ref = ref_act(op, x)
                out = poisoned(tuple(ref.shape), dt)
                assert fn(x, out=out) is out
                err = expect_close(f"{op} {dt} {shape}", out, ref, TOL[dt])
                expect_close(f"{op} {dt} {shape} (out=None)", fn(x), ref, TOL[dt])
                worst[(op, dt)] = max(worst.get((op, dt), 0.0), err)
    by_dt = {}
    for (op, dt), v in worst.items():
        by_dt[dt] = max(by_dt.get(dt, 0.0), v)
    return ", ".join(f"{str(k)[6:]} worst relerr {v:.1e}" for k, v in by_dt.items())


@check("activations: NaN in gives NaN out exactly where torch's float64 formula has NaN")
def _():
    for dt in DTYPES:
        x = rand(16, 2 * 64, dtype=dt, scale=3.0)
        x.view(-1)[::37] = float("nan")
        x[0, 1] = float("inf")
        x[1, 2] = -float("inf")
        for op in ("silu_and_mul", "gelu_and_mul"):
            out, ref = ACT[op](x), ref_act(op, x)
            if not torch.equal(torch.isnan(out), torch.isnan(ref)):
                raise AssertionError(f"{op} {dt}: NaN at {int(torch.isnan(out).sum())} places, "
                                     f"reference at {int(torch.isnan(ref).sum())}")
            inf = torch.isinf(ref)
            assert torch.equal(out.double()[inf], ref[inf]), f"{op} {dt}: infinities differ"
    return "bf16/f16/f32"


# ---- errors: clear, and nothing lost ----


@check("errors: device and dtype mismatches, bad out, unsupported dtype; inputs untouched")
def _():
    a, b = rand(8, 8, dtype=torch.bfloat16), rand(8, 8, dtype=torch.bfloat16)
    x, w = rand(4, 64, dtype=torch.bfloat16), rand(64, dtype=torch.bfloat16)
    keep = [t.clone() for t in (a, b, x, w)]
    expect_raises(ValueError, ["different devices", "cuda", "cpu"], lambda: kt.gemm(a, b.cpu()))
    expect_raises(ValueError, ["different devices", "weight", "cpu"],
                  lambda: kt.rmsnorm(x, w.cpu()))
    expect_raises(ValueError, ["different devices", "weight", "cuda"],
                  lambda: kt.rmsnorm(x.cpu(), w))
    expect_raises(ValueError, ["different devices", "out"],
                  lambda: kt.silu_and_mul(x, out=torch.empty(4, 32, dtype=x.dtype)))
    expect_raises(TypeError, ["different dtypes"], lambda: kt.gemm(a, b.half()))
    expect_raises(TypeError, ["different dtypes"], lambda: kt.rmsnorm(x, w.float()))
    expect_raises(TypeError, ["unsupported dtype", "float64"], lambda: kt.gemm(a.double(),
                                                                                 b.double()))
    expect_raises(ValueError, ["must be (4, 32)"],
                  lambda: kt.silu_and_mul(x, out=torch.empty(4, 64, dtype=x.dtype, device=DEV)))
    expect_raises(ValueError, ["row-major"], lambda: kt.gemm(a.t(), b))
    expect_raises(ValueError, ["contiguous"], lambda: kt.rmsnorm(x.t(), rand(4, dtype=x.dtype)))
    expect_raises(ValueError, ["overlap"],
                  lambda: kt.silu_and_mul(x, out=x.view(-1)[64:192].view(4, 32)))
    buf = rand(4 * 64 + 32, dtype=torch.bfloat16)
    expect_raises(ValueError, ["overlap"],
                  lambda: kt.rmsnorm(buf[:256].view(4, 64), w, out=buf[32:].view(4, 64)))
    out = poisoned((4, 64), torch.bfloat16)
    expect_raises(kbpkg.KernelError, ["rmsnorm_bf16 returned -1"],
                  lambda: kt.rmsnorm(x, w, eps=-1.0, out=out))
    torch.cuda.synchronize()
    for t, k in zip((a, b, x, w), keep):
        assert torch.equal(t, k), "a failed call changed an input"
    assert torch.isnan(out.float()).all(), "a refused call wrote to out"
    return "ValueError/TypeError/KernelError with the names; inputs unchanged"


# ---- streams and graphs ----


def _sleep(cycles):
    """Queue a spin of `cycles` GPU clocks on the current stream (40M: 20 ms at 2 GHz)."""
    if hasattr(torch.cuda, "_sleep"):
        torch.cuda._sleep(cycles)
    else:
        m = torch.randn(4096, 4096, device=DEV)
        for _ in range(cycles // 2_000_000):
            m = m @ m
            m /= m.norm()


@check("streams: a non-blocking torch.cuda.Stream, the kernels ordered after its queued work")
def _():
    s = torch.cuda.Stream()
    src_x = rand(512, 4096, dtype=torch.bfloat16, scale=3.0)
    src_a, src_b = rand(512, 256, dtype=torch.bfloat16), rand(256, 384, dtype=torch.bfloat16)
    w = rand(4096, dtype=torch.bfloat16)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        x = poisoned((512, 4096), torch.bfloat16)
        a, b = poisoned((512, 256), torch.bfloat16), poisoned((256, 384), torch.bfloat16)
        _sleep(40_000_000)  # the inputs arrive only after this, on s
        x.copy_(src_x)
        a.copy_(src_a)
        b.copy_(src_b)
        y = kt.rmsnorm(x, w)
        z = kt.silu_and_mul(x)
        c = kt.gemm(a, b)
        y2 = y.clone()  # consumers on s see finished results
    s.synchronize()
    expect_close("rmsnorm on s", y, ref_rmsnorm(src_x, w, 1e-6), TOL[torch.bfloat16])
    expect_close("rmsnorm on s, read on s", y2, ref_rmsnorm(src_x, w, 1e-6), TOL[torch.bfloat16])
    expect_close("silu_and_mul on s", z, ref_act("silu_and_mul", src_x), TOL[torch.bfloat16])
    expect_close("gemm on s", c, src_a.double() @ src_b.double(), TOL_GEMM[torch.bfloat16])
    return "rmsnorm, silu_and_mul, gemm waited for a spin queued on s before their inputs"


@check("graphs: rmsnorm, silu_and_mul and gemm each captured on torch's stream and replayed")
def _():
    x = rand(256, 2048, dtype=torch.float16)
    w = rand(2048, dtype=torch.float16)
    a, b = rand(128, 64, dtype=torch.float16), rand(64, 96, dtype=torch.float16)
    cases = {
        "rmsnorm": (lambda: kt.rmsnorm(x, w), lambda: ref_rmsnorm(x, w, 1e-6), TOL),
        "silu_and_mul": (lambda: kt.silu_and_mul(x), lambda: ref_act("silu_and_mul", x), TOL),
        "gemm": (lambda: kt.gemm(a, b), lambda: a.double() @ b.double(), TOL_GEMM),
    }
    problems = []
    for name, (call, ref, tol) in cases.items():
        try:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):  # warm up (loads the kernel) outside the capture
                call()
            torch.cuda.current_stream().wait_stream(s)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                y = call()
            for _ in range(2):
                x.copy_(rand(256, 2048, dtype=torch.float16))
                a.copy_(rand(128, 64, dtype=torch.float16))
                graph.replay()
                torch.cuda.synchronize()
                expect_close(f"graph {name}", y, ref(), tol[torch.float16])
        except Exception as e:
            problems.append(f"{name}: {type(e).__name__}: {e}")
    if problems:
        raise AssertionError("; ".join(problems))
    return "two replays each on fresh inputs"


# ---- CPU tensors on the GPU machine ----


@check("CPU tensors on this GPU machine run the CPU artifact")
def _():
    a, b = rand(33, 17, device="cpu"), rand(17, 9, device="cpu")
    expect_close("cpu gemm", kt.gemm(a, b), a.double() @ b.double(), TOL_GEMM[torch.float32])
    x, w = rand(5, 64, dtype=torch.bfloat16, device="cpu"), rand(64, dtype=torch.bfloat16,
                                                                  device="cpu")
    expect_close("cpu rmsnorm", kt.rmsnorm(x, w), ref_rmsnorm(x, w, 1e-6), TOL[torch.bfloat16])
    expect_close("cpu silu_and_mul", kt.silu_and_mul(x), ref_act("silu_and_mul", x),
                 TOL[torch.bfloat16])
    return kt._kernel("radeonflow/gemm", "cpu").target


@check("typed ops: kt.ops on CUDA tensors, out allocated from its shape rule, argument errors")
def _():
    rms = kt.ops("kbpkg-community/rmsnorm", "cuda")
    x, w = rand(8, 4096, dtype=torch.bfloat16, scale=3.0), rand(4096, dtype=torch.bfloat16)
    y = rms.rmsnorm_bf16(None, x, w, 8, 4096, 1e-6)
    expect_close("rmsnorm_bf16 op", y.view(8, 4096), ref_rmsnorm(x, w, 1e-6), TOL[torch.bfloat16])
    expect_raises(kbpkg.ArgumentError, ["argument 'weight' is on cpu", "runs on cuda"],
                  lambda: rms.rmsnorm_bf16(None, x, w.cpu(), 8, 4096, 1e-6))
    expect_raises(kbpkg.ArgumentError, ["argument 'x' must hold bf16 elements, got float16"],
                  lambda: rms.rmsnorm_bf16(None, x.half(), w, 8, 4096, 1e-6))
    return f"{rms.namespace}::rmsnorm_bf16 on {x.device}, errors name the argument"


@check("typed load: kbpkg.load callables on CUDA tensors and a CUDA __dlpack__ object")
def _():
    class DLPackOnly:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    k = kt._kernel("kbpkg-community/activation", "gpu")
    x = rand(16, 2 * 1024, dtype=torch.float16)
    out = poisoned((16, 1024), torch.float16)
    stream = torch.cuda.current_stream().cuda_stream
    k.act_silu_and_mul_f16(DLPackOnly(out), DLPackOnly(x), 16, 1024, stream)
    expect_close("silu_and_mul via DLPack", out, ref_act("silu_and_mul", x), TOL[torch.float16])
    return f"{k.target}: act_silu_and_mul_f16 through __dlpack__"


@check("torch.compile(fullgraph=True) through the ops on CUDA, then captured in a CUDA graph")
def _():
    if not kt._compile_supported(torch):
        return "skipped part: this torch has no torch.library fake registration (eager only)"
    w = rand(4096, dtype=torch.bfloat16)

    def f(x):
        return kt.silu_and_mul(torch.cat([kt.rmsnorm(x, w), x], dim=-1))

    x = rand(4, 4096, dtype=torch.bfloat16, scale=3.0)
    g = torch.compile(f, fullgraph=True)
    expect_close("compiled", g(x), f(x), TOL[torch.bfloat16])
    static_x = x.clone()
    g(static_x)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        f(static_x)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = f(static_x)
    x2 = rand(4, 4096, dtype=torch.bfloat16, scale=3.0)
    static_x.copy_(x2)
    graph.replay()
    expect_close("graph replay", static_y, f(x2), TOL[torch.bfloat16])
    return "fullgraph compile matched eager; the eager ops replayed in a CUDA graph"


@check("layer mapping: kernelize swaps an RMSNorm on CUDA and keeps a float64 one, saying why")
def _():
    class Norm(torch.nn.Module):
        def __init__(self, d):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(d, device=DEV))
            self.eps = 1e-6

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    m = torch.nn.Sequential(Norm(256), Norm(256).double())
    report = kt.kernelize(m, {Norm: kt.RMSNORM})
    if report["0"] != "kbpkg-community/rmsnorm" or not report["1"].startswith("kept:"):
        raise AssertionError(report)
    x = rand(3, 256)
    expect_close("kernelized", m[0](x), ref_rmsnorm(x, m[0].weight.detach(), 1e-6), 1e-5)
    return str(report)


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(DEV)}, kbpkg "
          f"{kbpkg.version()}, seed {SEED} (KBPKG_CHECK_SEED={SEED} reproduces)")
    print(f"registry {os.environ.get('KBPKG_REGISTRY', '(config)')}, cache "
          f"{os.environ.get('KBPKG_CACHE', '(config)')}")
    failed = 0
    for name, fn in results:
        t0 = time.time()
        try:
            note = fn()
            torch.cuda.synchronize()
            print(f"ok   {name}: {note} ({time.time() - t0:.1f} s)")
        except Exception as e:  # every failure is reported, the rest still run
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            traceback.print_exc(limit=3)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
