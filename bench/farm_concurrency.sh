#!/usr/bin/env bash
# 16 concurrent stage+merge workers (and plain publishers) on one version x 20 rounds, against a
# layout folder and a docker-registry on loopback: prints targets lost (docs/reliability.md).
#   bash bench/farm_concurrency.sh [BUILD_DIR] [WORKERS] [ROUNDS]
set -euo pipefail
build=${1:-build} workers=${2:-16} rounds=${3:-20}
bench=$build/bench/kbpkg_bench_farm_concurrency
T=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: %s/storage\nhttp:\n  addr: 127.0.0.1:%s\n' "$T" "$port" > "$T/config.yml"
docker-registry serve "$T/config.yml" > "$T/registry.log" 2>&1 &
reg=$!
trap 'kill $reg; wait $reg 2>/dev/null || true; rm -rf "$T"' EXIT
until curl -sf "http://127.0.0.1:$port/v2/" >/dev/null; do sleep 0.2; done
for mode in stage publish; do
  echo "== layout, $mode"; "$bench" "$T/layout-$mode" "$workers" "$rounds" "$mode" | tail -1
  echo "== docker-registry, $mode"; "$bench" "oci://127.0.0.1:$port/$mode" "$workers" "$rounds" "$mode" | tail -1
done
