#!/usr/bin/env bash
# The CPU levels `kbpkg test` does not build on this host (it builds the host's level and
# x86_64_v2): the three first-party CPU builds for aarch64 (NEON: 4 floats a vector, GEMM tiles
# of 8 x 8), cross-compiled and checked under qemu-user, and for x86-64-v3 (AVX2 + FMA: 8 floats,
# 6 x 16 tiles), checked natively when this CPU has AVX2. Each is compiled as the builder
# compiles the target (-O3 -march=..., the library with hidden visibility, the check against it
# with the CPU sources in reference mode). Skips (77) without aarch64-linux-gnu-gcc or
# qemu-aarch64, fails instead under KBPKG_REQUIRE_DEPS=1 (scripts/install-deps.sh installs both).
set -euo pipefail
: "${KB_SOURCE_DIR:?}"
for tool in aarch64-linux-gnu-gcc qemu-aarch64; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is not installed (scripts/install-deps.sh installs it)"
    [ "${KBPKG_REQUIRE_DEPS:-}" = 1 ] && exit 1
    exit 77
  fi
done
T=$(mktemp -d /tmp/kbpkg-cpu-levels.XXXXXX)
trap 'rm -rf "$T"' EXIT
check() { # package-folder library-name level
  local dir=$KB_SOURCE_DIR/kernels/$1 lib=$2 level=$3 out=$T/$3
  local cc=(aarch64-linux-gnu-gcc -march=armv8-a) run=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
  local target=cpu-aarch64-aarch64-linux
  if [ "$level" = x86-64-v3 ]; then
    cc=(cc -march=x86-64-v3) run=() target=cpu-x86_64_v3-x86_64-linux
  fi
  cc+=(-std=c11 -O3 -Wall -Wextra -Werror)
  local src=("$dir"/src/*_cpu.c)
  mkdir -p "$out"
  "${cc[@]}" -fPIC -shared -fvisibility=hidden -DKBPKG_TARGET="\"$target\"" \
    -I"$dir/include" -I"$KB_SOURCE_DIR/include" "${src[@]}" -o "$out/lib$lib.so" -lm
  "${cc[@]}" -DKBPKG_REFERENCE_ONLY -I"$dir/include" -I"$KB_SOURCE_DIR/include" \
    "$dir/tests/check.c" "${src[@]}" -L"$out" -l"$lib" -Wl,-rpath,"$out" -o "$out/check_$lib" -lm
  "${run[@]}" "$out/check_$lib" > "$out/$lib.log" 2>&1
}
levels=(aarch64)
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  levels+=(x86-64-v3)
else
  echo "x86-64-v3: this CPU has no AVX2; not checked"
fi
pids=() names=()
for level in "${levels[@]}"; do
  for p in radeonflow/gemm:gemm kbpkg-community/activation:activation kbpkg-community/rmsnorm:rmsnorm; do
    check "${p%%:*}" "${p##*:}" "$level" &
    pids+=($!) names+=("$level/${p##*:}")
  done
done
status=0
for i in "${!pids[@]}"; do
  log=$T/${names[$i]}.log
  if wait "${pids[$i]}"; then
    echo "${names[$i]}: $(tail -1 "$log")"
  else
    echo "FAIL: ${names[$i]} (build or check):"
    grep -E 'FAIL|PASSED|FAILED|error' "$log" 2>/dev/null | head -20
    status=1
  fi
done
exit $status
