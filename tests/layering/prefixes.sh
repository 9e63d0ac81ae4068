#!/usr/bin/env bash
# nm tells API from internals (issue 12): every global symbol of libkbpkg that starts with kb_
# is declared in include/kbpkg/ (the public API), internal ones start with kbi_, and the shared
# library exports no kbi_ symbol.
#   prefixes.sh LIBKBPKG_A LIBKBPKG_SO INCLUDE_DIR
set -euo pipefail
static=$1 shared=$2 include=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
public=$(grep -ohE '\bkb_[a-z0-9_]+\b' "$include"/kbpkg/*.h | sort -u)
globals=$(nm --defined-only -g "$static" 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u)
stray=$(comm -23 <(grep '^kb_' <<<"$globals" || true) <(printf '%s\n' "$public"))
[ -z "$stray" ] || fail "kb_ symbols that are not public API (name them kbi_): $(tr '\n' ' ' <<<"$stray")"
internal=$(grep -c '^kbi_' <<<"$globals" || true)
[ "$internal" -gt 100 ] || fail "only $internal kbi_ symbols in $static: is the prefix applied?"
leaked=$(nm -D --defined-only "$shared" | awk '{print $3}' | grep '^kbi_' || true)
[ -z "$leaked" ] || fail "libkbpkg.so exports internals: $(tr '\n' ' ' <<<"$leaked")"
echo "prefixes: $(grep -c '^kb_' <<<"$globals") public kb_ symbols, $internal internal kbi_ ones, none exported"
