#!/usr/bin/env bash
# Follow README.md as a newcomer would, after the build: in a fresh HOME run the demo
# (CPU targets only, as the README offers), then the README's own Python and C usage blocks,
# extracted from README.md at run time (never copied here), so a snippet that breaks fails.
# Usage: readme_newcomer.sh SOURCE_DIR BUILD_DIR [README]  (README: another copy to check)
# Exit 0 pass, 1 fail, 77 skip (a prerequisite tool is missing; under KBPKG_REQUIRE_DEPS=1, as
# .ci/run sets, a missing tool fails instead: tests/support/kbtest.h).
set -uo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
readme=${3:-$src/README.md}
python=/usr/bin/python3

fail() { echo "readme: FAIL: $*" >&2; exit 1; }
skip() {
  [ "${KBPKG_REQUIRE_DEPS:-}" = 1 ] && fail "KBPKG_REQUIRE_DEPS=1, a dependency is missing: $*"
  echo "readme: SKIP: $*" >&2
  exit 77
}

for tool in cc pkg-config cmake "$python"; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (scripts/install-deps.sh installs it)"
done
"$python" -c 'import numpy' 2>/dev/null || skip "$python has no numpy (apt-get install python3-numpy)"
if ! [ -x "$build/kbpkg" ] || ! [ -x "$build/gemm_demo" ] || ! [ -e "$build/libkbpkg.so" ]; then
  fail "$build lacks kbpkg, gemm_demo or libkbpkg.so: build first (bash scripts/build.sh)"
fi

tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

# The fenced block that follows the first line starting with $1 in README's "## Using it"
# section, without its fences; $2 is the fence's language.
block_after() {
  awk -v lead="$1" -v lang="$2" '
    /^## / { in_section = ($0 == "## Using it") }
    in_section && index($0, lead) == 1 { seen = 1 }
    seen && !inside && $0 == "```" lang { inside = 1; next }
    inside && $0 == "```" { exit }
    inside { print }' "$readme"
}

# A newcomer's checkout: the scripts, kernels, python package and examples, with ./build
# being this build; copies where the demo writes (kernels/*/dist), links elsewhere.
tree=$tmp/kbpkg
mkdir -p "$tree/scripts" "$tmp/home" "$tmp/bin"
cp "$src/scripts/demo.sh" "$tree/scripts/"
cp -r "$src/kernels" "$tree/kernels"
rm -rf "$tree"/kernels/*/*/dist
ln -s "$src/python" "$tree/python"
ln -s "$src/examples" "$tree/examples"
ln -s "$build" "$tree/build"
# Nothing of the caller's kbpkg setup leaks in: a fresh HOME, default registry and cache.
for v in $(env | sed -n 's/^\(KBPKG_[A-Z_]*\)=.*/\1/p; s/^\(XDG_[A-Z_]*\)=.*/\1/p'); do
  unset "$v"
done
export HOME=$tmp/home
# "python3" in the README's block is Debian's, whatever else is first on PATH
ln -s "$python" "$tmp/bin/python3"
export PATH=$tmp/bin:$PATH
cd "$tree" || fail "no $tree"

echo "== README: KBPKG_DEMO_TARGETS=cpu bash scripts/demo.sh"
start=$SECONDS
KBPKG_DEMO_TARGETS=cpu bash scripts/demo.sh >"$tmp/demo.log" 2>&1 ||
  { cat "$tmp/demo.log"; fail "scripts/demo.sh failed"; }
grep -q 'PASS' "$tmp/demo.log" || { cat "$tmp/demo.log"; fail "the demo's gemm did not PASS"; }
echo "demo: $((SECONDS - start)) s, gemm PASS"

