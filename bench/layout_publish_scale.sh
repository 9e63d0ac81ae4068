#!/usr/bin/env bash
# Publish one small package (tests/data/publish/cpu-add, prebuilt) into OCI layouts already
# holding N packages (N = 10, 1000, 10000; two tags each, as kbpkg writes them): median wall time
# and peak RSS of 5 runs each (docs/perf.md). A second binary, if given, runs the same for a
# side-by-side ratio.
#   bash bench/layout_publish_scale.sh KBPKG [OTHER_KBPKG]
set -euo pipefail
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
src=$(cd "$(dirname "$0")/.." && pwd)/tests/data/publish/cpu-add
export KBPKG_CACHE=$T/cache XDG_CONFIG_HOME=$T/config KBPKG_DEVICES=none KBPKG_CPU=x86_64_v3
cp -r "$src" "$T/pkg"
"$1" build "$T/pkg" > /dev/null 2>&1 # publish then uses these artifacts
make_layout() { # dir N: N fake packages, each tagged 1.0.0 and latest, one shared manifest blob
  python3 - "$1" "$2" <<'PY'
import hashlib, json, os, sys
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(f"{d}/blobs/sha256", exist_ok=True)
open(f"{d}/oci-layout", "w").write('{"imageLayoutVersion":"1.0.0"}')
body = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                   "manifests": []}, separators=(",", ":")).encode()
h = hashlib.sha256(body).hexdigest()
open(f"{d}/blobs/sha256/{h}", "wb").write(body)
m = [{"mediaType": "application/vnd.oci.image.index.v1+json", "digest": "sha256:" + h,
      "size": len(body), "annotations": {"org.opencontainers.image.ref.name": f"bench/p{i:05d}:{t}"}}
     for i in range(n) for t in ("1.0.0", "latest")]
json.dump({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
           "manifests": m}, open(f"{d}/index.json", "w"), separators=(",", ":"))
PY
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() { # kbpkg N -> "seconds rss_kib" medians
  local bin=$1 n=$2 times=() rss=()
  for i in 1 2 3 4 5; do
    rm -rf "$T/hub"; make_layout "$T/hub" "$n"
    /usr/bin/time -f "%e %M" -o "$T/time" "$bin" publish "$T/pkg" --registry "$T/hub" > /dev/null 2>&1
    read -r s k < "$T/time"; times+=("$s"); rss+=("$k")
  done
  echo "$(printf '%s\n' "${times[@]}" | median) $(printf '%s\n' "${rss[@]}" | median)"
}
printf '%-8s %-22s %s\n' packages "$(basename "$1") s / RSS KiB" "${2:+other s / RSS KiB}"
for n in 10 1000 10000; do
  a=$(run "$1" "$n")
  b=${2:+$(run "$2" "$n")}
  printf '%-8s %-22s %s\n' "$n" "$a" "$b"
done
