#!/usr/bin/env bash
# rmsnorm and silu_and_mul at every shape against torch eager, torch.compile and copies
# (bench/gpu/mem_sweep.py), in one device call of about 150 s on the H200: builds both packages
# for sm_90 with nvcc, runs their checks (plain, with rmsnorm capped at 7 blocks so every kernel
# loops over rows, and under compute-sanitizer memcheck) while worker processes fill the
# torch.compile caches, then the sweep. Prints the sweep's table last; logs under the outdir.
# Usage: bench/gpu/mem_sweep.sh [outdir] [extra mem_sweep.py args, e.g. --variants]
# MEM_BEFORE=dir (a tree with kernels/kbpkg-community/{rmsnorm,activation} and include/, e.g.
# main's sources): its two packages are built too and timed beside ours in the same sweep
# (columns 'before' and xBef), so one run shows before and after side by side.
# MEM_PREBUILT=dir: what bench/gpu/mem_prebuild.sh built (off the device): no compiling here.
# Timing is interleaved (mem_sweep.py's Timer); pass --twin to time our export twice.
# A prebuilt folder with odd0/ (activation with the odd-width kernel forced, mem_prebuild.sh)
# has its check run plain and under memcheck too.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FINAL=${1:-${OUT:-/tmp/kbpkg-sweep-out}}
shift || true
# logs go to a scratch folder and come back as one tarball (the device tool returns few files)
OUTDIR=/tmp/kbpkg-sweep-logs
rm -rf "$OUTDIR"
B=/tmp/kbpkg-sweep-build
WORKERS=${SWEEP_WORKERS:-10}
WPIDS=/tmp/kbpkg-sweep-workers.pid
rm -f "$WPIDS"
status=0
mkdir -p "$OUTDIR" "$FINAL" "$B/grid7"
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
PY=${KBPKG_PYTHON:-python3}
SWEEP=$ROOT/bench/gpu/mem_sweep.py
# one compile process each (no pool of 16 per worker); workers do not keep their autotuning
# picks (the GPU is shared while they run): the sweep benchmarks the configs itself, alone
export TORCHINDUCTOR_COMPILE_THREADS=1
export TORCHINDUCTOR_CACHE_DIR=/tmp/kbpkg-sweep-inductor
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu \
    --format=csv,noheader | tee "$OUTDIR/gpu.txt"
nvcc --version | tail -1
for i in $(seq 0 $((WORKERS - 1))); do
    TORCHINDUCTOR_AUTOTUNE_LOCAL_CACHE=0 "$PY" -c "
import sys, torch._inductor.config as c
c.autotune_local_cache = False
sys.argv = ['mem_sweep.py', '--lib-dir', '-', '--compile-only', '$i/$WORKERS'] + sys.argv[1:]
sys.path.insert(0, '$ROOT/bench/gpu')
import mem_sweep
sys.exit(mem_sweep.main())" "$@" >"$OUTDIR/precompile_$i.log" 2>&1 &
    echo $! >>"$WPIDS"
done

if [ -n "${MEM_PREBUILT:-}" ]; then
    # built off the device by bench/gpu/mem_prebuild.sh (same commands): nothing to compile here
    B=$MEM_PREBUILT
    cp "$B"/logs/build_*.log "$OUTDIR"/ 2>/dev/null
else
    rm -rf "$B" # a before/ left by an earlier run must not be timed as this run's
    MEM_BEFORE=${MEM_BEFORE:-} bash "$ROOT/bench/gpu/mem_prebuild.sh" "$B" "$OUTDIR"
fi
[ -f "$B/before/librmsnorm.so" ] && set -- --before-lib-dir "$B/before" "$@"
echo "builds: $(( $(date +%s) - t0 )) s"
grep -h -A2 "Compiling entry" "$OUTDIR"/build_activation.log "$OUTDIR"/build_rmsnorm.log |
    grep -E "spill|registers" | grep -v " 0 bytes spill stores" | head -5

checks() { # name binary [runner...]: in the background, result in check_<name>.rc
    local name=$1 bin=$2
    shift 2
    if [ ! -x "$bin" ]; then
        echo "$name: BUILD FAILED"
        tail -20 "$OUTDIR"/build_*.log
        echo 1 >"$OUTDIR/check_$name.rc"
        return
    fi
    (timeout 60 "$@" "$bin" >"$OUTDIR/check_$name.log" 2>&1; echo $? >"$OUTDIR/check_$name.rc") &
    checkpids+=($!)
}
checkpids=()
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
names="activation rmsnorm rmsnorm_grid7"
checks activation "$B/check_activation"
checks rmsnorm "$B/check_rmsnorm"
checks rmsnorm_grid7 "$B/grid7/check"
if [ -x "$B/odd0/check" ]; then # a prebuilt folder from before odd0/ has none
    names="$names activation_odd0"
    checks activation_odd0 "$B/odd0/check"
fi
if [ -x "$SAN" ]; then
    if [ -x "$B/odd0/check" ]; then
        names="$names activation_odd0_memcheck"
        checks activation_odd0_memcheck "$B/odd0/check" "$SAN" --tool memcheck --error-exitcode 3
    fi
    names="$names rmsnorm_memcheck activation_memcheck rmsnorm_grid7_racecheck"
    checks rmsnorm_memcheck "$B/check_rmsnorm" "$SAN" --tool memcheck --error-exitcode 3
    checks activation_memcheck "$B/check_activation" "$SAN" --tool memcheck --error-exitcode 3
    checks rmsnorm_grid7_racecheck "$B/grid7/check" "$SAN" --tool racecheck --error-exitcode 3
fi
wait "${checkpids[@]}"
for n in $names; do
    rc=$(cat "$OUTDIR/check_$n.rc" 2>/dev/null || echo "?")
    echo "check $n: rc=$rc ($(grep -c '^check: ok' "$OUTDIR/check_$n.log" 2>/dev/null) ok)" \
        "$(tail -1 "$OUTDIR/check_$n.log" 2>/dev/null | cut -c1-100)"
    if [ "$rc" != 0 ]; then
        grep -m5 -E "FAIL|ERROR|Invalid|hazard" "$OUTDIR/check_$n.log"
        status=1
    fi
done
echo "checks done: $(( $(date +%s) - t0 )) s; waiting for the compile workers"
while read -r pid; do wait "$pid" || echo "worker $pid exited $?"; done <"$WPIDS"
rm -f "$WPIDS"
echo "workers done: $(( $(date +%s) - t0 )) s"
# the table goes straight to the outdir: a call cut short by its time limit still returns it
"$PY" "$SWEEP" --lib-dir "$B" --log "$FINAL/sweep.txt" "$@" >"$OUTDIR/sweep_stdout.txt" 2>&1 ||
    status=1
echo "sweep done: $(( $(date +%s) - t0 )) s"
grep -E "^(device|nvidia-smi|torch.compile |checks:)" "$FINAL/sweep.txt"
grep -E "FAIL|Error|error" "$OUTDIR/sweep_stdout.txt" | head -5
tar -czf "$FINAL/logs.tar.gz" -C "$OUTDIR" .
sed -n '/^worst per op/,$p' "$FINAL/sweep.txt"
exit $status
