"""The memory-bound packages at every shape: rmsnorm and silu_and_mul against torch eager,
torch.compile and a same-size copy, rows x widths x dtypes, one process.

Each contender is timed as a CUDA graph of K back-to-back calls over rotated input sets (so
shapes below the L2 size are not read from it more than a real layer would) writing one output
buffer (torch's ops get theirs back from the caching allocator call after call), with CUDA
events around each replay; the figure is the median replay over K. Our outputs are NaN-poisoned and
checked against torch in fp32 at every shape before timing. bench/gpu/mem_sweep.sh builds the
packages and runs this; --cpu runs the same flow on the CPU builds (wall clock, no graphs) to
check the script itself.
"""
import argparse
import collections
import ctypes
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

ROWS = [1, 7, 64, 512, 4096, 32768]
WIDTHS = [128, 1000, 2048, 4095, 4096, 5120, 7168, 8192, 14336, 16384]
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
DTYPE_CODE = {"f32": 0, "bf16": 1, "f16": 2}
EPS = 1e-6
OPS = ["rmsnorm", "silu_and_mul"]


def log(out, line):
    print(line, flush=True)
    if out:
        out.write(line + "\n")
        out.flush()


# ---- the packages through ctypes ----


class Packages:
    def __init__(self, lib_dir):
        # RTLD_LOCAL (the default) keeps two builds of the same exports apart (--before-lib-dir)
        self.rms = ctypes.CDLL(os.path.join(lib_dir, "librmsnorm.so"))
        self.act = ctypes.CDLL(os.path.join(lib_dir, "libactivation.so"))
        vp = os.path.join(lib_dir, "libmem_variants.so")
        self.variants = ctypes.CDLL(vp) if os.path.exists(vp) else None
        for t in DTYPES:
            f = getattr(self.rms, "rmsnorm_" + t)
            f.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 2 + [ctypes.c_float,
                                                                         ctypes.c_void_p]
            f.restype = ctypes.c_int
            g = getattr(self.act, "act_silu_and_mul_" + t)
            g.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int64] * 2 + [ctypes.c_void_p]
            g.restype = ctypes.c_int
        if self.variants:
            self.variants.rms_variant.argtypes = [ctypes.c_int] * 4 + [ctypes.c_void_p] * 3 + [
                ctypes.c_int64, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p]
            self.variants.rms_variant.restype = ctypes.c_int
            if hasattr(self.variants, "copy_variant"):
                self.variants.copy_variant.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int64,
                                                                               ctypes.c_void_p]
                self.variants.copy_variant.restype = ctypes.c_int


def stream_ptr(dev):
    return torch.cuda.current_stream().cuda_stream if dev == "cuda" else None


def cudart():
    """cudaMemcpyAsync from the runtime torch loaded (or the toolkit's)."""
    names = ["libcudart.so.13", "libcudart.so.12", "libcudart.so"]
    dirs = [os.path.join(os.path.dirname(torch.__file__), "lib"), "/usr/local/cuda/lib64"]
    for n in names:
        for cand in [n] + [os.path.join(d, n) for d in dirs]:
            try:
                lib = ctypes.CDLL(cand)
                lib.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                                ctypes.c_int, ctypes.c_void_p]
                lib.cudaMemcpyAsync.restype = ctypes.c_int
                return lib, cand
            except OSError:
                continue
    return None, None


# ---- the functions torch users call ----


def torch_rms(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, EPS)


def torch_silu(x):
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def ref_fp32(op, x, w):
    xf = x.float()
    if op == "rmsnorm":
        return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()
    d = x.shape[-1] // 2
    return F.silu(xf[..., :d]) * xf[..., d:]


def tolerance(op, t, d):
    """Elementwise |got - ref| <= rtol |ref| + atol: one rounding of the type, plus fp32
    ordering of d squares for rmsnorm."""
    ulp = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "f32": 2.0 ** -24}[t]
    if op == "rmsnorm":
        return 2 * ulp + (d + 16) * 2 * 5.96e-8, 1e-5
    return 2 * ulp + 8 * 5.96e-8, 1e-5


def check(op, t, got, ref, d):
    rtol, atol = tolerance(op, t, d)
    g = got.float()
    bad = ~((g - ref).abs() <= rtol * ref.abs() + atol)  # NaN fails
    rel = ((g - ref).norm() / ref.norm().clamp_min(1e-30)).item()
    return int(bad.sum().item()), rel


