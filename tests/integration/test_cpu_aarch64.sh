#!/usr/bin/env bash
# The first-party packages' CPU builds for aarch64 (NEON: 4 floats a vector, GEMM tiles of 8 x 8),
# cross-compiled as the builder compiles the cpu-aarch64 target (-O3 -march=armv8-a, the library
# with hidden visibility, the check against it with the CPU sources in reference mode) and each
# package's check run under qemu-user: this x86-64 CI's only run of the aarch64 code paths.
# Skips (77) without aarch64-linux-gnu-gcc or qemu-aarch64, fails instead under
# KBPKG_REQUIRE_DEPS=1 (scripts/install-deps.sh installs both).
set -euo pipefail
: "${KB_SOURCE_DIR:?}"
for tool in aarch64-linux-gnu-gcc qemu-aarch64; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is not installed (scripts/install-deps.sh installs it)"
    [ "${KBPKG_REQUIRE_DEPS:-}" = 1 ] && exit 1
    exit 77
  fi
done
T=$(mktemp -d /tmp/kbpkg-aarch64.XXXXXX)
trap 'rm -rf "$T"' EXIT
check() { # package-folder library-name
  local dir=$KB_SOURCE_DIR/kernels/$1 lib=$2 cc=(aarch64-linux-gnu-gcc -std=c11 -O3 -march=armv8-a -Wall -Wextra -Werror)
  local src=("$dir"/src/*_cpu.c)
  "${cc[@]}" -fPIC -shared -fvisibility=hidden -DKBPKG_TARGET='"cpu-aarch64-aarch64-linux"' \
    -I"$dir/include" -I"$KB_SOURCE_DIR/include" "${src[@]}" -o "$T/lib$lib.so" -lm
  "${cc[@]}" -DKBPKG_REFERENCE_ONLY -I"$dir/include" -I"$KB_SOURCE_DIR/include" \
    "$dir/tests/check.c" "${src[@]}" -L"$T" -l"$lib" -Wl,-rpath,"$T" -o "$T/check_$lib" -lm
  qemu-aarch64 -L /usr/aarch64-linux-gnu "$T/check_$lib" > "$T/$lib.log" 2>&1
}
pids=() names=()
for p in radeonflow/gemm:gemm kbpkg-community/activation:activation kbpkg-community/rmsnorm:rmsnorm; do
  check "${p%%:*}" "${p##*:}" &
  pids+=($!) names+=("${p##*:}")
done
status=0
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then
    echo "aarch64 ${names[$i]}: $(tail -1 "$T/${names[$i]}.log")"
  else
    echo "FAIL: aarch64 ${names[$i]} (build or check):"
    cat "$T/${names[$i]}.log" 2>/dev/null | grep -E 'FAIL|PASSED|FAILED' | head -20
    status=1
  fi
done
exit $status
