/* TEMPORARY: a weak kb_arch_valid so manifests/ links before core/target.c lands on main.
 * The real (strong) definition from the targets work replaces it; delete this file then. */
#include "core/target.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static bool digits_only(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return n > 0;
}

static bool cuda_arch_ok(const char *arch)
{
    if (!kb_str_starts(arch, "sm_"))
        return false;
    const char *d = arch + 3;
    size_t n = strspn(d, "0123456789");
    if (!digits_only(d, n) || d[0] == '0' || (d[n] && strcmp(d + n, "a") && strcmp(d + n, "f")))
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (uint64_t)(d[i] - '0');
    return n <= 4 && v >= 75;
}

static bool rocm_arch_ok(const char *arch)
{
    if (!kb_str_starts(arch, "gfx"))
        return false;
    const char *d = arch + 3;
    size_t n = strcspn(d, ":-");
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)d[i]) || isupper((unsigned char)d[i]))
            return false;
    return n >= 3 || (n > 0 && d[n] == '-');
}

__attribute__((weak)) bool kb_arch_valid(kb_backend backend, const char *arch, char *why,
                                         size_t why_size)
{
    bool ok = false;
    const char *hint = "";
    switch (backend) {
    case KB_BACKEND_CUDA:
        ok = cuda_arch_ok(arch);
        hint = "sm_75 or newer, e.g. sm_80, sm_90a";
        break;
    case KB_BACKEND_ROCM:
        ok = rocm_arch_ok(arch);
        hint = "a gfx target, e.g. gfx1030, gfx90a:xnack+, gfx11-generic";
        break;
    case KB_BACKEND_CPU:
        ok = strcmp(arch, "x86_64_v2") == 0 || strcmp(arch, "x86_64_v3") == 0 ||
             strcmp(arch, "x86_64_v4") == 0 || strcmp(arch, "aarch64") == 0;
        hint = "x86_64_v2, x86_64_v3, x86_64_v4 or aarch64";
        break;
    case KB_BACKEND_METAL:
        ok = strcmp(arch, "apple") == 0;
        hint = "apple";
        break;
    default:
        hint = "unknown backend";
    }
    if (!ok && why && why_size)
        snprintf(why, why_size, "%s", hint);
    return ok;
}
