#!/usr/bin/env bash
# FP8 block-scaled GEMM on the H200: builds radeonflow/gemm for sm_90a, shows which matrix
# instructions the FP8 kernels use, runs the package check, then times rf_gemm_fp8_blockscale
# against cuBLASLt FP8 through torch._scaled_mm (row-wise and per-tensor scales), the
# block-scaled contract done the plain way (dequantise to bf16, then matmul) and bf16 matmul,
# side by side in one process (CUDA events, medians of 30, 4 input sets rotated so no operand
# is timed out of L2). Needs nvcc + torch. Usage: bench/gpu/fp8_run.sh [outdir]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PKG=$ROOT/kernels/radeonflow/gemm
W=${1:-${OUT:-/tmp}/rf-fp8}; mkdir -p "$W"
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
# the package as built, and variants timed side by side with it (name:flags, flags joined by
# commas), by default: pairs of blocks, no ping-pong (one partial, waited for every K block), no TMA store (C from
# registers), clusters of 2 multicasting A (grid capped at cudaOccupancyMaxActiveClusters, and
# not). FP8_VARIANTS replaces the list (empty: the package alone), e.g. "pp1:-DRF_FP8_PINGPONG=1".
build() { # name extra-flags...
  local name=$1; shift
  nvcc -std=c++17 -O3 -I"$PKG/include" -I"$ROOT/include" -DKBPKG_TARGET='"cuda13-sm_90a-x86_64-linux"' \
    "$@" -Xcompiler -fPIC,-fvisibility=hidden -Xlinker --exclude-libs,ALL -shared -Xptxas -v \
    -gencode arch=compute_90a,code=sm_90a "$PKG/src/gemm.cu" "$PKG/src/gemm_fp8.cu" "$PKG/src/gemm_fp8_mma.cu" \
    -o "$W/lib$name.so" >"$W/build_$name.log" 2>&1 || { tail -30 "$W/build_$name.log"; return 1; }
}
SPECS=${FP8_VARIANTS-"pp1:-DRF_FP8_PINGPONG=1 pp0:-DRF_FP8_PINGPONG=0 ts0:-DRF_FP8_TMA_STORE=0 cl2:-DRF_FP8_CLUSTER=2 cl2nocap:-DRF_FP8_CLUSTER=2,-DRF_FP8_CLUSTER_CAP=0"}
VARIANTS=""
# FP8_PREBUILT_DIR=dir: every build made elsewhere (fp8_prebuild.sh): libgemm.so, libgemm_NAME.so
# for each name of FP8_VARIANTS (their flags are not used), check_gemm and check_gemm_NAME (the
# package check linked against each, rpath $ORIGIN) and their ptxas logs; nothing is compiled.
# FP8_PREBUILT=path/libgemm.so: time that build of the package (same flags, e.g. the one
# gemm_shapes.sh built in the same device call) instead of compiling it again
if [ -n "${FP8_PREBUILT_DIR:-}" ]; then
  cp "$FP8_PREBUILT_DIR"/lib*.so "$FP8_PREBUILT_DIR"/check_* "$FP8_PREBUILT_DIR"/build*.log "$W"/
  for spec in $SPECS; do VARIANTS="$VARIANTS gemm_${spec%%:*}"; done
elif [ -n "${FP8_PREBUILT:-}" ]; then
  cp "$FP8_PREBUILT" "$W/libgemm.so" && echo "prebuilt $FP8_PREBUILT" >"$W/build_gemm.log"
else
  build gemm &
