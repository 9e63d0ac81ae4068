#!/usr/bin/env bash
# Bench: installs the fixture package into a fresh cache from a layout hub, then runs
# kbpkg_bench_open_latency (warm kb_kernel_open vs dlopen+dlsym) on it.
#
#   bench/open_latency.sh [BUILD_DIR]     (env: ITERATIONS=2000 FRESH=31 DEVICES=none BASELINE=DIR)
#
# BASELINE names the build folder of another kbpkg (e.g. the previous commit, built elsewhere):
# its bench program then runs on the same installed cache too, alternating with this build's,
# ROUNDS=3 times each, so that before/after figures come from one run.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
TMP=$(mktemp -d /tmp/kbpkg-bench-open.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

export KBPKG_CACHE=$TMP/cache KBPKG_CONFIG_DIR=$TMP/config KBPKG_SYSTEM_CONFIG=/nonexistent
export KBPKG_DEVICES=${DEVICES:-none}
cp -r "$ROOT/tests/data/builder/vadd" "$TMP/pkg"
"$BUILD/bench/kbpkg_bench_publish_package" "$TMP/pkg" "$TMP/hub" cpu-x86_64_v2 >/dev/null
"$BUILD/kbpkg" -q --registry "$TMP/hub" install --allow-unsigned kbtest/vec-add >/dev/null
bench() {
    "$1/bench/kbpkg_bench_open_latency" -n "${ITERATIONS:-2000}" -f "${FRESH:-31}" \
        -d "$KBPKG_DEVICES" "$KBPKG_CACHE" "kbtest/vec-add@^0.1" vadd_f32
}
if [ -z "${BASELINE:-}" ]; then
    bench "$BUILD"
    exit 0
fi
BASELINE=$(cd "$BASELINE" && pwd)
for round in $(seq "${ROUNDS:-3}"); do
    for which in this baseline; do
        [ "$((round % 2))" = 0 ] && which=$([ "$which" = this ] && echo baseline || echo this)
        echo "== round $round: $which build"
        bench "$([ "$which" = this ] && echo "$BUILD" || echo "$BASELINE")"
    done
done
