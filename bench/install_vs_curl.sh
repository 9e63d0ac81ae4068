#!/usr/bin/env bash
# Bench: cold `kbpkg install` of a ~50 MB artifact from a loopback docker-registry, side by side
# with curl + sha256sum + bsdtar of the same layer blob and `skopeo copy` of the same tag; also
# records every request the registry saw during one cold install.
#
#   bench/install_vs_curl.sh [BUILD_DIR]      (env: RUNS=5 SIZE_MB=50 KEEP=1 BASELINE=DIR)
#
# The methods run interleaved in each round (A B C, B C A, C A B, ...) so that the shared,
# noisy machine hurts them alike; medians of RUNS rounds and ratios against curl are printed.
# BASELINE names the build folder of another kbpkg (e.g. the previous commit, built elsewhere):
# its install joins the rounds as "kbpkg-baseline", for before/after figures from one run.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
RUNS=${RUNS:-5}
SIZE_MB=${SIZE_MB:-50}
KBPKG=$BUILD/kbpkg
PUBLISH=$BUILD/bench/kbpkg_bench_publish_package
PKG=kbtest/vec-add
VERSION=0.1.0

for tool in docker-registry curl sha256sum bsdtar skopeo jq "$KBPKG" "$PUBLISH"; do
    command -v "$tool" >/dev/null || { echo "install_vs_curl: $tool not found" >&2; exit 1; }
done