# ---- timing ----


def balanced_orders(n):
    """Orders of contenders 0..n-1 in which each directly follows every other equally often (a
    Williams design: n orders for even n, 2n for odd). What ran just before a contender decides
    what it finds in L2 (a copy contender's 32 MB evicts the inputs the others share), so at
    small shapes the predecessor moves a figure by up to 10%."""
    base, lo, hi = [0], 1, n - 1
    while len(base) < n:
        if len(base) % 2:
            base.append(lo)
            lo += 1
        else:
            base.append(hi)
            hi -= 1
    rows = [[(b + i) % n for b in base] for i in range(n)]
    if n % 2:
        rows += [r[::-1] for r in rows]
    pairs = collections.Counter((r[j], r[j + 1]) for r in rows for j in range(n - 1))
    assert n < 2 or (len(pairs) == n * (n - 1) and len(set(pairs.values())) == 1), \
        "each contender after every other equally often"
    return rows


class Timer:
    """Times several contenders of one shape side by side: each gets its CUDA graph of K calls
    (rotating over `sets`) built first, then the graphs are replayed round-robin, at least
    `rounds` rounds in balanced_orders' orders (each contender directly after every other equally
    often), CUDA events around each replay; a contender's figure is its median replay over K.
    So drift within a shape (clocks, DRAM refresh and temperature, the allocator, first touch of
    fresh buffers) falls on every contender alike instead of on whoever is timed first (the
    12-03/12-04 sweeps timed each in turn, 7 replays each, and read the first one 7-14% slower at
    shapes over 250 MB), and so does the L2 state a predecessor leaves. A fixed rotation keeps who
    runs before whom (the first H200 run of this harness read one export timed twice 3-5% apart at
    silu 32768 x 4096-8192 that way); random orders seeded from the contender count and K, as
    this harness had them until 2026-12-07, repeat the same predecessors at every shape of that
    K and read one library 5-11% apart from an identical copy of itself at 27 of 180 small
    shapes (docs/perf.md, memory-bound "Thirteenth pass")."""

    def __init__(self, dev, rounds=11):
        self.dev = dev
        self.rounds = rounds

    def k_for(self, sets, est_us):
        k = max(sets, min(256, int(300.0 / max(est_us, 0.5))))
        return (k + sets - 1) // sets * sets

    def graph(self, call, sets, k):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for i in range(min(k, 2 * sets)):  # warm: allocator pools, lazy init
                call(i % sets)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for i in range(k):
                call(i % sets)
        g.replay()
        torch.cuda.synchronize()
        return g

    def per_call_us(self, calls, sets, est_us):
        """calls: {name: call or None}; returns {name: median us per call} (NaN for None)."""
        names = [n for n, c in calls.items() if c is not None]
        res = {n: float("nan") for n in calls}
        if self.dev == "cpu":
            ts = {n: [] for n in names}
            for n in names:
                for i in range(2):
                    calls[n](i % sets)
            for r in range(5):
                for n in names[r % len(names):] + names[:r % len(names)]:
                    t0 = time.perf_counter()
                    for i in range(sets):
                        calls[n](i)
                    ts[n].append((time.perf_counter() - t0) / sets * 1e6)
            res.update({n: statistics.median(v) for n, v in ts.items()})
            return res
        k = self.k_for(sets, est_us)
        graphs = {n: self.graph(calls[n], sets, k) for n in names}
        ts = {n: [] for n in names}
        design = balanced_orders(len(names))
        reps = (self.rounds + len(design) - 1) // len(design)
        for row in design * reps:
            order = [names[j] for j in row]
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in order]
            for (a, b), n in zip(ev, order):
                a.record()
                graphs[n].replay()
                b.record()
            torch.cuda.synchronize()
            for (a, b), n in zip(ev, order):
                ts[n].append(a.elapsed_time(b) * 1000.0 / k)
        del graphs
        res.update({n: statistics.median(v) for n, v in ts.items()})
        return res


def quick_us(dev, call):
    """A rough time per call (events around a few calls), to size K."""
    if dev == "cpu":
        return 1.0
    call(0)
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(3):
        call(0)
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) * 1000.0 / 3


# ---- torch.compile: rows dynamic, width static; rows = 1 is its own graph ----


