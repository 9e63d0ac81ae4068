#!/usr/bin/env bash
# A suite that skips for a missing dependency fails under KBPKG_REQUIRE_DEPS=1 (.ci/run sets it)
# and only skips without it, in each language the suites use: a Criterion test
# (kbt_skip_missing), the Python binding's runner and the README walk (a planted numpy that
# fails to import stands for a missing one).
#   skips.sh MISSING_DEP_EXE      (the tests/checks/missing_dep.c build)
set -uo pipefail
src=${KB_SOURCE_DIR:?}
exe=${1:?usage: skips.sh MISSING_DEP_EXE}
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect NAME WANT_RC PATTERN -- COMMAND...: COMMAND exits WANT_RC and prints PATTERN.
expect() {
  local name=$1 want=$2 pattern=$3 out rc
  shift 4
  out=$("$@" 2>&1)
  rc=$?
  [ "$rc" = "$want" ] || fail "$name: exit $rc, expected $want: $out"
  grep -qE "$pattern" <<<"$out" || fail "$name: no '$pattern' in: $out"
  echo "ok: $name (exit $rc)"
}

expect "criterion skips" 0 "\[SKIP\] missing_dep::planted" -- env -u KBPKG_REQUIRE_DEPS "$exe" --verbose
expect "criterion fails in CI" 1 "KBPKG_REQUIRE_DEPS=1, a dependency is missing: planted" -- \
  env KBPKG_REQUIRE_DEPS=1 "$exe"

mkdir -p "$tmp/nonumpy/numpy"
echo 'raise ImportError("planted: numpy is missing")' >"$tmp/nonumpy/numpy/__init__.py"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
expect "python skips" 77 "skipped: numpy is not installed" -- \
  env -u KBPKG_REQUIRE_DEPS PYTHONPATH="$tmp/nonumpy" "$py" "$src/tests/python/run_tests.py"
expect "python fails in CI" 1 "KBPKG_REQUIRE_DEPS=1, a dependency is missing: numpy" -- \
  env KBPKG_REQUIRE_DEPS=1 PYTHONPATH="$tmp/nonumpy" "$py" "$src/tests/python/run_tests.py"

# The README walk checks numpy before anything is built or copied.
expect "readme skips" 77 "readme: SKIP: .*numpy" -- \
  env -u KBPKG_REQUIRE_DEPS PYTHONPATH="$tmp/nonumpy" bash "$src/tests/readme/readme_newcomer.sh" \
  "$src" "$tmp"
expect "readme fails in CI" 1 "readme: FAIL: KBPKG_REQUIRE_DEPS=1, a dependency is missing: .*numpy" \
  -- env KBPKG_REQUIRE_DEPS=1 PYTHONPATH="$tmp/nonumpy" bash \
  "$src/tests/readme/readme_newcomer.sh" "$src" "$tmp"
echo "skips: a missing dependency skips locally and fails under KBPKG_REQUIRE_DEPS=1"