TMP=$(mktemp -d /tmp/kbpkg-bench-install.XXXXXX)
REG_PID=
cleanup() {
    # wait answers 143 for the killed registry: under set -e that ended the trap before the rm
    [ -n "$REG_PID" ] && kill "$REG_PID" 2>/dev/null && wait "$REG_PID" 2>/dev/null || true
    [ -n "${KEEP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

now_ns() { date +%s%N; }

# ---- a docker-registry on a free loopback port, with its access log on ----
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$TMP/registry.yml" <<EOF
version: 0.1
log:
  level: error
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $TMP/storage
http:
  addr: 127.0.0.1:$PORT
EOF
docker-registry serve "$TMP/registry.yml" >"$TMP/registry.log" 2>&1 &
REG_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/v2/" >/dev/null && break; sleep 0.1; done
REGISTRY=oci://127.0.0.1:$PORT/bench
REPO_URL=http://127.0.0.1:$PORT/v2/bench/$PKG

# ---- the fixture package padded with incompressible bytes inside its library ----
# Only lib/, the header, kbpkg.json and LICENSE go into an artifact, so the padding is a
# .rodata section assembled from random bytes (.incbin): the library still loads and passes
# the builder's and the installer's checks.
cp -r "$ROOT/tests/data/builder/vadd" "$TMP/pkg"
head -c $((SIZE_MB * 1024 * 1024)) /dev/urandom >"$TMP/pad.bin"
cat >>"$TMP/pkg/src/vadd_cpu.c" <<EOF

/* bench padding: $SIZE_MB MiB of random bytes */
__asm__(".section .rodata.kbpkg_bench_pad,\"a\"\n.globl kbpkg_bench_pad\nkbpkg_bench_pad:\n"
        ".incbin \"$TMP/pad.bin\"\n.previous\n");
EOF
KBPKG_CACHE=$TMP/publish-cache "$PUBLISH" "$TMP/pkg" "$REGISTRY" cpu-x86_64_v2 >"$TMP/publish.txt"

# The layer blob of the cpu artifact, found the way a client would: index -> manifest -> layer.
ACCEPT_INDEX='Accept: application/vnd.oci.image.index.v1+json'
ACCEPT_MANIFEST='Accept: application/vnd.oci.image.manifest.v1+json'
MANIFEST=$(curl -sf -H "$ACCEPT_INDEX" "$REPO_URL/manifests/$VERSION" |
    jq -r '.manifests[] | select(.annotations["dev.kbpkg.target"] | startswith("cpu-")) | .digest')
LAYER=$(curl -sf -H "$ACCEPT_MANIFEST" "$REPO_URL/manifests/$MANIFEST" | jq -r '.layers[0].digest')
LAYER_SIZE=$(curl -sf -H "$ACCEPT_MANIFEST" "$REPO_URL/manifests/$MANIFEST" | jq -r '.layers[0].size')
BLOB_URL=$REPO_URL/blobs/$LAYER
echo "artifact layer $LAYER: $LAYER_SIZE bytes ($(awk "BEGIN{printf \"%.1f\", $LAYER_SIZE/1048576}") MiB)"

# ---- the three methods; each gets a fresh folder, removed outside the timing ----
install_with() {
    KBPKG_CACHE=$2/cache KBPKG_DEVICES=none KBPKG_CONFIG_DIR=$2/config \
        KBPKG_SYSTEM_CONFIG=/nonexistent "$1" -q --registry "$REGISTRY" \
        install --allow-unsigned "$PKG@$VERSION" >/dev/null
}
run_kbpkg() { install_with "$KBPKG" "$1"; }
run_kbpkg-baseline() { install_with "$BASELINE/kbpkg" "$1"; }
run_curl() {
    curl -sf -o "$1/blob" "$BLOB_URL" &&
        echo "${LAYER#sha256:}  $1/blob" | sha256sum -c --quiet - &&
        mkdir "$1/x" && bsdtar -xf "$1/blob" -C "$1/x"
}
run_skopeo() {
    skopeo copy -q --src-tls-verify=false "docker://127.0.0.1:$PORT/bench/$PKG:$VERSION" \
        "oci:$1/oci:$PKG:$VERSION" >/dev/null
}

# One cold install first, alone, to record exactly what the registry is asked.
mkdir "$TMP/probe-run"
LINES_BEFORE=$(wc -l <"$TMP/registry.log")
run_kbpkg "$TMP/probe-run"
test -f "$(find "$TMP/probe-run/cache/pkgs" -name 'libvec_add.so' | head -1)"
sed -n "$((LINES_BEFORE + 1)),\$p" "$TMP/registry.log" |
    sed -n 's/.*"\([A-Z]*\) \([^ ]*\) HTTP[^"]*" \([0-9]*\).*/\1 \2 -> \3/p' >"$TMP/requests.txt"
rm -rf "$TMP/probe-run"

declare -A TIMES
METHODS=(kbpkg curl skopeo)
if [ -n "${BASELINE:-}" ]; then
    BASELINE=$(cd "$BASELINE" && pwd)
    METHODS=(kbpkg kbpkg-baseline curl skopeo)
fi
for round in $(seq 0 $((RUNS - 1))); do
    for k in $(seq 0 $((${#METHODS[@]} - 1))); do
        m=${METHODS[$(((round + k) % ${#METHODS[@]}))]}
        dir=$TMP/run-$m-$round
        mkdir "$dir"
        t0=$(now_ns)
        "run_$m" "$dir"
        t1=$(now_ns)
        TIMES[$m]+="$(((t1 - t0) / 1000000)) "
        rm -rf "$dir"
    done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
CURL_MED=$(echo "${TIMES[curl]}" | median)
echo
echo "| method | runs | median ms | MiB/s | vs curl | all runs (ms) |"
echo "|---|---|---|---|---|---|"
for m in "${METHODS[@]}"; do
    med=$(echo "${TIMES[$m]}" | median)
    awk -v m="$m" -v n="$RUNS" -v med="$med" -v c="$CURL_MED" -v sz="$LAYER_SIZE" -v all="${TIMES[$m]}" \
        'BEGIN {printf "| %s | %d | %.0f | %.0f | %.2fx | %s|\n", m, n, med, sz/1048576/(med/1000), med/c, all}'
done
echo
echo "requests to the registry during one cold kbpkg install ($(wc -l <"$TMP/requests.txt")):"
sed 's|/v2/bench/kbtest/vec-add|/v2/<repo>|; s|sha256\([:-]\)[0-9a-f]\{64\}|sha256\1<hex>|g' "$TMP/requests.txt" | nl -w2 -s'. '