echo "== README: the Python block (From Python)"
block_after "From Python" sh >"$tmp/python.sh"
[ -s "$tmp/python.sh" ] || fail "no \`\`\`sh block after 'From Python' under '## Using it' in $readme"
grep -q 'python3' "$tmp/python.sh" || fail "the Python block runs no python3: $(cat "$tmp/python.sh")"
bash -e "$tmp/python.sh" >"$tmp/python.out" 2>&1 || {
  cat "$tmp/python.sh" "$tmp/python.out"
  fail "the README's Python block failed"
}
cat "$tmp/python.out"
err=$(sed -n 's/^max error vs numpy: *//p' "$tmp/python.out")
[ -n "$err" ] || fail "the Python block printed no 'max error vs numpy'"
"$python" -c "import sys; sys.exit(0 if float('$err') < 1e-4 else 1)" ||
  fail "the Python block's gemm is off by $err"
grep -q '^radeonflow/gemm [0-9.]* cpu-' "$tmp/python.out" || fail "no 'name version target' line"

echo "== README: the C block (From C), built with pkg-config as the README says"
block_after "From C" c >"$tmp/snippet.c"
[ -s "$tmp/snippet.c" ] || fail "no \`\`\`c block after 'From C' under '## Using it' in $readme"
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "cmake --install $build failed"; }
pc=$(dirname "$(find "$prefix" -name kbpkg.pc | head -n1)")
[ -n "$pc" ] || fail "cmake --install wrote no kbpkg.pc"
export PKG_CONFIG_PATH=$pc
libdir=$(pkg-config --variable=libdir kbpkg)
# The snippet is the body of a program: around it, the header, and a call of the symbol it
# looked up (a 2x2 product, checked) so that a snippet that loads nothing fails here.
{
  echo '#include <kbpkg/kbpkg.h>'
  echo '#include <stdio.h>'
  echo 'int main(void)'
  echo '{'
  cat "$tmp/snippet.c"
  echo '    if (!gemm)'
  echo '        return 2;'
  echo '    float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4] = {0};'
  echo '    if (gemm(2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2, NULL) != 0)'
  echo '        return 3;'
  # shellcheck disable=SC2028 # the \n is C's, written as is
  echo '    printf("c = %g %g %g %g\n", c[0], c[1], c[2], c[3]);'
  echo '    return c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50 ? 0 : 4;'
  echo '}'
} >"$tmp/readme_snippet.c"
# shellcheck disable=SC2046 # pkg-config's words are meant to split
cc "$tmp/readme_snippet.c" $(pkg-config --cflags --libs kbpkg) -ldl -lm -o "$tmp/readme_snippet" \
  2>"$tmp/cc.log" || { cat "$tmp/readme_snippet.c" "$tmp/cc.log"; fail "the README's C block does not build"; }
LD_LIBRARY_PATH=$libdir "$tmp/readme_snippet" >"$tmp/c.out" 2>&1
rc=$?
cat "$tmp/c.out"
[ $rc -eq 0 ] || fail "the README's C block, run: exit $rc"
grep -q '^running cpu-' "$tmp/c.out" || fail "the C block did not say which target runs"

echo "== README: examples/gemm_demo.c built standalone"
# shellcheck disable=SC2016 # backquotes of the Markdown, not a shell expansion
cmd=$(grep -o '`cc examples/gemm_demo.c[^`]*`' "$readme" | head -n1 | tr -d '`')
[ -n "$cmd" ] || fail "no 'cc examples/gemm_demo.c ...' command in $readme"
bash -ec "$cmd" 2>"$tmp/cc.log" || { cat "$tmp/cc.log"; fail "'$cmd' failed"; }
LD_LIBRARY_PATH=$libdir ./gemm_demo 'radeonflow/gemm@^1' >"$tmp/gemm_demo.out" 2>&1 ||
  { cat "$tmp/gemm_demo.out"; fail "the standalone gemm_demo failed"; }
grep -q PASS "$tmp/gemm_demo.out" || { cat "$tmp/gemm_demo.out"; fail "standalone gemm_demo: no PASS"; }
echo "readme: all README steps work"
