#!/usr/bin/env bash
# Runs ON the GPU machine (device tool), over what tests/gpu/prepare.sh put in .carry/gpu:
# probe, install from three hubs (exact sm_90a, sm_80 SASS only, PTX only) with --explain,
# load every first-party package through kb_kernel_open and check it on the GPU against its
# CPU artifact, run gemm_demo, check kbpkg.torch on CUDA tensors (tests/gpu/torch_check.py),
# `kbpkg test` the CUDA targets with the machine's nvcc, `kbpkg bench` the installed CUDA
# targets (clocks through NVML) and publish the results, and time the loader. Skips cleanly
# (exit 77, SKIP) where there is no NVIDIA GPU.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
C=$ROOT/.carry/gpu
FINAL=${OUT:-/tmp/kbpkg-gpu}
# logs go to a scratch folder and come back as one tarball (the device tool returns few files)
OUTDIR=/tmp/kbpkg-gpu-e2e-logs
rm -rf "$OUTDIR"
mkdir -p "$OUTDIR" "$FINAL"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU here (tests/gpu/run.sh needs one; run it with the device tool)"
  exit 77
fi
export LD_LIBRARY_PATH=$C/lib:${LD_LIBRARY_PATH:-}
export PATH=$C/bin:/usr/local/cuda/bin:$PATH
export KBPKG_CONFIG_DIR=/tmp/kbcfg KBPKG_CACHE=/tmp/kbcache
fails=0
summary=()
check() { # name, command...   (exit 77: skipped, with the log's SKIP line)
  local name=$1; shift
  "$@" >"$OUTDIR/$name.log" 2>&1
  local rc=$?
  if [ $rc = 0 ]; then summary+=("PASS $name")
  elif [ $rc = 77 ]; then summary+=("SKIP $name: $(grep -m1 SKIP "$OUTDIR/$name.log")")
  else
    summary+=("FAIL $name (see $name.log)"); fails=$((fails + 1)); tail -15 "$OUTDIR/$name.log"; fi
}
expect_target() { # hub, expected target
  rm -rf "$KBPKG_CACHE"
  kbpkg --registry "/tmp/hub-$1" resolve radeonflow/gemm --explain &&
  kbpkg --registry "/tmp/hub-$1" install radeonflow/gemm --json | tee /tmp/inst.json &&
  grep -q "\"target\": \"$2\"" /tmp/inst.json
}
# build the CUDA and CPU artifacts here with kbpkg (this machine's nvcc, 16 cores) and publish
# them to three layout hubs: everything; gemm with only sm_80 SASS; gemm with only PTX
declare -A TARGETS=(
  [radeonflow/gemm]="cuda13-sm_80 cuda13-sm_90 cuda13-sm_90a cuda13-compute_80 cpu"
  [kbpkg-community/activation]="cuda13-sm_80 cuda13-sm_90 cuda13-compute_80 cpu"
  [kbpkg-community/rmsnorm]="cuda13-sm_80 cuda13-sm_90 cuda13-compute_80 cpu")
t0=$(date +%s)
for pkg in "${!TARGETS[@]}"; do
  n=$(basename "$pkg"); args=()
  for t in ${TARGETS[$pkg]}; do args+=(--target "$t"); done
  ( kbpkg build "$ROOT/kernels/$pkg" "${args[@]}" -j8 --out "/tmp/dist/$n" &&
    kbpkg publish "$ROOT/kernels/$pkg" --registry /tmp/hub-full --out "/tmp/dist/$n" "${args[@]}"
  ) >"$OUTDIR/build_$n.log" 2>&1 &
done
wait
echo "built and published in $(( $(date +%s) - t0 )) s"
tail -n 12 "$OUTDIR"/build_*.log
kbpkg publish "$ROOT/kernels/radeonflow/gemm" --registry /tmp/hub-sm80 --out /tmp/dist/gemm \
  --target cuda13-sm_80 --target cpu >"$OUTDIR/publish_sm80.log" 2>&1
kbpkg publish "$ROOT/kernels/radeonflow/gemm" --registry /tmp/hub-ptx --out /tmp/dist/gemm \
  --target cuda13-compute_80 --target cpu >"$OUTDIR/publish_ptx.log" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv
t0=$(date +%s%N); kbpkg probe --json >"$OUTDIR/probe.json"; t1=$(date +%s%N)
kbpkg probe
echo "cold kbpkg probe (process start + cuInit in a child): $(( (t1 - t0) / 1000000 )) ms"
check probe_h200 grep -q '"arch": "sm_90"' "$OUTDIR/probe.json"
check install_exact_sm90a expect_target full cuda13-sm_90a-x86_64-linux
# sm_80 SASS cannot run on sm_90 (SASS crosses no major version): refused, and with nvcc here
# the resolver builds from the published source the declared arch that ranks best on the
# device: gemm declares sm_90a, which an sm_90 device runs best (issue 13's declared-targets rule)
check install_sm80_refused_local_build expect_target sm80 cuda13-sm_90a-x86_64-linux
check explain_sm80_refused grep -q "sm_80 SASS" "$OUTDIR/install_sm80_refused_local_build.log"
# resolution for another machine: an sm_86 device takes the sm_80 SASS
check resolve_sm86_takes_sm80 sh -c "kbpkg --registry /tmp/hub-sm80 --device sm_86 resolve radeonflow/gemm --json | grep -q '\"target\": \"cuda13-sm_80-x86_64-linux\"'"
check install_ptx_jit expect_target ptx cuda13-compute_80-x86_64-linux
rm -rf "$KBPKG_CACHE"
for p in radeonflow/gemm kbpkg-community/activation kbpkg-community/rmsnorm; do
  kbpkg --registry /tmp/hub-full install "$p" >>"$OUTDIR/installs.log" 2>&1
  kbpkg --registry /tmp/hub-full --device none install "$p" >>"$OUTDIR/installs.log" 2>&1
