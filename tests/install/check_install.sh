#!/usr/bin/env bash
# cmake --install into a temporary prefix, then build two programs against it the way users
# do: a CMake project with find_package(kbpkg), and examples/gemm_demo.c through pkg-config.
set -euo pipefail
src=$1 build=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name 'libkbpkg.so' | head -1)")
cmake -S "$src/tests/install/consumer" -B "$prefix/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" \
  >/dev/null
cmake --build "$prefix/consumer-build" >/dev/null
LD_LIBRARY_PATH=$libdir "$prefix/consumer-build/consumer"
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc "$src/examples/gemm_demo.c" $(pkg-config --cflags --libs kbpkg) -ldl -lm -o "$prefix/gemm_demo"
test -x "$prefix/gemm_demo"
test -f "$prefix/include/kbpkg/kbpkg.h" && test -x "$prefix/bin/kbpkg"
# the installed CLI finds the installed library by itself (RUNPATH $ORIGIN/../lib): a prefix
# such as ~/.local is not on the loader's path
env -u LD_LIBRARY_PATH "$prefix/bin/kbpkg" --version | grep -q '^kbpkg ' ||
  { echo "the installed kbpkg does not run without LD_LIBRARY_PATH"; exit 1; }
echo "installed prefix works: find_package consumer ran, gemm_demo built with pkg-config, kbpkg runs"