fi
[ -n "${FP8_PREBUILT_DIR:-}" ] || for spec in $SPECS; do
  name=gemm_${spec%%:*}; flags=${spec#*:}
  VARIANTS="$VARIANTS $name"
  build "$name" ${flags//,/ } &
done
wait
for n in gemm $VARIANTS; do [ -f "$W/lib$n.so" ] || exit 1; done
mv "$W/build_gemm.log" "$W/build.log"
grep -A2 "gemm_fp8_wgmma" "$W/build.log" | grep -E "registers|spill|C75" | sed 's/^/ptxas: /' || true
grep -l -i "warning" "$W"/build_*.log "$W/build.log" 2>/dev/null | sed 's/^/ptxas warnings in: /' || true
# FP8_SASS=0 skips the disassembly (cuobjdump of every build takes minutes of a device call)
if [ "${FP8_SASS:-1}" != 0 ] && command -v cuobjdump >/dev/null; then
  cuobjdump --dump-sass "$W/libgemm.so" | awk '/Function : .*gemm_fp8_wgmma/{p=1} /Function : /&&!/gemm_fp8_wgmma/{p=0} p' \
    >"$W/fp8_wgmma.sass" 2>&1 || true
  echo "sass gemm_fp8_wgmma: $(grep -c QGMMA "$W/fp8_wgmma.sass") QGMMA, $(grep -c 'UTMALDG' "$W/fp8_wgmma.sass") UTMALDG, $(grep -c 'LDL\|STL' "$W/fp8_wgmma.sass") LDL/STL"
  for n in gemm $VARIANTS; do # per instantiation (cluster size, tile width) of each build
    cuobjdump --dump-sass "$W/lib$n.so" | awk -v n="$n" '/Function : /{f=$3} f ~ /gemm_fp8_wgmma/ && /QGMMA/{q[f]++}
      f ~ /gemm_fp8_wgmma/ && /LDL|STL/{l[f]++} END{for (k in q) printf "sass %s %s: %d QGMMA, %d LDL/STL\n", n, k, q[k], l[k]}'
  done >"$W/sass_counts.txt" 2>&1 || true
fi
# FP8_CHECKS: the builds to run the package check against (default: all). The check runs every
# rf_gemm_* case of tests/check.c, FP8 last: on the H200, five at once took over 120 s
# (2026-12-04), so check the builds whose plans differ, or give the call the time
# (FP8_CHECK_TIMEOUT seconds per check, default 600).
# FP8_CHECK_FP8ONLY=1: tests/check.c's FP8 cases alone (check_fp8_NAME, bench/gpu/fp8_check.c).
CK=check; SRC=$PKG/tests/check.c
[ "${FP8_CHECK_FP8ONLY:-0}" = 1 ] && CK=check_fp8 SRC=$ROOT/bench/gpu/fp8_check.c
for n in ${FP8_CHECKS:-gemm $VARIANTS}; do # the package check (prebuilt or built here)
  { [ -x "$W/${CK}_$n" ] || nvcc -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -I"$PKG/include" -I"$ROOT/include" \
    "$SRC" "$PKG/src/gemm_cpu.c" "$W/lib$n.so" -o "$W/${CK}_$n"; } &&
    { timeout "${FP8_CHECK_TIMEOUT:-600}" stdbuf -oL "$W/${CK}_$n" >"$W/${CK}_$n.log" 2>&1; echo "$CK $n: rc=$? $(tail -1 "$W/${CK}_$n.log")"; } &
done
wait
grep -E "fp8_blockscale M|FAIL" "$W"/check_*.log 2>/dev/null | grep -v "reference vs" | tail -12 || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv,noheader
# Timing, interleaved: per shape, FP8_ROUNDS rounds (default 7) in which every contender (the
# package, each variant, cuBLASLt row-wise and per-tensor, dequantise + matmul, bf16 matmul)
# takes its turn, the order rotated each round; a turn is the median of FP8_CALLS event-timed
# calls (default 10, after 3 warm-up calls), a contender's figure the median of its turns, so
# clock drift under the power limit falls on all alike. FP8_NOCHECK: variants not checked
# against fp64 (the diagnostic builds, RF_FP8_DIAG, whose results are wrong by design). The SM
# clock and power are sampled while it runs (smi.csv). Per-round figures: rounds.json.
SMI_PID=""
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader,nounits -lms 200 >"$W/smi.csv" 2>/dev/null &
  SMI_PID=$!
fi
W=$W VARIANTS=$VARIANTS PYTHONPATH="$ROOT/bench/gpu" python3 - <<'PY'
import json, os, statistics, torch
from fp8_common import export, inputs, med, dequant_matmul, unit_rowwise_scales, rowwise, fp64, relerr, SETS
W = os.environ["W"]
variants = os.environ["VARIANTS"].split()
nocheck = set("gemm_" + v for v in os.environ.get("FP8_NOCHECK", "").split())
rounds, calls = int(os.environ.get("FP8_ROUNDS", "7")), int(os.environ.get("FP8_CALLS", "10"))
fns = [export(f"{W}/lib{v}.so") for v in ["gemm"] + variants]
shapes = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 7168, 2048), (128, 7168, 2048),
          (16384, 7168, 2048), (2048, 2112, 7168), (64, 7168, 16384), (4096, 24576, 1536)]
