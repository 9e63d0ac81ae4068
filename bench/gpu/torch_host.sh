#!/usr/bin/env bash
# Host cost per call: kbpkg torch ops vs torch's own op vs a torch.utils.cpp_extension op, on a
# 1 x 4096 bf16 input, eager and inside a CUDA graph (bench/torch_host_cost.py). Needs an NVIDIA
# GPU, torch with CUDA, and a hub with the CUDA artifacts (tests/gpu/prepare.sh makes one).
# Exits 77 with SKIP without a GPU.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${KBPKG_PYTHON:-python3}"
if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "SKIP: no CUDA GPU visible to torch ($PY)"
  exit 77
fi
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
export KBPKG_LIB="${KBPKG_LIB:-$ROOT/build/libkbpkg.so}"
"$PY" "$ROOT/bench/torch_host_cost.py" cuda --graph
"$PY" "$ROOT/bench/torch_host_cost.py" cpu --d=64
