#!/usr/bin/env bash
# Install everything kbpkg needs to build, test and build kernels, from Debian 12's packages.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PKGS=(
  build-essential cmake pkg-config git
  libcurl4-openssl-dev libarchive-dev libzstd-dev libssl-dev libyaml-dev libjansson-dev
  libcriterion-dev
  docker-registry skopeo apache2-utils curl zstd libarchive-tools
  hipcc libamdhip64-dev rocm-device-libs
  clang-19 clang-tools-19 lld-19 llvm-19
  clang libclang-rt-14-dev clang-format
  python3 python3-numpy python3-torch libopenblas0
  chromium zlib1g-dev zsh groff-base
  slurmd slurmctld slurm-client munge python3-yaml
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
