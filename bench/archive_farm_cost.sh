#!/usr/bin/env bash
# Cost of writing archives and of a no-op farm (issue 15, docs/perf.md), this build against an
# older one in the same run, contenders interleaved:
#   publish of a 3 KB package (tests/data/publish/cpu-add) into a fresh layout: wall s, peak RSS
#   publish of the same with 50 MiB of /dev/urandom in src/ (the source artifact rewritten)
#   farm -j1 / -j8 of 8 packages into a fresh layout (builds everything): peak RSS
#   no-op farm of 1 and of 100 packages (all already published) vs `kbpkg --version`
#   bash bench/archive_farm_cost.sh KBPKG [OLD_KBPKG]      RUNS=3 by default
set -euo pipefail
RUNS=${RUNS:-3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
src=$(cd "$(dirname "$0")/.." && pwd)/tests/data/publish/cpu-add
export XDG_CONFIG_HOME=$T/config KBPKG_DEVICES=none KBPKG_CPU=x86_64_v3
bins=("$1"); [ $# -gt 1 ] && bins+=("$2")
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timed() { # out-file cmd...: appends "seconds rss_kib"
  local out=$1; shift
  /usr/bin/time -f "%e %M" -o "$T/t" "$@" > /dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
  cat "$T/t" >> "$out"
}
pkg() { # dir name
  cp -r "$src" "$1"
  sed -i "1s|.*|name: $2|" "$1/kernel.yaml"
}
report() { # label file
  printf '%-34s %8s s %8s MiB\n' "$1" "$(cut -d' ' -f1 "$2" | median)" \
    "$(cut -d' ' -f2 "$2" | median | awk '{printf "%.1f", $1/1024}')"
}
pkg "$T/small" kbtest/cpu-add
pkg "$T/big" kbtest/cpu-add-big
head -c 52428800 /dev/urandom > "$T/big/src/blob.bin"
mkdir -p "$T/farm8" "$T/farm100"
for i in $(seq 1 8); do pkg "$T/farm8/p$i" "kbtest/farm8-p$i"; done
for i in $(seq 1 100); do pkg "$T/farm100/p$i" "kbtest/farm100-p$i"; done
for b in "${!bins[@]}"; do
  export KBPKG_CACHE=$T/cache$b
  "${bins[$b]}" build "$T/small" > /dev/null 2>&1
  "${bins[$b]}" build "$T/big" > /dev/null 2>&1
  "${bins[$b]}" farm "$T/farm100" --registry "$T/hub100-$b" > /dev/null 2>&1
  "${bins[$b]}" farm "$T/farm100/p1" --registry "$T/hub1-$b" > /dev/null 2>&1
done
for r in $(seq 1 "$RUNS"); do
  for b in "${!bins[@]}"; do
    k=${bins[$b]}; export KBPKG_CACHE=$T/cache$b
    rm -rf "$T/hub"; timed "$T/small.$b" "$k" publish "$T/small" --registry "$T/hub"
    rm -f "$T"/big/dist/*source.tar.zst*; rm -rf "$T/hub"
    timed "$T/big.$b" "$k" publish "$T/big" --registry "$T/hub"
    for j in 1 8; do
      rm -rf "$T/hubf" "$T"/farm8/*/dist "$KBPKG_CACHE/farm"
      timed "$T/farm-j$j.$b" "$k" farm "$T/farm8" -j "$j" --registry "$T/hubf"
    done
    timed "$T/noop1.$b" "$k" farm "$T/farm100/p1" --registry "$T/hub1-$b"
    timed "$T/noop100.$b" "$k" farm "$T/farm100" --registry "$T/hub100-$b"
    timed "$T/version.$b" "$k" --version
  done
done
for b in "${!bins[@]}"; do
  echo "== ${bins[$b]} (medians of $RUNS)"
  report "publish 3 KB package" "$T/small.$b"
  report "publish with a 50 MiB source" "$T/big.$b"
  report "farm -j1, 8 packages" "$T/farm-j1.$b"
  report "farm -j8, 8 packages" "$T/farm-j8.$b"
  report "no-op farm, 1 package" "$T/noop1.$b"
  report "no-op farm, 100 packages" "$T/noop100.$b"
  report "kbpkg --version" "$T/version.$b"
done
