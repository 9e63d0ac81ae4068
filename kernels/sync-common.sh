#!/bin/sh
# Copies the shared headers from kernels/common/ into every package's include/ (packages are
# self-contained; tests/integration/test_kernels.c fails when a copy drifts).
set -eu
cd "$(dirname "$0")"
for pkg in */*/kernel.yaml; do
    cp common/kb_gpu_compat.h common/kbpkg_half.h common/kbpkg_check.h common/kbpkg_bench.h common/kb_cpu.h \
        "$(dirname "$pkg")/include/"
done