if os.environ.get("FP8_SHAPES"):
    shapes = [tuple(int(x) for x in s.split("x")) for s in os.environ["FP8_SHAPES"].split()]
names = ["gemm"] + variants + ["rowwise", "tensor", "deq", "bf16"]
rows, log = [], []
for M, N, K in shapes:
    A, B, sa, sb = inputs(M, N, K)
    A16 = [a.bfloat16() for a in A]; B16 = [b.bfloat16() for b in B]
    C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    s = torch.cuda.current_stream().cuda_stream
    def call(fn):
        def run(i):
            rc = fn(M, N, K, A[i].data_ptr(), sa[i].data_ptr(), B[i].data_ptr(), sb[i].data_ptr(), C.data_ptr(), s)
            assert rc == 0, rc
        return run
    scales = unit_rowwise_scales(M, N)
    one = torch.ones((), device="cuda")
    row = lambda i: rowwise(A[i], B[i], scales)
    tensorwise = lambda i: torch._scaled_mm(A[i], B[i].t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    deq = lambda i: dequant_matmul(A[i], sa[i], B[i], sb[i])
    bf16 = lambda i: A16[i] @ B16[i].t()
    runs = [call(fn) for fn in fns] + [row, tensorwise, deq, bf16]
    # correctness first: C NaN-poisoned, a fresh input set, fp64 product of the dequantised inputs
    ref = fp64(A[1], sa[1], B[1], sb[1])
    errs = {}
    for n, r in zip(names[:len(fns)], runs):
        if n in nocheck:
            continue
        C.fill_(float("nan"))
        r(1); torch.cuda.synchronize()
        errs[n] = relerr(C, ref)
    del ref
    per = {n: [] for n in names}
    for rd in range(rounds):
        k = rd % len(names)
        for n, r in list(zip(names, runs))[k:] + list(zip(names, runs))[:k]:
            per[n].append(med(r, calls))
    t = {n: statistics.median(v) for n, v in per.items()}
    fl = 2 * M * N * K
    tf = {n: fl / x / 1e12 for n, x in t.items()}
    worst = max(errs.values(), key=lambda e: (e[1], e[0]))
    rows.append((M, N, K, tf, t["rowwise"] / t["gemm"], t["deq"] / t["gemm"], worst, errs))
    log.append({"shape": [M, N, K], "seconds": per, "relerr": {n: e[0] for n, e in errs.items()},
                "nan": {n: e[1] for n, e in errs.items()}})
    del A, B, sa, sb, A16, B16, C
    torch.cuda.empty_cache()
json.dump(log, open(f"{W}/rounds.json", "w"), indent=1)
# the spread: each contender's round figures against its median (min..max), and the rel err
print("spread of the rounds (min..max over the median, %) and rel err (fp64) per checked build:")
for (M, N, K, tf, _, _, _, errs), entry in zip(rows, log):
    sp = " ".join(f"{n[5:] if n.startswith('gemm_') else n}:{100 * (min(v) / statistics.median(v) - 1):+.0f}..{100 * (max(v) / statistics.median(v) - 1):+.0f}"
                  for n, v in entry["seconds"].items())
    er = " ".join(f"{n}:{e[0]:.2e}{'/NaN=%d' % e[1] if e[1] else ''}" for n, e in errs.items())
    print(f"  {M}x{N}x{K}: {sp} | {er}")
if variants:
    print("variants / package (time ratio, > 1 = variant faster):")
    for M, N, K, tf, *_ in rows:
        print(f"  {M:>6}x{N:>6}x{K:>6} " + " ".join(f"{v[5:] if v.startswith('gemm_') else v}={tf[v] / tf['gemm']:.3f}" for v in variants))
print(f"{'M x N x K':>20} {'ours':>6} " + " ".join(f"{v[5:] if v.startswith('gemm_') else v:>7}" for v in variants) + f" {'rowwise':>8} {'tensor':>7} {'deq+mm':>7} {'bf16':>6} | {'vs row':>6} {'vs deq':>6} | worst rel err (fp64)")
for M, N, K, tf, r1, r2, (err, nan), _ in rows:
    print(f"{M:>6}x{N:>6}x{K:>6} {tf['gemm']:6.0f} " + " ".join(f"{tf[v]:7.0f}" for v in variants) + f" {tf['rowwise']:8.0f} {tf['tensor']:7.0f} {tf['deq']:7.0f} {tf['bf16']:6.0f} | {r1:6.2f} {r2:6.2f} | {err:.2e}{' NaN=%d' % nan if nan else ''}")
PY
[ -n "$SMI_PID" ] && kill "$SMI_PID" 2>/dev/null
[ -s "$W/smi.csv" ] && python3 - "$W/smi.csv" <<'PY' || true
import statistics, sys
rows = [l.split(", ") for l in open(sys.argv[1]) if l.count(",") == 3]
busy = [(float(r[1]), float(r[2]), float(r[3])) for r in rows if r[2].replace(".", "").isdigit() and float(r[2]) > 300]
if busy:
    clk = sorted(b[0] for b in busy)
    print(f"timing: {len(busy)} busy samples (> 300 W) of {len(rows)}: SM clock median {statistics.median(clk):.0f} MHz "
          f"({clk[0]:.0f}-{clk[-1]:.0f}), power median {statistics.median(b[1] for b in busy):.0f} W, highest temperature {max(b[2] for b in busy):.0f} C")
PY
# FP8_PROFILE="gemm gemm_cl2": Nsight Compute profiles of each named build (one call each, no
# warm-up: ncu replays the kernel), at FP8_PROFILE_SIZES (cubes, default 4096), and with
# FP8_PROFILE_CUBLAS=1 of cuBLASLt's row-wise kernel at each size too, in one ncu process
# (clocks left alone): speed of light, compute and memory workload (pipes, L2, DRAM), warp
# states, scheduler, occupancy, and the stall samples per SASS instruction of our kernel
# (source counters), summed by opcode: where the consumer warps wait (QGMMA / WARPGROUP.DEPBAR:
# the tensor pipe; SYNCS: the stage barriers; FFMA: the promotion; BAR: the epilogue).
# Report text in $W: ncu_details.txt, ncu_raw.csv, ncu_source_*.csv.
if [ -n "${FP8_PROFILE:-}" ]; then
  . "$ROOT/bench/gpu/find_ncu.sh"
  cat >"$W/profile_one.py" <<'PY'
import os, torch
from fp8_common import export, inputs, unit_rowwise_scales, rowwise
libs = os.environ["LIBS"].split()
fns = [export(l) for l in libs]
s = torch.cuda.current_stream().cuda_stream
for size in os.environ.get("SIZES", "4096").split():
    M = N = K = int(size)
    A, B, sa, sb = inputs(M, N, K, 1)
    C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    for fn in fns:
        assert fn(M, N, K, A[0].data_ptr(), sa[0].data_ptr(), B[0].data_ptr(), sb[0].data_ptr(), C.data_ptr(), s) == 0
    if os.environ.get("CUBLAS") == "1":
        rowwise(A[0], B[0], unit_rowwise_scales(M, N))
    torch.cuda.synchronize()
    del A, B, sa, sb, C
PY
  LIBS=""; for n in $FP8_PROFILE; do LIBS="$LIBS $W/lib$n.so"; done
  SIZES=${FP8_PROFILE_SIZES:-4096}
  nb=$(echo $FP8_PROFILE | wc -w); ns=$(echo $SIZES | wc -w); per=$((nb + ${FP8_PROFILE_CUBLAS:-0}))
  LIBS=$LIBS SIZES=$SIZES CUBLAS=${FP8_PROFILE_CUBLAS:-0} PYTHONPATH="$ROOT/bench/gpu" timeout "${FP8_PROFILE_TIMEOUT:-300}" \
    "$NCU" --clock-control none -k "regex:gemm|xmma|cutlass|sm90" --launch-count $((per * ns)) \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats \
    --section SourceCounters --section Occupancy --section LaunchStats -f -o "$W/prof" \
    python3 "$W/profile_one.py" >"$W/ncu_run.txt" 2>&1 || echo "ncu failed: $(tail -5 "$W/ncu_run.txt")"
  if [ -f "$W/prof.ncu-rep" ]; then
    "$NCU" -i "$W/prof.ncu-rep" --page details >"$W/ncu_details.txt" 2>&1 || true
    "$NCU" -i "$W/prof.ncu-rep" --page raw --csv >"$W/ncu_raw.csv" 2>&1 || true
    i=0
    for size in $SIZES; do for n in $FP8_PROFILE; do
      "$NCU" -i "$W/prof.ncu-rep" -k regex:gemm_fp8_wgmma --launch-skip $i --launch-count 1 --page source \
        --csv --print-source sass >"$W/ncu_source_${n}_$size.csv" 2>&1 || true
      grep -q "Warp Stall Sampling" "$W/ncu_source_${n}_$size.csv" ||
        "$NCU" -i "$W/prof.ncu-rep" -k regex:gemm_fp8_wgmma --launch-skip $i --launch-count 1 --page source \
          --csv >"$W/ncu_source_${n}_$size.csv" 2>&1 || true
      i=$((i + 1))
    done; done
    echo "== ncu (kernel: duration, SM clock, throughputs, stalls)"
    grep -E "^  [^ ].*\(|^    (Duration|SM Frequency|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Executed Ipc Active|L2 Hit Rate|Mem Pipes Busy|Grid Size|Registers Per Thread|Warp Cycles Per Issued Instruction|No Eligible) " \
      "$W/ncu_details.txt" | sed 's/  */ /g' | cut -c1-110 || true
    python3 - "$W"/ncu_source_*.csv <<'PY' || true
import csv, sys
# stall samples of our kernel by opcode (the first word of each SASS line, predicate dropped)
for path in sys.argv[1:]:
    lines = open(path, errors="replace").read().splitlines()
    hdr = next((i for i, l in enumerate(lines) if "Warp Stall Sampling (All" in l), None)
    if hdr is None:
        print(f"{path.split('/')[-1]}: no source table ({lines[-1][:100] if lines else 'empty'})")
        continue
    rows = list(csv.reader(lines[hdr:]))
    h = rows[0]
    ci = h.index(next(c for c in h if c.startswith("Warp Stall Sampling (All")))
    si = h.index("Source") if "Source" in h else 1
    by, total = {}, 0
    for r in rows[1:]:
        if len(r) <= max(ci, si):
            continue
        try:
            n = float(r[ci] or 0)
        except ValueError:
            continue
        words = r[si].split()
        op = next((w for w in words if not w.startswith("@")), "?").split(".")[0] if words else "?"
        if "DEPBAR" in r[si] and "WARPGROUP" in r[si]:
            op = "WARPGROUP.DEPBAR"
        if "TRYWAIT" in r[si]:
            op = "SYNCS.TRYWAIT"
        by[op] = by.get(op, 0) + n
        total += n
    top = sorted(by.items(), key=lambda kv: -kv[1])[:10]
    print(f"{path.split('/')[-1]}: {total:.0f} samples: " + ", ".join(f"{k} {100 * v / max(total, 1):.0f}%" for k, v in top))
PY
  fi
fi
