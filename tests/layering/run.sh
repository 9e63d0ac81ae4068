#!/usr/bin/env bash
# The layering is enforced, not only described: the tree passes scripts/check-layering.py, a
# planted wrong-way include (in core, and in a tool) fails it, and a planted wrong-way call (core
# calling the registry) fails the build of core's layering check (cmake/modules.cmake).
set -euo pipefail
src=${KB_SOURCE_DIR:?}
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 "$src/scripts/check-layering.py" || fail "the tree breaks cmake/modules.txt"

out=$(python3 "$src/scripts/check-layering.py" --as core "$src/tests/layering/planted_include.c") &&
    fail "a planted include of registry/registry.h in core passed"
grep -q 'planted_include.c:4: core/ may not include "registry/registry.h"' <<<"$out" ||
    fail "the planted include was not named: $out"

# tools/ see the public API only, like cli/: an internal header, even in <...>, is refused.
out=$(python3 "$src/scripts/check-layering.py" --as tools/hub \
    "$src/tests/layering/planted_tool_include.c") &&
    fail "a planted include of registry/pkgindex.h in tools/hub passed"
grep -q 'planted_tool_include.c:4: tools/hub/ may not include "registry/pkgindex.h"' <<<"$out" ||
    fail "the planted tool include was not named: $out"

build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
cmake -S "$src" -B "$build" -DKBPKG_PLANT_LAYERING_VIOLATION=ON -DKBPKG_TESTS=OFF \
    -DKBPKG_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug >/dev/null
# Without the planted call, core's check links: the failure below is the plant's.
if log=$(cmake --build "$build" --target kblayer_core -j2 2>&1); then
    fail "core's layering check linked with a call into the registry"
fi
grep -q "undefined reference to .kb_registry_free" <<<"$log" ||
    fail "the build failed, but not on the planted call: $(tail -5 <<<"$log")"
echo "layering: tree clean, planted include refused, planted call fails the build"
