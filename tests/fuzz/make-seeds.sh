#!/usr/bin/env bash
# Regenerate the seed corpora in tests/fuzz/corpus/ from the repo's fixtures plus a few crafted
# inputs. Inputs the fuzzers found since are kept beside them (named by their sha1).
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
c="$src/tests/fuzz/corpus"
mkdir -p "$c"/{manifest,oci,layout,target,semver,extract,inspect}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# manifest: every fixture kernel.yaml, good and bad
for f in "$src"/tests/data/manifests/bad/*.yaml "$src"/tests/data/manifests/good/*/kernel.yaml \
         "$src"/kernels/*/*/kernel.yaml; do
  [ -f "$f" ] || continue
  rel="${f#"$src"/}"
  cp "$f" "$c/manifest/seed-$(echo "$rel" | tr '/' '_')"
done

# oci: an image manifest and an image index as kbpkg writes them
D1="sha256:$(printf a | sha256sum | cut -c1-64)"
D2="sha256:$(printf b | sha256sum | cut -c1-64)"
cat >"$c/oci/seed-manifest.json" <<JSON
{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.kbpkg.artifact.v1","config":{"mediaType":"application/vnd.kbpkg.config.v1+json","digest":"$D1","size":1},"layers":[{"mediaType":"application/vnd.kbpkg.layer.v1.tar+zstd","digest":"$D2","size":1,"annotations":{"org.opencontainers.image.title":"x.tar.zst"}}],"subject":{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"$D1","size":7},"annotations":{"dev.kbpkg.version":"1.0.0"}}
JSON
cat >"$c/oci/seed-index.json" <<JSON
{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.kbpkg.artifact.v1","digest":"$D1","size":10,"platform":{"os":"linux","architecture":"amd64"},"annotations":{"dev.kbpkg.kind":"artifact","dev.kbpkg.target":"cuda13-sm_90-x86_64-linux","dev.kbpkg.backend":"cuda","dev.kbpkg.arch":"sm_90","dev.kbpkg.runtime":"cuda13","dev.kbpkg.build-key":"abc"}},{"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.kbpkg.source.v1","digest":"$D2","size":3,"annotations":{"dev.kbpkg.kind":"source","dev.kbpkg.target":"source"}}],"annotations":{"dev.kbpkg.name":"radeonflow/gemm","dev.kbpkg.version":"1.0.0","org.opencontainers.image.description":"GEMM"}}
JSON
printf '{"schemaVersion":2,"manifests":[]}' >"$c/oci/seed-empty-index.json"
# sizes a registry must not get away with: negative, over the manifest cap, not integers
for size in -1 4194305 12.5 '"12"'; do
  name=$(printf '%s' "$size" | tr -c 'a-z0-9.-' '_')
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.kbpkg.artifact.v1","digest":"%s","size":%s,"annotations":{"dev.kbpkg.kind":"artifact","dev.kbpkg.target":"cpu-x86_64_v3-x86_64-linux"}}],"annotations":{"dev.kbpkg.name":"a/b","dev.kbpkg.version":"1.0.0"}}' \
    "$D1" "$size" >"$c/oci/seed-index-size-$name.json"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.kbpkg.config.v1+json","digest":"%s","size":1},"layers":[{"mediaType":"application/vnd.kbpkg.layer.v1.tar+zstd","digest":"%s","size":%s}]}' \
    "$D1" "$D2" "$size" >"$c/oci/seed-manifest-size-$name.json"
done

# layout: index.json files; sha256:$DL is the one blob fuzz_layout puts in its layout
mkdir -p "$c/layout"
DL="sha256:$(printf '%s' '{"schemaVersion":2,"mediaType":"application/x-blob"}' | sha256sum | cut -c1-64)"
R=org.opencontainers.image.ref.name
M=application/vnd.oci.image.manifest.v1+json
printf '{"schemaVersion":2,"manifests":[{"mediaType":"%s","digest":"%s","size":52,"annotations":{"%s":"a/b:1.0.0"}},{"mediaType":"%s","digest":"%s","size":7,"annotations":{"%s":"a/b:latest"}},{"mediaType":"%s","digest":"%s","size":3,"annotations":{"%s":"x/y:1.0.0"}}]}' \
  "$M" "$DL" "$R" "$M" "$D1" "$R" "$M" "$D2" "$R" >"$c/layout/seed-kbpkg.json"
printf '{\n  "schemaVersion": 2,\n  "x": {"manifests": [1.5, true, null], "digest": "%s"},\n  "manifests": [\n    {"digest": "%s", "annotations": {"%s": "a\\/b:2.0.0", "d": "\303\251"}},\n    [{"annotations": {"%s": "a/b:3"}}], 17, "a/b:4",\n    {"digest": "%s", "digest": "%s", "annotations": {"%s": "a/b:5", "%s": "a/bc:5"}, "annotations": {"%s": "a/b:6"}}\n  ]\n}\n' \
  "$DL" "$DL" "$R" "$R" "$D1" "$DL" "$R" "$R" "$R" >"$c/layout/seed-odd.json"