def setup_dynamo():
    import torch._dynamo as dynamo
    cfg = dynamo.config
    for k in ("recompile_limit", "cache_size_limit"):
        if hasattr(cfg, k):
            setattr(cfg, k, 64)
    if hasattr(cfg, "automatic_dynamic_shapes"):
        cfg.automatic_dynamic_shapes = False  # a new width stays static (its own graph)
    return dynamo


def compile_group(dynamo, op, dev, dt, width):
    """A fresh compiled function for one (op, dtype, width), warmed on rows = 64 (rows
    dynamic) and rows = 1. Returns (fn, seconds)."""
    dynamo.reset()
    fn = torch.compile(torch_rms if op == "rmsnorm" else torch_silu)
    t0 = time.perf_counter()
    for rows in (64, 1):
        x, w = make_inputs(op, dev, dt, rows, width, 1)
        x = x[0]
        dynamo.maybe_mark_dynamic(x, 0)
        y = fn(x, w) if op == "rmsnorm" else fn(x)
        if dev == "cuda":
            torch.cuda.synchronize()
        del y
    return fn, time.perf_counter() - t0


def make_inputs(op, dev, dt, rows, width, sets):
    in_w = width if op == "rmsnorm" else 2 * width
    g = torch.Generator(device=dev).manual_seed(rows * 100003 + width)
    xs = [torch.randn(rows, in_w, device=dev, generator=g).mul_(2).to(dt) for _ in range(sets)]
    w = (torch.rand(width, device=dev, generator=g) + 0.5).to(dt) if op == "rmsnorm" else None
    return xs, w


def precompile(args):
    """Worker: compile this worker's share of the groups so the main process finds them in
    the FX graph and Triton caches."""
    idx, count = (int(v) for v in args.compile_only.split("/"))
    dynamo = setup_dynamo()
    groups = [(op, t, w) for op in OPS for t in args.dtypes for w in WIDTHS]
    for i, (op, t, w) in enumerate(groups):
        if i % count == idx:
            compile_group(dynamo, op, "cuda", DTYPES[t], w)
    return 0


# ---- the sweep ----


def bytes_moved(op, es, rows, width):
    if op == "rmsnorm":
        return (2 * rows * width + width) * es
    return 3 * rows * width * es


def main():
    global ROWS, WIDTHS, OPS
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib-dir", required=True)
    ap.add_argument("--log", default="")
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--dtypes", default="bf16,f16,f32")
    ap.add_argument("--rows", default=",".join(map(str, ROWS)))
    ap.add_argument("--widths", default=",".join(map(str, WIDTHS)))
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--compile-only", default="")
    ap.add_argument("--compile-budget", type=float, default=60.0,
                    help="seconds of torch.compile warm-up before the rest is skipped")
    ap.add_argument("--variants", action="store_true", help="time forced rmsnorm plans too")
    ap.add_argument("--rounds", type=int, default=11,
                    help="round-robin rounds of graph replays per shape (median per contender)")
    ap.add_argument("--twin", action="store_true",
                    help="time our export twice as two contenders (column 'twin', xTwin = twin /"
                    " ours): the harness's own spread, which a before/after gap must exceed")
    ap.add_argument("--before-lib-dir", default="",
                    help="the same packages built from other sources (e.g. main's), timed beside"
                    " ours in the same process: columns 'before' and xBef (before / ours)")
    args = ap.parse_args()
    args.dtypes = args.dtypes.split(",")
    ROWS = [int(v) for v in args.rows.split(",")]
    WIDTHS = [int(v) for v in args.widths.split(",")]
    OPS = args.ops.split(",")
    if args.compile_only:
        return precompile(args)

    dev = "cpu" if args.cpu else "cuda"
    out = open(args.log, "w") if args.log else None
    pk = Packages(args.lib_dir)
    before = Packages(args.before_lib_dir) if args.before_lib_dir else None
    rt, rt_name = (None, None) if dev == "cpu" else cudart()
    l2 = 50 << 20
    if dev == "cuda":
        p = torch.cuda.get_device_properties(0)
        l2 = getattr(p, "L2_cache_size", l2)
        log(out, f"device {p.name}, {p.multi_processor_count} SMs, L2 {l2 >> 20} MiB; "
            f"torch {torch.__version__}; cudart {rt_name}")
        try:
            q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.sm,clocks.max.sm,"
                                "clocks.mem,temperature.gpu,power.draw", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=20)
            log(out, "nvidia-smi (driver, sm clock, max sm, mem clock, temp, power): "
                + q.stdout.strip())
        except Exception as e:  # noqa: BLE001 - informational only
            log(out, f"nvidia-smi: {e}")
    large = 4 * l2
    timer = Timer(dev, args.rounds)
    dynamo = None if (args.no_compile or dev == "cpu") else setup_dynamo()
    compile_spent = 0.0
    results = []  # dicts
    failures = 0
    hdr = (f"{'op':12} {'dt':4} {'rows':>5} {'width':>5} {'MB':>7} | {'before':>8} {'ours':>8} "
           f"{'eager':>8} {'compile':>8} {'copy_':>8} {'memcpy':>8} us | {'GB/s':>6} {'xEag':>5} "
           f"{'xCmp':>5} {'%copy':>5} {'xBef':>5} {'xTwin':>5} {'copyk':>8} {'%cpk':>5} | err")
    log(out, hdr)
    for op in OPS:
        for t in args.dtypes:
            dt = DTYPES[t]
            es = torch.tensor([], dtype=dt).element_size()
            for width in WIDTHS:
                cfn = None
                if dynamo is not None and compile_spent < args.compile_budget:
                    try:
                        cfn, secs = compile_group(dynamo, op, dev, dt, width)
                        compile_spent += secs
                    except Exception as e:  # noqa: BLE001 - reported, the rest goes on
                        log(out, f"torch.compile {op} {t} {width}: {type(e).__name__}: {e}")
                for rows in ROWS:
                    r = run_shape(pk, before, rt, timer, dev, op, t, dt, es, rows, width, cfn,
                                  large, out, args.twin)
                    failures += r["bad"] > 0
                    results.append(r)
                    if args.variants and op == "rmsnorm" and pk.variants and t in ("bf16", "f32") \
                            and width in (128, 2048, 4096, 16384) \
                            and (rows >= 4096 or rows in (1, 64)):
                        run_variants(pk, timer, dev, t, dt, es, rows, width, out)
    summarize(results, out, "ours")
    if before is not None:
        summarize(results, out, "before")
    twin_summary(results, out)
    if rt is None and dev == "cuda":
        log(out, "note: no cudart found for cudaMemcpyAsync; copy_ only")
    log(out, f"torch.compile warm-up: {compile_spent:.1f} s")
    log(out, f"checks: {len(results) - failures} shapes passed, {failures} failed")
    return 1 if failures else 0


