#!/usr/bin/env bash
# The first-party packages' CPU artifacts against what a PyTorch user on a CPU calls instead:
# torch eager and torch.compile (inductor's C++ code), and for GEMM also the OpenBLAS that
# `kbpkg bench` compares with. Builds and publishes the CPU targets into a temporary hub,
# installs them, and times them through kbpkg.torch (the ops users call) in one process,
# interleaved, medians (bench/cpu/torch_cpu.py).
# Usage: bash bench/cpu/torch_cpu.sh [OUT]   (OUT: where the table goes; default stdout)
#   KBPKG_TORCH_PYTHON: the python with torch (default: the CI venv, scripts/torch-venv.sh)
#   TORCH_CPU_ARGS: passed to torch_cpu.py (--quick, --rounds N, --no-compile)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
[ -x build/kbpkg ] || bash scripts/build.sh build >/dev/null
py=${KBPKG_TORCH_PYTHON:-}
if [ -z "$py" ]; then
  bash scripts/torch-venv.sh >/dev/null
  py=${XDG_CACHE_HOME:-$HOME/.cache}/kbpkg-ci/torch-venv/bin/python
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KBPKG_REGISTRY=$tmp/hub KBPKG_CACHE=$tmp/cache KBPKG_CONFIG_DIR=$tmp/config
export KBPKG_DEVICES=none
for pkg in kernels/radeonflow/gemm kernels/kbpkg-community/rmsnorm kernels/kbpkg-community/activation; do
  build/kbpkg build "$pkg" --target cpu >/dev/null
  build/kbpkg publish "$pkg" --target cpu >/dev/null
done
for name in radeonflow/gemm kbpkg-community/rmsnorm kbpkg-community/activation; do
  build/kbpkg install "$name" --allow-unsigned >/dev/null
done
export PYTHONPATH=$root/python KBPKG_LIB=$root/build/libkbpkg.so
# shellcheck disable=SC2086
"$py" bench/cpu/torch_cpu.py ${TORCH_CPU_ARGS:-} | tee "${1:-/dev/null}"
