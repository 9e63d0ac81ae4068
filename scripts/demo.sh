#!/usr/bin/env bash
# The main job on the embedded default: probe this machine and check the bundled kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
KB=./build/kbpkg
$KB probe
$KB manifest check kernels/*/*/kernel.yaml