def run_shape(pk, before, rt, timer, dev, op, t, dt, es, rows, width, cfn, large, out,
              twin=False):
    moved = bytes_moved(op, es, rows, width)
    sets = max(1, min(32, math.ceil(2 * large / max(moved, 1))))
    xs, w = make_inputs(op, dev, dt, rows, width, sets)
    # one output buffer, as torch's ops get from the caching allocator call after call (their
    # freed output comes back): every contender writes the same bytes to the same place
    outs = [torch.empty(rows, width, device=dev, dtype=dt)] * sets
    sp = stream_ptr(dev)
    code = DTYPE_CODE[t]
    def ours_of(p):
        if op == "rmsnorm":
            f = getattr(p.rms, "rmsnorm_" + t)

            def call(i):
                rc = f(outs[i].data_ptr(), xs[i].data_ptr(), w.data_ptr(), rows, width, EPS,
                       stream_ptr(dev))
                if rc != 0:
                    raise RuntimeError(f"rmsnorm_{t} returned {rc}")
        else:
            f = getattr(p.act, "act_silu_and_mul_" + t)

            def call(i):
                rc = f(outs[i].data_ptr(), xs[i].data_ptr(), rows, width, stream_ptr(dev))
                if rc != 0:
                    raise RuntimeError(f"act_silu_and_mul_{t} returned {rc}")
        return call

    ours = ours_of(pk)
    bef = ours_of(before) if before is not None else None
    if op == "rmsnorm":

        def eager(i):
            return torch_rms(xs[i], w)

        def comp(i):
            return cfn(xs[i], w)
    else:
        def eager(i):
            return torch_silu(xs[i])

        def comp(i):
            return cfn(xs[i])
    del code, sp
    # correctness first, on poisoned outputs
    outs[0].fill_(float("nan"))
    ours(0)
    ref = ref_fp32(op, xs[0], w)
    bad, rel = check(op, t, outs[0], ref, width)
    if bef is not None:
        outs[0].fill_(float("nan"))
        bef(0)
        bad_b, _ = check(op, t, outs[0], ref, width)
        bad += bad_b
    _, rel_e = check(op, t, eager(0), ref, width)
    del ref
    # copies of the same bytes: half read, half written
    n_copy = max(1, moved // 2 // es)
    src = [torch.empty(n_copy, device=dev, dtype=dt).normal_() for _ in range(sets)]
    dst = [torch.empty(n_copy, device=dev, dtype=dt)] * sets

    def copy_(i):
        dst[i].copy_(src[i])

    def memcpy(i):
        rt.cudaMemcpyAsync(dst[i].data_ptr(), src[i].data_ptr(), n_copy * es, 3, stream_ptr(dev))

    copyk = None
    if dev == "cuda" and pk.variants is not None and hasattr(pk.variants, "copy_variant"):
        nbk = n_copy * es // 16 * 16

        def copyk(i):
            if pk.variants.copy_variant(dst[i].data_ptr(), src[i].data_ptr(), nbk, stream_ptr(dev)):
                raise RuntimeError("copy_variant failed")

    res = {"op": op, "t": t, "rows": rows, "width": width, "moved": moved, "bad": bad,
           "rel": rel, "rel_eager": rel_e, "large": moved > large}
    est = quick_us(dev, ours)
    tm = timer.per_call_us({"ours": ours, "before": bef, "twin": ours if twin else None,
                           "eager": eager, "compile": comp if cfn is not None else None,
                           "copy_": copy_, "memcpy": memcpy if rt is not None else None,
                           "copyk": copyk},
                          sets, est)
    res.update(tm)
    best_copy = min(v for v in (res["copy_"], res["memcpy"]) if v == v)
    res["x_eager"] = res["eager"] / res["ours"]
    res["x_compile"] = res["compile"] / res["ours"]
    res["pct_copy"] = 100.0 * best_copy / res["ours"]
    res["best_copy"] = best_copy
    res["x_before"] = res["before"] / res["ours"]
    res["x_twin"] = res["twin"] / res["ours"]
    res["pct_copyk"] = 100.0 * res["copyk"] / res["ours"]
    gbs = moved / res["ours"] / 1e3
    log(out, f"{op:12} {t:4} {rows:5d} {width:5d} {moved / 1e6:7.1f} | {res['before']:8.2f} "
        f"{res['ours']:8.2f} {res['eager']:8.2f} {res['compile']:8.2f} {res['copy_']:8.2f} "
        f"{res['memcpy']:8.2f} us | {gbs:6.0f} {res['x_eager']:5.2f} {res['x_compile']:5.2f} "
        f"{res['pct_copy']:5.1f} {res['x_before']:5.2f} {res['x_twin']:5.3f} "
        f"{res['copyk']:8.2f} {res['pct_copyk']:5.1f} | "
        f"{'FAIL ' + str(bad) + ' wrong' if bad else 'ok'} rel {rel:.1e} (eager {rel_e:.1e})")
    del xs, outs, src, dst
    return res


def run_variants(pk, timer, dev, t, dt, es, rows, width, out):
    """Forced rmsnorm plans on one shape: the warp path at R = 16 where it holds the row, the
    block path at R = 2, 4 (one row per block, the weight loaded with x), 8 and 16, the
    streaming kernel; each checked, then timed. For few rows, a 16-byte copy kernel built like
    ours (same .so, same launch path) beside them: what a trivial kernel of ours costs."""
    V = 16 // es
    units = width // V
    cands = [("export", -1, 0, 0)]
    for r, most in ((2, 512), (4, 512)):
        thr = (-(-units // r) + 31) // 32 * 32
        if thr <= most:
            cands.append(("block R%d T%d" % (r, thr), 1, r, thr))
    if units <= 512:
        r = 1
        while 32 * r < units:
            r *= 2
        if r >= 2:
            cands.append(("warp R%d" % r, 0, r, 128 if r >= 8 else 256))
    for r in (8, 16):
        thr = -(-units // r)
        if 32 <= thr <= 256:
            cands.append(("block R%d T%d" % (r, (thr + 31) // 32 * 32), 1, r, (thr + 31) // 32 * 32))
    if units >= 256:
        cands.append(("stream T1024", 2, 0, 1024))
    moved = bytes_moved("rmsnorm", es, rows, width)
    xs, w = make_inputs("rmsnorm", dev, dt, rows, width, 1)
    o = torch.empty(rows, width, device=dev, dtype=dt)
    ref = ref_fp32("rmsnorm", xs[0], w)
    if rows <= 64 and hasattr(pk.variants, "copy_variant"):
        nb = moved // 2 // 16 * 16
        src, dst = torch.empty(nb, device=dev, dtype=torch.uint8), torch.empty(
            nb, device=dev, dtype=torch.uint8)

        def cp(i):
            if pk.variants.copy_variant(dst.data_ptr(), src.data_ptr(), nb, stream_ptr(dev)):
                raise RuntimeError("copy_variant failed")
        us = timer.per_call_us({'c': cp}, 1, quick_us(dev, cp))['c']
        log(out, f"  variant rmsnorm {t} {rows}x{width} {'copy (ours)':16} {us:8.2f} us")
    for name, path, r, thr in cands:
        def call(i, path=path, r=r, thr=thr):
            rc = pk.variants.rms_variant(DTYPE_CODE[t], path, r, thr, o.data_ptr(),
                                         xs[0].data_ptr(), w.data_ptr(), rows, width, EPS,
                                         stream_ptr(dev))
            if rc != 0:
                raise RuntimeError(f"variant {name} returned {rc}")
        o.fill_(float("nan"))
        call(0)
        bad, rel = check("rmsnorm", t, o, ref, width)
        us = timer.per_call_us({'c': call}, 1, quick_us(dev, call))['c']
        log(out, f"  variant rmsnorm {t} {rows}x{width} {name:16} {us:8.2f} us "
            f"{moved / us / 1e3:6.0f} GB/s {'ok' if not bad else 'FAIL'}")


def twin_summary(results, out):
    """The same export timed as two contenders: how far apart the harness reads one library."""
    rs = [r for r in results if r.get("twin", float("nan")) == r.get("twin", float("nan"))]
    if not rs:
        return
    xs = sorted(r["x_twin"] for r in rs)
    big = [r["x_twin"] for r in rs if r["large"]]
    log(out, "")
    log(out, f"twin (ours timed twice, twin / ours) over {len(xs)} shapes: median "
        f"{statistics.median(xs):.3f}, min {xs[0]:.3f}, max {xs[-1]:.3f}" +
        (f"; large shapes ({len(big)}): min {min(big):.3f}, max {max(big):.3f}" if big else ""))
    xb = [r["x_before"] for r in rs if r["x_before"] == r["x_before"]]
    if xb:
        log(out, f"before / ours over the same shapes: median {statistics.median(xb):.3f}, "
            f"min {min(xb):.3f}, max {max(xb):.3f}")


def summarize(results, out, key):
    """Per (op, dtype): worst and geomean of their time over `key`'s ("ours" or "before"), and
    % of copy over large shapes; then the geomean vs torch.compile over all pairs."""
    log(out, "")
    log(out, f"worst per op and dtype, {key} (ratio = their time / {key}; %copy = best copy time"
        f" / {key}, over shapes moving > 4x L2):")
    gms = []
    for op in OPS:
        for t in sorted({r["t"] for r in results}):
            rs = [r for r in results if r["op"] == op and r["t"] == t and r[key] == r[key]]
            if not rs:
                continue
            xe = {id(r): r["eager"] / r[key] for r in rs}
            xc = {id(r): r["compile"] / r[key] for r in rs if r["compile"] == r["compile"]}
            pc = {id(r): 100.0 * r["best_copy"] / r[key] for r in rs if r["large"]}
            we = min(rs, key=lambda r: xe[id(r)])
            gm = statistics.geometric_mean(xe.values())
            line = (f"{op:12} {t:4} vs eager: worst {xe[id(we)]:.2f} at {we['rows']}x"
                    f"{we['width']}, geomean {gm:.2f}")
            if xc:
                wc = min((r for r in rs if id(r) in xc), key=lambda r: xc[id(r)])
                gmc = statistics.geometric_mean(xc.values())
                gms.append(gmc)
                line += (f"; vs compile: worst {xc[id(wc)]:.2f} at {wc['rows']}x"
                         f"{wc['width']}, geomean {gmc:.2f}")
            if pc:
                wb = min((r for r in rs if id(r) in pc), key=lambda r: pc[id(r)])
                line += f"; large: worst {pc[id(wb)]:.1f}% of copy at {wb['rows']}x{wb['width']}"
            log(out, line)
    if gms:
        log(out, f"{key}: geomean vs torch.compile over the {len(gms)} (op, dtype) pairs: "
            f"{statistics.geometric_mean(gms):.2f}")


if __name__ == "__main__":
    sys.exit(main())
