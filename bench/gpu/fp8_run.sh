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
for n in ${FP8_CHECKS:-gemm $VARIANTS}; do # the package check (prebuilt or built here)
  { [ -x "$W/check_$n" ] || nvcc -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -I"$PKG/include" -I"$ROOT/include" \
    "$PKG/tests/check.c" "$PKG/src/gemm_cpu.c" "$W/lib$n.so" -o "$W/check_$n"; } &&
    { timeout "${FP8_CHECK_TIMEOUT:-600}" "$W/check_$n" >"$W/check_$n.log" 2>&1; echo "check $n: rc=$? $(tail -1 "$W/check_$n.log")"; } &
done
wait
grep -E "fp8_blockscale M|FAIL" "$W"/check_*.log | grep -v "reference vs" | tail -12 || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv,noheader
W=$W VARIANTS=$VARIANTS PYTHONPATH="$ROOT/bench/gpu" python3 - <<'PY'
import os, torch
from fp8_common import export, inputs, med, dequant_matmul, unit_rowwise_scales, rowwise, fp64, relerr
W = os.environ["W"]
variants = os.environ["VARIANTS"].split()
fns = [export(f"{W}/lib{v}.so") for v in ["gemm"] + variants]
shapes = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 7168, 2048), (128, 7168, 2048),
          (16384, 7168, 2048), (2048, 2112, 7168), (64, 7168, 16384), (4096, 24576, 1536)]
rows = []
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
    ours = call(fns[0])
    scales = unit_rowwise_scales(M, N)
    one = torch.ones((), device="cuda")
    row = lambda i: rowwise(A[i], B[i], scales)
    tensorwise = lambda i: torch._scaled_mm(A[i], B[i].t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    deq = lambda i: dequant_matmul(A[i], sa[i], B[i], sb[i])
    bf16 = lambda i: A16[i] @ B16[i].t()
    C.fill_(float("nan"))
    ours(0); torch.cuda.synchronize()
    ref = fp64(A[0], sa[0], B[0], sb[0])
    err, nan = relerr(C, ref)
    fl = 2 * M * N * K
    t = [med(ours), med(row), med(tensorwise), med(deq), med(bf16)] + [med(call(fn)) for fn in fns[1:]]
    tf = [fl / x / 1e12 for x in t]
    rows.append((M, N, K, tf, t[1] / t[0], t[3] / t[0], err, nan))
    del A, B, sa, sb, A16, B16, C, ref
    torch.cuda.empty_cache()
print(f"{'M x N x K':>20} {'ours':>6} " + " ".join(f"{v[5:]:>7}" for v in variants) + f" {'rowwise':>8} {'tensor':>7} {'deq+mm':>7} {'bf16':>6} | {'vs row':>6} {'vs deq':>6} | rel err (fp64)")
for M, N, K, tf, r1, r2, err, nan in rows:
    print(f"{M:>6}x{N:>6}x{K:>6} {tf[0]:6.0f} " + " ".join(f"{x:7.0f}" for x in tf[5:]) + f" {tf[1]:8.0f} {tf[2]:7.0f} {tf[3]:7.0f} {tf[4]:6.0f} | {r1:6.2f} {r2:6.2f} | {err:.2e}{' NaN=%d' % nan if nan else ''}")
PY
# FP8_PROFILE="gemm gemm_cl2": one Nsight Compute profile of each named build at 4096^3 (speed
# of light, occupancy and cluster scheduling, warp stalls, scheduler; clocks left alone)
if [ -n "${FP8_PROFILE:-}" ]; then
  . "$ROOT/bench/gpu/find_ncu.sh"
  cat >"$W/profile_one.py" <<'PY'
import os, torch
from fp8_common import export, inputs
fn = export(os.environ["LIB"])
M = N = K = 4096
A, B, sa, sb = inputs(M, N, K, 1)
C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    assert fn(M, N, K, A[0].data_ptr(), sa[0].data_ptr(), B[0].data_ptr(), sb[0].data_ptr(), C.data_ptr(), torch.cuda.current_stream().cuda_stream) == 0
torch.cuda.synchronize()
PY
  for n in $FP8_PROFILE; do
    LIB=$W/lib$n.so PYTHONPATH="$ROOT/bench/gpu" "$NCU" --clock-control none -k regex:gemm_fp8_wgmma \
      --launch-skip 2 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis_Tables \
      python3 "$W/profile_one.py" >"$W/ncu_$n.txt" 2>&1 || echo "ncu $n failed: $(tail -3 "$W/ncu_$n.txt")"
    echo "== ncu $n (4096^3)"
    grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Cluster|Waves|Achieved Occupancy|Registers|Grid Size|No Eligible|Active Warps" "$W/ncu_$n.txt" | head -24 || true
  done
fi
