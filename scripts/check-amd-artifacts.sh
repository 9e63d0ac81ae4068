#!/usr/bin/env bash
# Re-check ROCm artifacts with LLVM's own tools, independently of kbpkg's verifier: the offload
# bundle lists exactly the target's arch (clang-offload-bundler --list), the code object's
# e_flags name it (llvm-readelf -h), DT_NEEDED is libamdhip64.so.<runtime major> (readelf -d)
# and it disassembles for the arch (llvm-objdump --mcpu: no <unknown>, an s_endpgm).
# Usage: scripts/check-amd-artifacts.sh DIST_DIR...   (the --out folders of kbpkg build)
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ok=0 bad=0
for a in $(find "$@" -name '*-rocm[0-9]*-*.tar.zst' | sort); do
  d="$work/$(basename "$a" .tar.zst)"
  mkdir -p "$d" && tar -C "$d" -xf "$a"
  so=$(ls "$d"/lib/*.so)
  target=$(basename "$a" .tar.zst | grep -oE 'rocm[0-9]+-.*-x86_64-linux$')
  arch=$(sed -E 's/^rocm[0-9]+-(.*)-x86_64-linux$/\1/' <<<"$target")
  rt=$(sed -E 's/^rocm([0-9]+)-.*/\1/' <<<"$target")
  objcopy -O binary --only-section=.hip_fatbin "$so" "$d/fb.bin"
  list=$(clang-offload-bundler-19 --list --type=o --input="$d/fb.bin" | grep -v '^host' | tr '\n' ' ')
  clang-offload-bundler-19 --unbundle --type=o --input="$d/fb.bin" \
    --targets="hipv4-amdgcn-amd-amdhsa--$arch" --output="$d/co"
  flags=$(llvm-readelf-19 -h "$d/co" | grep Flags | tr -s ' ')
  need=$(readelf -d "$so" | grep -o 'libamdhip64\.so\.[0-9]*' | tr '\n' ' ')
  dis=$(llvm-objdump-19 -d --mcpu="$arch" "$d/co")
  unknown=$(grep -c '<unknown>' <<<"$dis" || true)
  endpgm=$(grep -c s_endpgm <<<"$dis" || true)
  if [ "$list" = "hipv4-amdgcn-amd-amdhsa--$arch " ] && [ "$need" = "libamdhip64.so.$rt " ] &&
    [ "$unknown" = 0 ] && [ "$endpgm" -gt 0 ] && grep -q ", $arch" <<<"$flags"; then
    ok=$((ok + 1))
    echo "ok   $target: bundle [$list] e_flags [$flags] needs [$need] $endpgm kernels disassembled"
  else
    bad=$((bad + 1))
    echo "BAD  $target: bundle [$list] e_flags [$flags] needs [$need] unknown=$unknown s_endpgm=$endpgm"
  fi
done
echo "check-amd-artifacts: $ok ok, $bad bad"
[ "$bad" = 0 ]
