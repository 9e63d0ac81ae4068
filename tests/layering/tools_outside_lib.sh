#!/usr/bin/env bash
# tools/hub is a program's library over the public API, not part of libkbpkg: libkbpkg.so
# exports no hub symbol, and the kbpkg CLI carries the renderer itself.
set -euo pipefail
lib=$1 cli=$2
if hub=$(nm -D --defined-only "$lib" | grep -i hub); then
    echo "FAIL: $lib exports hub symbols: $hub" >&2
    exit 1
fi
syms=$(nm --defined-only "$cli") # whole, so grep -q cannot cut nm off under pipefail
grep -q ' kbi_hub_render$' <<<"$syms" ||
    { echo "FAIL: $cli does not carry kbi_hub_render" >&2; exit 1; }
echo "libkbpkg exports no hub symbol; the CLI links the hub tool"
