#!/usr/bin/env bash
# scripts/check-tree.sh fails on each kind of violation and names it FILE:LINE: planted copies
# of a clean file (a format slip, a banned call) and a wrong-way include, never the tree itself.
# A banned name in a comment or a string is not a call and passes.
set -euo pipefail
src=${KB_SOURCE_DIR:?}
check="$src/scripts/check-tree.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect_fail NAME PATTERN ARGS...: check-tree.sh ARGS fails and its output matches PATTERN.
expect_fail() {
  local name=$1 pattern=$2 out
  shift 2
  if out=$(bash "$check" "$@" 2>&1); then fail "$name: passed: $out"; fi
  grep -qE "$pattern" <<<"$out" || fail "$name: failed without naming the violation: $out"
  grep -q "check-tree: FAILED: $name" <<<"$out" || fail "$name: not reported as failed: $out"
  echo "ok: $name refused: $(grep -E "$pattern" <<<"$out" | head -1)"
}

# A clean file passes both file checks: what fails below is the plant.
cp "$src/core/fs.c" "$tmp/clean.c"
bash "$check" --only format --only banned --also "$tmp/clean.c" >/dev/null ||
  fail "a copy of core/fs.c did not pass"

# format: a declaration with stray spaces, on a known line.
cp "$src/core/fs.c" "$tmp/format.c"
printf 'int   planted_format ;\n' >>"$tmp/format.c"
line=$(wc -l <"$tmp/format.c")
expect_fail format "^$tmp/format.c:$line: not clang-formatted" --only format --also "$tmp/format.c"

# format: a kernel launch as clang-format splits it when its grid holds a '>'.
printf '__global__ void k(int *p) { *p = 1; }\nvoid go(int *p, unsigned b) { k < < <b> 0 ? b : 1, 1>>> (p); }\n' \
  >"$tmp/launch.cu"
expect_fail format "^$tmp/launch.cu:2: a kernel launch split into" --only format --also "$tmp/launch.cu"

# banned: a strcpy call (formatted, so only the banned check objects), beside the same names in
# a comment and a string, which are not calls.
cp "$src/core/fs.c" "$tmp/banned.c"
cat >>"$tmp/banned.c" <<'C'

/* strcpy(a, b) in a comment is not a call */
static const char *planted_text = "atoi(s)";
static void planted_copy(char *dst)
{
    strcpy(dst, planted_text);
}
C
line=$(grep -n 'strcpy(dst' "$tmp/banned.c" | cut -d: -f1)
expect_fail banned "^$tmp/banned.c:$line: strcpy\(\) is banned" --only banned --also "$tmp/banned.c"
out=$(bash "$check" --only banned --also "$tmp/banned.c" 2>&1 || true)
[ "$(grep -c 'is banned' <<<"$out")" = 1 ] || fail "banned: the comment or the string was flagged: $out"

# layering: core including the registry (the planted file tests/layering also uses).
expect_fail layering 'planted_include.c:4: core/ may not include "registry/registry.h"' \
  --only layering --as core "$src/tests/layering/planted_include.c"

# abi: a public header with a fixed-size string in a struct and an out-param after the ctx; a
# copy of a clean header passes first.
cp "$src/include/kbpkg/lock.h" "$tmp/clean_api.h"
bash "$check" --only abi --also "$tmp/clean_api.h" >/dev/null || fail "a copy of lock.h did not pass"
cat >"$tmp/api.h" <<'C'
typedef struct planted_result {
    char digest[72]; /* a char x[N] in a comment is fine */
} planted_result;
KB_EXTERN int kb_planted(kb_ctx *ctx, planted_result **out, const char *dir);
C
expect_fail abi "^$tmp/api.h:2: a fixed-size array" --only abi --also "$tmp/api.h"
expect_fail abi "^$tmp/api.h:4: kb_planted: out-params go first" --only abi --also "$tmp/api.h"
# cli: a command file that parses its options by hand and writes its own usage, next to a
# clean copy of one that goes through the table.
mkdir "$tmp/cli"
cp "$src/cli/cmd_gc.c" "$tmp/cli/cmd_clean.c"
bash "$check" --only cli --also "$tmp/cli/cmd_clean.c" >/dev/null || fail "a copy of cmd_gc.c did not pass"
cp "$src/cli/cmd_gc.c" "$tmp/cli/cmd_planted.c"
cat >>"$tmp/cli/cmd_planted.c" <<'C'

static const struct option planted_longs[] = {{"out", required_argument, NULL, 'o'}, {0}};
static int planted_parse(cli *c, int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--out") == 0)
        return 0;
    return cli_usage_error(c, "gc", "usage: kbpkg gc [--out DIR]");
}
C
for what in "struct option of its own" "option compared by hand" "usage text by hand" "synopsis in a usage error"; do
  expect_fail cli "^$tmp/cli/cmd_planted.c:[0-9]+: (an? )?$what" --only cli --also "$tmp/cli/cmd_planted.c"
done
# outputs: a committed __pycache__ file (it happened once: a helper's `git add` took one), and
# the tree itself passes
bash "$check" --only outputs >/dev/null || fail "the tree has a tracked file that .gitignore ignores"
expect_fail outputs "^bench/gpu/__pycache__/planted.cpython-311.pyc: tracked, but .gitignore ignores it" \
  --only outputs --also bench/gpu/__pycache__/planted.cpython-311.pyc
echo "checks: format, banned, layering, abi, outputs and cli each refuse a planted violation"
