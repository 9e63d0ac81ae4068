#!/bin/sh
# Time `kbpkg build` of a package serially (-j1) and with -j2, median of 3 runs each, and
# write the numbers into docs/perf.md, section "Build time".
# usage: bench/build_matrix.sh [PACKAGE_DIR] [KBPKG_BINARY]
set -eu
pkg=${1:-kernels/radeonflow/gemm}
kbpkg=${2:-build/kbpkg}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median3() { printf '%s\n' "$@" | sort -n | sed -n 2p; }

run() { # $1 = jobs; prints seconds
    start=$(date +%s.%N)
    "$kbpkg" -q --cache "$tmp/cache" build "$pkg" -j "$1" --out "$tmp/out" >/dev/null 2>&1 || true
    end=$(date +%s.%N)
    printf '%.1f\n' "$(echo "$end - $start" | bc)"
}

for j in 1 2; do
    t1=$(run $j); t2=$(run $j); t3=$(run $j)
    eval "median_$j=$(median3 "$t1" "$t2" "$t3")"
done
targets=$("$kbpkg" --json --cache "$tmp/cache" build "$pkg" -j 2 --out "$tmp/out" 2>/dev/null |
          grep -c '"target"' || true)

perf="$root/docs/perf.md"
[ -f "$perf" ] || printf '# Performance\n' > "$perf"
# Replace the section (up to the next "## ") with fresh numbers.
awk '/^## Build time$/ {skip=1; next} /^## / {skip=0} !skip' "$perf" > "$tmp/perf.md"
cat >> "$tmp/perf.md" <<EOT

## Build time

\`bench/build_matrix.sh $pkg\` on $(nproc) cores, $(date -u +%Y-%m-%d): median of 3 full
builds of $targets targets (every declared target whose toolchain exists).

| jobs | seconds |
|---|---|
| -j1 | $median_1 |
| -j2 | $median_2 |
EOT
mv "$tmp/perf.md" "$perf"
echo "-j1: ${median_1}s  -j2: ${median_2}s  -> $perf"
