#!/usr/bin/env bash
# The tree's static checks, run by .ci/run before the build and by ctest (checks/tree):
#   format    every C/CUDA file the project owns matches .clang-format
#   banned    no call to a function on the banned list (BANNED below) outside comments/strings
#   layering  every #include follows cmake/modules.txt (scripts/check-layering.py)
#   abi       the public headers (include/kbpkg/*.h) hold no fixed-size array in a struct and
#             put the out-params of each KB_EXTERN function first
#   outputs   no tracked file is one .gitignore ignores (build outputs, __pycache__, .so, .o):
#             `git add -A` of a scratch file must not slip through to a commit
#   cli       no cli/cmd_*.c parses options or writes usage outside the command table: no
#             struct option array of its own, no strcmp against a "-flag", no "usage:" text and
#             no synopsis ("kbpkg farm DIR...") in a usage error: cli/commands.c's table and
#             cli/options.c make those
# Each violation is printed as FILE:LINE: what; the exit status is 1 if any check failed.
#   check-tree.sh [--only CHECK]... [--also FILE]... [--as MODULE FILE]...
# --also adds FILE to the format and banned checks, --as checks FILE's includes as if it were in
# MODULE (tests/checks/run.sh plants violations this way without touching the tree).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

# Unsafe or non-reentrant C library calls (curl's checksrc and libgit2 ban the same family):
# unbounded copies and formats, unchecked number parsing, shared static state, racy temp names.
BANNED="gets sprintf vsprintf strcpy stpcpy strcat strncat strncpy atoi atol atoll atof strtok
tmpnam tempnam mktemp localtime gmtime ctime asctime"

only=()
also=()
as=()
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only+=("$2"); shift 2 ;;
    --also) also+=("$2"); shift 2 ;;
    --as) as+=(--as "$2" "$3"); shift 3 ;;
    *) echo "usage: check-tree.sh [--only format|banned|layering|abi|outputs|cli]... [--also FILE]... [--as MODULE FILE]..." >&2
       exit 2 ;;
  esac
done
wanted() { [ ${#only[@]} -eq 0 ] || [[ " ${only[*]} " == *" $1 "* ]]; }

# What the project owns: tracked C/C++/CUDA sources, less tests/data (fixtures kept as found).
owned_files() {
  git ls-files -- '*.c' '*.h' '*.cu' '*.cuh' ':!:tests/data/**'
  [ ${#also[@]} -eq 0 ] || printf '%s\n' "${also[@]}"
}

check_format() {
  command -v clang-format >/dev/null || { echo "clang-format is not installed (scripts/install-deps.sh)"; return 1; }
  local out
  # --style=file:PATH so a planted file outside the tree is held to the same style.
  out=$(owned_files | xargs clang-format --dry-run --style="file:$root/.clang-format" 2>&1 |
        sed -n 's/^\([^ ]*:[0-9]*\):[0-9]*: warning: code should be clang-formatted.*/\1: not clang-formatted (run clang-format -i)/p' |
        sort -u -t: -k1,1 -k2,2n)
  # clang-format splits a launch whose grid holds a '>' (`k<<<n > 0 ? n : 1, ...>>>`) into
  # `k < < <n> 0 ...`, which nvcc refuses: it happened to a bench file nobody built afterwards
  local split
  split=$(owned_files | grep -E '\.(cu|cuh)$' | xargs -r grep -HnE '< < <' 2>/dev/null |
          sed 's/^\([^:]*:[0-9]*\):.*/\1: a kernel launch split into "< < <" (nvcc refuses it): put the grid in a variable first/')
  out=$(printf '%s\n%s' "$out" "$split" | sed '/^$/d')
  [ -z "$out" ] && return 0
  echo "$out"
  return 1
}

# Comments and string/char literals are blanked first (newlines kept, so line numbers hold):
# a banned name in a message or a generated snippet is not a call.
check_banned() {
  owned_files | python3 -c '
import re, sys
banned = sys.argv[1].split()
call = re.compile(r"(?<![\w.>])(" + "|".join(banned) + r")\s*\(")
lexeme = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'"'"'(?:\\.|[^'"'"'\\\n])*'"'"'", re.S)
blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))
bad = 0
for path in sys.stdin.read().split():
    text = lexeme.sub(blank, open(path, errors="replace").read())
    for n, line in enumerate(text.split("\n"), 1):
        for m in call.finditer(line):
            print(f"{path}:{n}: {m.group(1)}() is banned (scripts/check-tree.sh: BANNED)")
            bad += 1
sys.exit(1 if bad else 0)
' "$BANNED"
}