done
kbpkg list
check open_check open_check
cat "$OUTDIR/open_check.log" | grep -E "opened|FAIL|checks"
check gemm_demo gemm_demo
cat "$OUTDIR/gemm_demo.log"
# kbpkg.torch (this tree's python/kbpkg) on CUDA and CPU tensors, from the hub and cache above
torch_check() {
  KBPKG_REGISTRY=/tmp/hub-full KBPKG_LIB=$C/lib/libkbpkg.so.0 PYTHONUNBUFFERED=1 \
    python3 "$ROOT/tests/gpu/torch_check.py"
}
check torch_check torch_check
grep -E "^(ok|FAIL|SKIP)|passed" "$OUTDIR/torch_check.log"
check verify kbpkg verify
# kbpkg bench of each installed first-party package (the installs above) on the GPU: the bench
# program is compiled with this machine's nvcc against the installed CUDA artifact and run at
# full size; its device must carry the SM clock sampled through NVML during the run and NVML's
# driver version; the results are published to the folder hub and `kbpkg info` reads them back.
# The JSON is kept as bench_<name>.json / info_<name>.json in the logs.
bench_check() { # bench.json or info.json, target prefix: a target that ran, its device, clocks
  python3 - "$@" <<'PY'
import json, sys
path, prefix = sys.argv[1], sys.argv[2]
doc = json.load(open(path))
rows = doc["benchmarks"] if "benchmarks" in doc else doc["targets"]  # info.json, bench.json
ran = [t for t in rows if t["target"].startswith(prefix) and t.get("status", "ran") == "ran"]
assert ran, "no %s target ran: %s" % (prefix, [(t["target"], t.get("status"), t.get("message")) for t in rows])
for t in ran:
    d = t["device"]
    assert isinstance(d.get("clock_mhz"), (int, float)), "clock_mhz not a number: %s" % d
    if prefix.startswith("cuda"):
        assert d.get("driver_version"), "no NVML driver version: %s" % d
        assert d.get("clock_samples"), "no clock samples: %s" % d
    print("%s on %s: driver %s, SM %s MHz (min %s, max %s, %s samples, busy only %s), mem %s MHz"
          % (t["target"], d["name"], d.get("driver_version", d.get("driver")), d["clock_mhz"],
             d.get("clock_min_mhz"), d.get("clock_max_mhz"), d.get("clock_samples"),
             d.get("clock_busy_only"), d.get("mem_clock_mhz")))
if "published" in doc:
    assert doc["published"], "--publish published nothing"
PY
}
bench_pkg() { # package, target prefix, registry
  local n; n=$(basename "$1")
  kbpkg --registry "$3" bench "$1" --target "$2" --publish --json >"$OUTDIR/bench_$n.json" &&
    bench_check "$OUTDIR/bench_$n.json" "$2"
}
bench_info() { # package, target prefix, registry
  local n; n=$(basename "$1")
  kbpkg --registry "$3" info "$1" --json >"$OUTDIR/info_$n.json" &&
    bench_check "$OUTDIR/info_$n.json" "$2"
}
t0=$(date +%s)
for p in radeonflow/gemm kbpkg-community/activation kbpkg-community/rmsnorm; do
  n=$(basename "$p")
  check "bench_$n" bench_pkg "$p" cuda13 /tmp/hub-full
  check "bench_info_$n" bench_info "$p" cuda13 /tmp/hub-full
  grep -h " on " "$OUTDIR/bench_$n.log" "$OUTDIR/bench_info_$n.log"
done
echo "kbpkg bench of the three packages (nvcc builds + full-size runs + publish): $(( $(date +%s) - t0 )) s"
# kbpkg test builds each CUDA target's library and test with this machine's nvcc
KBPKG_JOBS=8 check test_gemm kbpkg test "$ROOT/kernels/radeonflow/gemm" --target cuda13-sm_90 \
  --target cuda13-sm_90a --target cuda13-compute_80
check test_activation kbpkg test "$ROOT/kernels/kbpkg-community/activation" --target cuda13-sm_90
check test_rmsnorm kbpkg test "$ROOT/kernels/kbpkg-community/rmsnorm" --target cuda13-sm_90
tail -6 "$OUTDIR/test_gemm.log"
# loader figures
check loader_timing loader_timing radeonflow/gemm rf_gemm_bf16
cat "$OUTDIR/loader_timing.log"
lib=$(ls "$KBPKG_CACHE"/pkgs/radeonflow/gemm/1.0.0/cuda13-sm_90a-x86_64-linux/lib/libgemm.so)
for i in 1 2; do
  a=$(date +%s%N); python3 -c 'import torch' 2>/dev/null; b=$(date +%s%N)
  python3 -c "import torch; torch.ops.load_library('$lib')" 2>/dev/null; c=$(date +%s%N)
  echo "python import torch: $(( (b - a) / 1000000 )) ms; import + torch.ops.load_library: $(( (c - b) / 1000000 )) ms"
done | tee "$OUTDIR/torch_load.log"
{ printf '%s\n' "${summary[@]}"
  echo "$(( ${#summary[@]} - fails )) passed, $fails failed"; } | tee "$OUTDIR/summary.txt"
tar czf "$FINAL/gpu_e2e_logs.tgz" -C "$OUTDIR" .
[ "$fails" = 0 ]
