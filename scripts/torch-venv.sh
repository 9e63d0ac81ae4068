#!/usr/bin/env bash
# A virtual environment with a current CPU-usable torch from PyPI for the Python tests, kept at
# a fixed path and reused while it still imports. PyPI's Linux torch depends on nvidia-* wheels
# (several GB); CPU tests never call them, so torch goes in with --no-deps plus its pure-Python
# dependencies, and scripts/cuda_stubs.py stubs the CUDA libraries it links.
# Usage: scripts/torch-venv.sh [VENV]  (default $KBPKG_TORCH_VENV or ~/.cache/kbpkg-ci/torch-venv)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:-${KBPKG_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kbpkg-ci/torch-venv}}"
check='import torch, numpy, torch.library as L; assert hasattr(L, "register_fake"); torch.ones(2).add_(1)'
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then
  echo "torch-venv: reusing $venv (torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)'))"
  exit 0
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
/usr/bin/python3 -m venv "$venv"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all:)
"${pip[@]}" --no-deps torch
# torch's own pure dependencies (its wheel metadata less the nvidia-*, triton and cuda ones).
"${pip[@]}" numpy setuptools filelock typing-extensions sympy networkx jinja2 fsspec mpmath MarkupSafe
"$venv/bin/python" "$here/cuda_stubs.py" "$("$venv/bin/python" -c 'import importlib.util, os; print(os.path.join(os.path.dirname(importlib.util.find_spec("torch").origin), "lib"))')"
"$venv/bin/python" -c "$check"
echo "torch-venv: $venv (torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)'))"
