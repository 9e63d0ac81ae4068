#!/usr/bin/env bash
# The main job on the embedded default registry (a local OCI layout folder, no server):
# probe this machine, check the bundled kernels, build and publish them to the local hub,
# install radeonflow/gemm for this machine and run it.
set -euo pipefail
cd "$(dirname "$0")/.."
KB=./build/kbpkg
$KB probe
$KB manifest check kernels/*/*/kernel.yaml
# Build and publish what this machine runs: the CPU targets, plus every target of the backend
# of each GPU the probe found (cuda, rocm). KBPKG_DEMO_TARGETS overrides the list ("cpu" for
# CPU only); KBPKG_DEMO_TARGETS=all runs the farm over every target a local toolchain builds
# (with clang-19 that is 13 ROCm code objects per package: many minutes on a small machine).
# A second run publishes nothing: the build keys are already in the hub.
targets=${KBPKG_DEMO_TARGETS:-"cpu $($KB probe --json | python3 -c '
import json, sys
print(" ".join(sorted({d["backend"] for d in json.load(sys.stdin)["devices"] if d.get("backend") in ("cuda", "rocm")})))')"}
if [ "$targets" = all ]; then
  # a target that fails to build is reported in the farm's table; the rest is still published
  $KB farm kernels || echo "demo: some targets did not build (see the table); going on"
else
  args=()
  for t in $targets; do args+=(--target "$t"); done
  for pkg in kernels/*/*/; do
    $KB build "$pkg" "${args[@]}"
    $KB publish "$pkg" "${args[@]}"
  done
fi
$KB search
$KB resolve radeonflow/gemm --explain
$KB install radeonflow/gemm --allow-unsigned
./build/gemm_demo radeonflow/gemm@^1
