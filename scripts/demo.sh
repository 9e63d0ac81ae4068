#!/usr/bin/env bash
# The main job on the embedded default registry (a local OCI layout folder, no server):
# probe this machine, check the bundled kernels, build and publish them to the local hub,
# install radeonflow/gemm for this machine and run it.
set -euo pipefail
cd "$(dirname "$0")/.."
KB=./build/kbpkg
$KB probe
$KB manifest check kernels/*/*/kernel.yaml
# Build every target a local toolchain can build and publish it; a second run publishes
# nothing (build keys already in the hub). Set KBPKG_DEMO_TARGETS=cpu to build only CPU.
if [ -n "${KBPKG_DEMO_TARGETS:-}" ]; then
  for pkg in kernels/*/*/; do
    $KB build "$pkg" --target "$KBPKG_DEMO_TARGETS"
    $KB publish "$pkg" --target "$KBPKG_DEMO_TARGETS"
  done
else
  # a target that fails to build is reported in the farm's table; the rest is still published
  $KB farm kernels || echo "demo: some targets did not build (see the table); going on"
fi
$KB search
$KB resolve radeonflow/gemm --explain
$KB install radeonflow/gemm --allow-unsigned
./build/gemm_demo radeonflow/gemm@^1
