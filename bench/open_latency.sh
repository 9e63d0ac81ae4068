#!/usr/bin/env bash
# Bench: installs the fixture package into a fresh cache from a layout hub, then runs
# kbpkg_bench_open_latency (warm kb_kernel_open vs dlopen+dlsym) on it.
#
#   bench/open_latency.sh [BUILD_DIR]     (env: ITERATIONS=2000 FRESH=31 DEVICES=none)
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
"$BUILD/bench/kbpkg_bench_open_latency" -n "${ITERATIONS:-2000}" -f "${FRESH:-31}" \
    -d "$KBPKG_DEVICES" "$KBPKG_CACHE" "kbtest/vec-add@^0.1" vadd_f32