sed -e 's|a\\/b|a/b|' -e 's|"d": "[^"]*"|"d": "e"|' "$c/layout/seed-odd.json" >"$c/layout/seed-plain.json"
printf '{"manifests":[{"digest":"%s","mediaType":"x/y","size":1e3,"annotations":{"%s":"a/b:1"}}],"manifests":[]}' \
  "$DL" "$R" >"$c/layout/seed-repeated.json"

# target: a target id, a newline, a device list
i=0
while IFS= read -r line; do
  printf '%b' "$line" >"$c/target/seed-$i"
  i=$((i + 1))
done <<'LIST'
cuda13-sm_90-x86_64-linux\nsm_90,sm_86@cuda12.4
cuda13-sm_90a-x86_64-linux\nsm_90a@cuda13
cuda13-compute_80-x86_64-linux\nsm_89
rocm5-gfx1030-x86_64-linux\ngfx1031@rocm5.2
rocm6-gfx90a:xnack+-x86_64-linux\ngfx90a:xnack+@rocm6
rocm6-gfx11-generic-x86_64-linux\ngfx1100@rocm6.2
metal3-apple-arm64-darwin\napple@metal3
cpu-x86_64_v3-x86_64-linux\nx86_64_v4
cpu-aarch64-aarch64-linux\naarch64
cuda12-sm_100a-aarch64-linux\nnone
LIST

# semver: version a, version b, constraint
i=0
while IFS= read -r line; do
  printf '%b' "$line" >"$c/semver/seed-$i"
  i=$((i + 1))
done <<'LIST'
1.2.3\n1.2.3+build.5\n^1.2
1.0.0-rc.1\n1.0.0-rc.11\n>=1.0.0-rc.1,<2
0.0.3\n0.0.4\n^0.0.3
1.2.3-alpha.beta\n1.2.3-alpha.1\n~1.2
18446744073709551615.0.0\n0.0.0\n*
2.0.0\n10.0.0\n>=1.0,<2
LIST

# extract: the malicious fixtures and a well-formed artifact and source archive
cp "$src"/tests/data/archives/malicious/*.tar.zst "$c/extract/"
mkdir -p "$tmp/art/lib" "$tmp/art/include"
echo '{"name":"a/b"}' >"$tmp/art/kbpkg.json"
printf 'int f(void);\n' >"$tmp/art/include/b.h"
printf 'MIT\n' >"$tmp/art/LICENSE"
printf '\177ELF' >"$tmp/art/lib/libb.so"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$tmp/art" --zstd \
    -cf "$c/extract/seed-artifact.tar.zst" kbpkg.json lib include LICENSE
tar --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$tmp/art" -cf "$c/extract/seed-plain.tar" \
    kbpkg.json LICENSE

# inspect: a small shared library, the same with fatbin and offload-bundle sections, raw sections
python3 - "$tmp" <<'PY'
import struct, sys
t = sys.argv[1]
fb = bytearray(176)
struct.pack_into('<IHHQ', fb, 0, 0xBA55ED50, 1, 16, 2 * (64 + 8))
struct.pack_into('<HHIQ', fb, 16, 2, 0, 64, 8); struct.pack_into('<I', fb, 16 + 28, 90)
struct.pack_into('<Q', fb, 16 + 40, 0x11 | 0x100000)
struct.pack_into('<HHIQ', fb, 88, 1, 0, 64, 8); struct.pack_into('<I', fb, 88 + 28, 75)
struct.pack_into('<Q', fb, 88 + 40, 0x11 | 0x8000)
open(t + '/fatbin.bin', 'wb').write(bytes(fb[:160]))
ob = bytearray(256); ob[0:24] = b'__CLANG_OFFLOAD_BUNDLE__'; struct.pack_into('<Q', ob, 24, 2)
host, dev = b'host-x86_64-unknown-linux', b'hipv4-amdgcn-amd-amdhsa--gfx1100'
p = 32
struct.pack_into('<QQQ', ob, p, 200, 0, len(host)); ob[p + 24:p + 24 + len(host)] = host
p += 24 + len(host)
struct.pack_into('<QQQ', ob, p, 200, 56, len(dev)); ob[p + 24:p + 24 + len(dev)] = dev
open(t + '/bundle.bin', 'wb').write(bytes(ob))
PY
cp "$tmp/fatbin.bin" "$c/inspect/seed-fatbin"
cp "$tmp/bundle.bin" "$c/inspect/seed-offload-bundle"
printf '#include <math.h>\nint kb_seed(int x){return x+1;}\ndouble kb_seed2(double x){return sqrt(x);}\n' >"$tmp/s.c"
cc -shared -fPIC -O1 -s -o "$tmp/libs.so" "$tmp/s.c" -lm
cp "$tmp/libs.so" "$c/inspect/seed-lib.so"
objcopy --add-section .nv_fatbin="$tmp/fatbin.bin" "$tmp/libs.so" "$c/inspect/seed-lib-fatbin.so"
objcopy --add-section .hip_fatbin="$tmp/bundle.bin" "$tmp/libs.so" "$c/inspect/seed-lib-hip.so"
mkdir -p "$tmp/ia/lib"
cp "$tmp/libs.so" "$tmp/ia/lib/libs.so"
echo '{}' >"$tmp/ia/kbpkg.json"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$tmp/ia" --zstd \
    -cf "$c/inspect/seed-artifact.tar.zst" kbpkg.json lib
echo "seeds written to $c"