# The public API's grammar (DESIGN.md): out-params first; strings in results are pointers the
# result owns, never char x[N] (a size in the ABI that can never grow).
public_headers() {
  git ls-files -- 'include/kbpkg/*.h'
  for f in ${also[@]+"${also[@]}"}; do case "$f" in *.h) echo "$f" ;; esac; done
}

check_abi() {
  public_headers | python3 -c '
import re, sys
comment = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))
member = re.compile(r"^\s+[A-Za-z_][\w \t*]*\b\w+\s*\[[^\]]*\]\s*;")
fn = re.compile(r"KB_EXTERN\s[^;{]*?\b(\w+)\s*\(([^;{]*?)\)\s*;", re.S)
def is_out(p):  # what the function fills: T **x, or a non-const pointer to a plain value
    if re.search(r"\*\s*const\s*\*", p):
        return False
    if "**" in p:
        return True
    return re.match(r"(size_t|int|unsigned|unsigned int|uint64_t|int64_t|bool|double|kb_\w+_(verdict|origin)) \*", p) is not None
bad = 0
for path in sys.stdin.read().split():
    text = comment.sub(blank, open(path, errors="replace").read())
    for n, line in enumerate(text.split("\n"), 1):
        if member.match(line) and "(" not in line:
            print(f"{path}:{n}: a fixed-size array in a public struct (use a pointer the result owns)")
            bad += 1
    for m in fn.finditer(text):
        params = [p.strip() for p in re.sub(r"\s+", " ", m.group(2)).split(",")]
        outs = [is_out(p) for p in params]
        if True in outs and False in outs[: outs.index(True)]:
            n = text.count("\n", 0, m.start()) + 1
            print(f"{path}:{n}: {m.group(1)}: out-params go first ({params[outs.index(True)]})")
            bad += 1
sys.exit(1 if bad else 0)
'
}

# The CLI's one table (cli/cli.h): a command file that parses or describes its options by hand
# has a second list of them, which drifts from help, man pages and completion.
cli_files() {
  git ls-files -- 'cli/cmd_*.c'
  for f in ${also[@]+"${also[@]}"}; do case "$(basename "$f")" in cmd_*.c) echo "$f" ;; esac; done
}

check_cli() {
  cli_files | python3 -c '
import re, sys
comment = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))
rules = [
    (re.compile(r"\bstruct\s+option\b"), "a struct option of its own (declare cli_option rows in the table)"),
    (re.compile(r"\bstrn?cmp\s*\([^;()]*,\s*\"-"), "an option compared by hand (parse with cli_getopt_build)"),
    (re.compile(r"\"[^\"\n]*usage: kbpkg [a-z]"), "usage text by hand (cli_usage_text makes it from the table)"),
    (re.compile(r"cli_usage_error\s*\([^;]*?\"[^\"\n]*kbpkg [a-z]+[^\"\n]*(\[|\.\.\.|\b[A-Z]{2,}\b)", re.S),
     "a synopsis in a usage error (the usage line below it comes from the table)"),
]
bad = 0
for path in sys.stdin.read().split():
    text = comment.sub(blank, open(path, errors="replace").read())
    for rx, what in rules:
        for m in rx.finditer(text):
            n = text.count("\n", 0, m.start()) + 1
            print(f"{path}:{n}: {what}")
            bad += 1
sys.exit(1 if bad else 0)
'
}

# Tracked files that .gitignore matches: a build output committed by mistake. --also paths
# (relative to the root; they need not exist) are checked as if they were tracked.
check_outputs() {
  local out
  out=$( { git ls-files --cached --ignored --exclude-standard
           [ ${#also[@]} -eq 0 ] || git check-ignore --no-index "${also[@]}"; } 2>/dev/null | sort -u)
  [ -z "$out" ] && return 0
  sed 's/$/: tracked, but .gitignore ignores it (a build output? git rm --cached it)/' <<<"$out"
  return 1
}

check_layering() {
  python3 scripts/check-layering.py "${as[@]}" | grep -v '^check-layering:'
  return "${PIPESTATUS[0]}"
}

failed=()
run_check() { # name, description
  wanted "$1" || return 0
  echo "check-tree: $1: $2"
  if ! "check_$1"; then failed+=("$1"); fi
}
run_check format "clang-format (.clang-format) on every owned *.c *.h *.cu *.cuh"
run_check banned "no call to: $(echo $BANNED)"
run_check layering "#include directions against cmake/modules.txt"
run_check abi "public headers: out-params first, no fixed-size arrays in structs"
run_check outputs "no tracked file that .gitignore ignores"
run_check cli "cli/cmd_*.c: options and usage only from the command table"
if [ ${#failed[@]} -gt 0 ]; then
  echo "check-tree: FAILED: ${failed[*]}"
  exit 1
fi
echo "check-tree: all checks passed"
