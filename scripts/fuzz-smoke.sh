#!/usr/bin/env bash
# Build the libFuzzer targets with clang and run each for a few seconds on its seed corpus.
#   scripts/fuzz-smoke.sh [BUILD_DIR]            configure + build (CC=clang, KBPKG_FUZZ=ON), run
#   scripts/fuzz-smoke.sh --no-build BUILD_DIR   run fuzzers already built there (ctest fuzz/smoke)
# FUZZ_SECONDS (default 10) sets the time per target. The seed corpora are never written to:
# new inputs go to a temporary folder that is removed afterwards.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build=1
if [ "${1:-}" = "--no-build" ]; then
  build=0
  shift
fi
dir="$(realpath -m "${1:-$src/build-fuzz}")" # absolute: the runs below change directory
seconds="${FUZZ_SECONDS:-10}"

if [ "$build" = 1 ]; then
  command -v clang >/dev/null || { echo "fuzz-smoke: clang not found (scripts/install-deps.sh)" >&2; exit 1; }
  CC=clang cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DKBPKG_FUZZ=ON -DKBPKG_TESTS=OFF >/dev/null
  cmake --build "$dir" -j2 --target fuzzers
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/kbpkg-fuzz-smoke-XXXXXX")"
trap 'rm -rf "$work"' EXIT
failed=()
for fuzzer in "$dir"/fuzz/fuzz_*; do
  [ -x "$fuzzer" ] || continue
  name="$(basename "$fuzzer")"
  target="${name#fuzz_}"
  corpus="$src/tests/fuzz/corpus/$target"
  dict="$src/tests/fuzz/dict/$target.dict"
  args=(-max_total_time="$seconds" -print_final_stats=1
        -artifact_prefix="$work/$name-" -timeout=10 -rss_limit_mb=2048)
  [ -f "$dict" ] && args+=(-dict="$dict")
  mkdir -p "$work/$target"
  echo "fuzz-smoke: $name for ${seconds}s"
  if ! (cd "$work" && TMPDIR="$work" ASAN_OPTIONS=detect_leaks=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$fuzzer" "${args[@]}" "$work/$target" "$corpus" >"$work/$name.log" 2>&1); then
    tail -n 40 "$work/$name.log" >&2
    failed+=("$name")
  else
    grep -E "DONE" "$work/$name.log" | tail -n 1 || true
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz-smoke: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz-smoke: all fuzzers ran clean"
