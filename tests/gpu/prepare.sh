#!/usr/bin/env bash
# Runs HERE (no GPU needed): gathers kbpkg, libkbpkg, the GPU test programs and every shared
# library they need but glibc into .carry/gpu, which the device tool carries to the GPU
# machine for tests/gpu/run.sh (that machine has nvcc but none of our -dev libraries).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
C=$ROOT/.carry/gpu
KB=$ROOT/build/kbpkg
rm -rf "$C"
mkdir -p "$C/bin" "$C/lib"
cc -std=c11 -O2 -I"$ROOT/include" "$ROOT/tests/gpu/open_check.c" -L"$ROOT/build" -lkbpkg -ldl -lm \
  -o "$C/bin/open_check"
cc -std=c11 -O2 -I"$ROOT/include" "$ROOT/tests/gpu/loader_timing.c" -L"$ROOT/build" -lkbpkg -ldl \
  -lm -o "$C/bin/loader_timing"
cp "$KB" "$ROOT/build/gemm_demo" "$C/bin/"
cp -L "$ROOT"/build/libkbpkg.so.0 "$C/lib/"
# every shared library kbpkg needs except glibc's own (the GPU machine has a newer glibc)
ldd "$KB" "$ROOT/build/libkbpkg.so.0" | awk '/=> \// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$C/lib/"; done
du -sh "$C"
