#!/usr/bin/env bash
# Where the FP8 mma.sync kernel (plain sm_90 build) spends its time on the H200: a second timing
# of it against the SIMT kernel, torch._scaled_mm (row-wise) and dequantise-then-matmul (the
# spread against fp8_mma_run.sh's run), then one Nsight Compute profile of the kernel at
# 4096^3 (speed of light, pipe utilisation, warp stalls, shared-memory conflicts; clocks left
# alone). Needs nvcc, torch and ncu. Usage: bench/gpu/fp8_mma_profile.sh [workdir]; with $OUT
# set, the timings, the SASS and the ncu report text are copied there.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PKG=$ROOT/kernels/radeonflow/gemm
W=${1:-/tmp/rf-fp8-mma-prof}
mkdir -p "$W"
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
lib() {
  nvcc -std=c++17 -O3 -I"$PKG/include" -I"$PKG/src" -I"$ROOT/include" \
    -DKBPKG_TARGET="\"cuda13-$2-x86_64-linux\"" -Xcompiler -fPIC,-fvisibility=hidden -shared \
    -arch=sm_90 "$PKG/src/gemm_fp8.cu" "$PKG/src/gemm_fp8_mma.cu" -o "$W/lib$1.so"
}
lib gemm sm_90 &
lib simt sm_80 &
for j in $(jobs -p); do wait "$j"; done
cuobjdump --dump-sass "$W/libgemm.so" | awk '/Function : /{f=/gemm_fp8_mma.*128/} f' >"$W/sass-bm128.txt" || true
cat >"$W/drive.py" <<'PY'
import os, sys, torch
from fp8_common import export, inputs, med, dequant_matmul, unit_rowwise_scales, rowwise
W = os.environ["W"]
fns = {v: export(f"{W}/lib{v}.so") for v in ("gemm", "simt")}
s = torch.cuda.current_stream().cuda_stream
profile = len(sys.argv) > 1
for M, N, K in [(4096, 4096, 4096)] if profile else [(4096, 4096, 4096), (128, 7168, 2048)]:
    A, B, sa, sb = inputs(M, N, K)
    C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    ours = lambda v: (lambda i: fns[v](M, N, K, A[i].data_ptr(), sa[i].data_ptr(), B[i].data_ptr(), sb[i].data_ptr(), C.data_ptr(), s))
    if profile:
        for i in range(3): ours("gemm")(i)
        torch.cuda.synchronize()
        continue
    scales = unit_rowwise_scales(M, N)
    row = lambda i: rowwise(A[i], B[i], scales)
    deq = lambda i: dequant_matmul(A[i], sa[i], B[i], sb[i])
    t = {"mma": med(ours("gemm")), "simt": med(ours("simt"), 10), "row": med(row), "deq": med(deq)}
    tf = {k: 2 * M * N * K / x / 1e12 for k, x in t.items()}
    print(f"{M}x{N}x{K} TFLOP/s: mma {tf['mma']:.0f} simt {tf['simt']:.1f} _scaled_mm row-wise {tf['row']:.0f} "
          f"dequant+mm {tf['deq']:.0f} | mma/simt {t['simt'] / t['mma']:.1f}x, vs row-wise {t['row'] / t['mma']:.2f}, vs deq {t['deq'] / t['mma']:.2f}")
PY
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
export PYTHONPATH="$ROOT/bench/gpu" # fp8_common.py, for drive.py under ncu too
W=$W python3 "$W/drive.py" | tee "$W/timing.txt"
. "$ROOT/bench/gpu/find_ncu.sh"
W=$W "$NCU" --clock-control none -k regex:gemm_fp8_mma --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
  --section MemoryWorkloadAnalysis_Tables --section InstructionStats --section Occupancy \
  python3 "$W/drive.py" profile >"$W/ncu.txt" 2>&1 || echo "ncu failed: $(tail -3 "$W/ncu.txt")"
[ -n "${OUT:-}" ] && cp "$W/timing.txt" "$W/ncu.txt" "$W/sass-bm128.txt" "$OUT"/ 2>/dev/null || true
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Executed Ipc A|Achieved Occupancy|Stall|pipe|Pipe|Bank|bank" "$W/ncu.txt" | head -40 || true
grep -E "HMMA|F2FP|LDSM" -o "$W/sass-bm128.txt" | sort | uniq -c || true
echo "total ${SECONDS}s"
