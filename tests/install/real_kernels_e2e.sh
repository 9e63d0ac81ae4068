#!/usr/bin/env bash
# Issue 13's fixture packages (tests/data/kernels/) the way an author ships them: build -> test
# -> publish -> install -> a plain C dlopen with nothing preloaded -> a consumer compiled
# against the installed header alone -> Python load. CPU targets (CUDA ones compile in
# tests/unit/test_real_kernels.c where nvcc exists).
set -euo pipefail
src=$1 build=$2
kbpkg=$build/kbpkg
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KBPKG_CACHE=$work/cache XDG_CONFIG_HOME=$work/config
hub=$work/hub
data=$src/tests/data/kernels

# layernorm's dependency, served as a file:// archive
cp -r "$data/layernorm" "$data/cppact" "$data/fp8gemm" "$work/"
tar -C "$data" -czf "$work/rkmath-1.0.tar.gz" rkmath-1.0
sha=$(sha256sum "$work/rkmath-1.0.tar.gz" | cut -c1-64)
sed -e "s|@URL@|file://$work/rkmath-1.0.tar.gz|" -e "s|@SHA256@|$sha|" \
    "$work/layernorm/kernel.yaml.in" >"$work/layernorm/kernel.yaml"

cat >"$work/dlopen_check.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
    for (int i = 2; i < argc; i++)
        if (!dlsym(h, argv[i])) { fprintf(stderr, "dlsym %s: %s\n", argv[i], dlerror()); return 1; }
    return 0;
}
C
# no -lm, no -lstdc++: what the library needs it must say itself (NEEDED)
cc "$work/dlopen_check.c" -o "$work/dlopen_check" -ldl

check() { # pkg name export consumer-call
    local dir=$work/$1 name=$2 sym=$3 call=$4 lib
    "$kbpkg" build "$dir" --target cpu >/dev/null
    "$kbpkg" test "$dir" --target cpu >/dev/null
    "$kbpkg" publish "$dir" --registry "$hub" --target cpu >/dev/null
    "$kbpkg" install "$name" --registry "$hub" --allow-unsigned --no-build >/dev/null
    lib=$(find "$KBPKG_CACHE/pkgs/$name" -name 'lib*.so' | head -1)
    test -n "$lib" || { echo "FAIL: $name: nothing installed"; return 1; }
    env -i "$work/dlopen_check" "$lib" kbpkg_kernel_info "$sym" ||
        { echo "FAIL: $name: plain dlopen"; return 1; }
    local inc
    inc=$(dirname "$lib")/../include
    printf '#include "%s"\nint main(void) { %s return 0; }\n' "$(basename "$(ls "$inc"/rk_*.h)")" \
        "$call" >"$work/consumer.c"
    cc -std=c99 -Wall -Werror -I"$inc" -c "$work/consumer.c" -o "$work/consumer.o" ||
        { echo "FAIL: $name: consumer against the installed header"; return 1; }
    PYTHONPATH=$src/python KBPKG_LIB=$build/libkbpkg.so python3 - "$name" "$hub" "$sym" <<'PY' ||
import sys, kbpkg
name, hub, sym = sys.argv[1:4]
k = kbpkg.load(name, settings={"registry": hub}, allow_unsigned=True)
assert k.fn(sym, None, []) is not None
PY
        { echo "FAIL: $name: python load"; return 1; }
    echo "ok: $name"
}

check cppact rk/cppact rk_gelu_tanh_f32 'float o[1], i[1] = {0}; (void)rk_gelu_tanh_f32(o, i, 1, 0);'
check layernorm rk/layernorm rk_layernorm_f32 'kbpkg_f16 h = 0; (void)h;'
check fp8gemm rk/fp8gemm rk_gemm_f32 'kbpkg_e4m3fnuz q = 0; (void)q;'
