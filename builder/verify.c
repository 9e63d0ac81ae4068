/* Verification of a built library: exports, no STB_GNU_UNIQUE, glibc needs, GPU code sections.
 * Reads the ELF through binutils' readelf until the inspector (builder/inspect.h) lands. */
#define _GNU_SOURCE /* memmem */
#include "builder/builder.h"

#include <stdio.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define READELF_TIMEOUT_MS 60000

static int run_readelf(kb_ctx *ctx, kb_buf *out, const char *flag, const char *lib)
{
    const char *argv[] = {"readelf", "-W", flag, lib, NULL};
    kb_proc_result r;
    int rc = kb_proc_run(ctx, &r, argv, NULL, READELF_TIMEOUT_MS);
    if (rc == KB_ERR_NOT_FOUND)
        rc = kb_error_set(ctx, KB_ERR_TOOLCHAIN, "readelf (binutils) is needed to verify %s", lib);
    else if (!rc && r.exit_code != 0)
        rc = kb_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0, "%s is not a readable ELF file: %s",
                               lib, r.output.data);
    if (!rc) {
        *out = r.output;
        r.output = (kb_buf)KB_BUF_INIT;
    }
    kb_proc_result_free(&r);
    return rc;
}

/* One .dynsym row: "  12: 0000000000001139  24 FUNC  GLOBAL DEFAULT  12 name@@VER". */
typedef struct dynsym {
    char bind[16], vis[16], ndx[16], name[256];
} dynsym;

static bool parse_dynsym_line(const char *line, size_t len, dynsym *s)
{
    char buf[512], num[32], value[32], size[32], type[32];
    if (len >= sizeof(buf))
        return false;
    memcpy(buf, line, len);
    buf[len] = '\0';
    if (sscanf(buf, "%31s %31s %31s %31s %15s %15s %15s %255s", num, value, size, type, s->bind,
               s->vis, s->ndx, s->name) != 8)
        return false;
    if (!strchr(num, ':'))
        return false;
    char *at = strchr(s->name, '@');
    if (at)
        *at = '\0';
    return true;
}

int kb_verify_exports(kb_ctx *ctx, const char *lib, const kb_strv *required)
{
    kb_buf out = KB_BUF_INIT;
    int rc = run_readelf(ctx, &out, "--dyn-syms", lib);
    if (rc)
        return rc;
    kb_strv exported = KB_STRV_INIT;
    for (const char *p = out.data; !rc && *p;) {
        size_t len = strcspn(p, "\n");
        dynsym s;
        if (parse_dynsym_line(p, len, &s) && strcmp(s.ndx, "UND") != 0) {
            if (strcmp(s.bind, "UNIQUE") == 0)
                rc = kb_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                       "%s has the STB_GNU_UNIQUE symbol %s (it would pin the "
                                       "library in memory; build with -fno-gnu-unique)",
                                       lib, s.name);
            else if (strcmp(s.vis, "DEFAULT") == 0 &&
                     (strcmp(s.bind, "GLOBAL") == 0 || strcmp(s.bind, "WEAK") == 0))
                rc = kb_strv_push(&exported, s.name) ? kb_error_oom(ctx) : 0;
        }
        p += len + (p[len] == '\n');
    }
    kb_buf missing = KB_BUF_INIT;
    for (size_t i = 0; !rc && i < required->len; i++)
        if (!kb_strv_contains(&exported, required->items[i]))
            kb_buf_printf(&missing, "%s%s", missing.len ? ", " : "", required->items[i]);
    if (!rc && missing.len)
        rc = kb_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                               "%s does not export %s (declared in exports)", lib, missing.data);
    kb_buf_free(&missing);
    kb_strv_free(&exported);
    kb_buf_free(&out);
    return rc;
}

/* Compare dotted versions numerically: 2.34 > 2.4. */
static int version_cmp(const char *a, const char *b)
{
    while (*a || *b) {
        unsigned long x = strtoul(a, (char **)&a, 10), y = strtoul(b, (char **)&b, 10);
        if (x != y)
            return x < y ? -1 : 1;
        if (*a == '.')
            a++;
        if (*b == '.')
            b++;
        if (!*a && !*b)
            break;
        if (!*a || !*b)
            return *a ? 1 : -1;
    }
    return 0;
}

/* Highest "<prefix>x.y" in readelf -V output ("Name: GLIBC_2.34"). */
static void highest_version(const char *text, const char *prefix, char *out, size_t size)
{
    out[0] = '\0';
    size_t plen = strlen(prefix);
    for (const char *p = strstr(text, prefix); p; p = strstr(p + 1, prefix)) {
        if (p > text && p[-1] != ' ')
            continue;
        const char *v = p + plen;
        size_t n = strspn(v, "0123456789.");
        char ver[32];
        if (n == 0 || n >= sizeof(ver))
            continue;
        memcpy(ver, v, n);
        ver[n] = '\0';
        if (!out[0] || version_cmp(ver, out) > 0)
            snprintf(out, size, "%s", ver);
    }
}

int kb_verify_glibc_needs(kb_ctx *ctx, const char *lib, char glibc[16], char glibcxx[16])
{
    kb_buf out = KB_BUF_INIT;
    int rc = run_readelf(ctx, &out, "-V", lib);
    if (rc)
        return rc;
    /* Only the needs section: after "Version needs section". */
    const char *needs = strstr(out.data, "Version needs section");
    highest_version(needs ? needs : "", "GLIBC_", glibc, 16);
    highest_version(needs ? needs : "", "GLIBCXX_", glibcxx, 16);
    kb_buf_free(&out);
    return 0;
}

int kb_verify_gpu_sections(kb_ctx *ctx, const char *lib, const kb_plan_item *item)
{
    const char *want = item->backend == KB_BACKEND_CUDA   ? ".nv_fatbin"
                       : item->backend == KB_BACKEND_ROCM ? ".hip_fatbin"
                                                          : NULL;
    kb_buf out = KB_BUF_INIT;
    int rc = run_readelf(ctx, &out, "-S", lib);
    if (rc)
        return rc;
    static const char *const gpu[] = {".nv_fatbin", ".hip_fatbin"};
    for (size_t i = 0; !rc && i < KB_ARRAY_LEN(gpu); i++) {
        char pat[32];
        snprintf(pat, sizeof(pat), " %s ", gpu[i]);
        bool has = strstr(out.data, pat) != NULL;
        bool should = want && strcmp(want, gpu[i]) == 0;
        if (has != should)
            rc = kb_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0, "%s for %s %s a %s section", lib,
                                   item->target, has ? "unexpectedly has" : "lacks", gpu[i]);
    }
    kb_buf_free(&out);
    return rc;
}

int kb_verify_rocm_archs(kb_ctx *ctx, const char *lib, const kb_plan_item *item)
{
    /* The offload bundle header names each code object by triple:
     * "hipv4-amdgcn-amd-amdhsa--gfx1030". Every one must be the declared arch. */
    kb_buf data = KB_BUF_INIT;
    int rc = kb_read_file(ctx, lib, &data);
    if (rc)
        return rc;
    static const char marker[] = "amdgcn-amd-amdhsa--";
    kb_strv found = KB_STRV_INIT;
    for (const char *p = memmem(data.data, data.len, marker, strlen(marker)); p;) {
        const char *arch = p + strlen(marker);
        size_t n = 0;
        while (
            arch + n < data.data + data.len && n < 40 &&
            (isalnum((unsigned char)arch[n]) || arch[n] == ':' || arch[n] == '+' || arch[n] == '-'))
            n++;
        char name[48];
        snprintf(name, sizeof(name), "%.*s", (int)n, arch);
        if (n && !kb_strv_contains(&found, name))
            kb_strv_push(&found, name);
        size_t off = (size_t)(arch - data.data);
        p = memmem(arch, data.len - off, marker, strlen(marker));
    }
    kb_buf list = KB_BUF_INIT;
    bool only_declared = found.len > 0;
    for (size_t i = 0; i < found.len; i++) {
        kb_buf_printf(&list, "%s%s", i ? ", " : "", found.items[i]);
        only_declared = only_declared && strcmp(found.items[i], item->arch) == 0;
    }
    if (!only_declared)
        rc = kb_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                               "%s for %s holds code objects for %s, expected only %s", lib,
                               item->target, list.len ? list.data : "no gfx arch", item->arch);
    kb_buf_free(&list);
    kb_strv_free(&found);
    kb_buf_free(&data);
    return rc;
}

int kb_verify_library(kb_ctx *ctx, const char *lib, const kb_manifest *m, const kb_plan_item *item,
                      char glibc[16], char glibcxx[16])
{
    kb_strv required = KB_STRV_INIT;
    int rc = kb_strv_push(&required, "kbpkg_kernel_info") ? kb_error_oom(ctx) : 0;
    for (size_t i = 0; !rc && i < m->exports.len; i++)
        rc = kb_strv_push(&required, m->exports.items[i]) ? kb_error_oom(ctx) : 0;
    if (!rc)
        rc = kb_verify_exports(ctx, lib, &required);
    if (!rc)
        rc = kb_verify_gpu_sections(ctx, lib, item);
    if (!rc && item->backend == KB_BACKEND_ROCM)
        rc = kb_verify_rocm_archs(ctx, lib, item);
    if (!rc)
        rc = kb_verify_glibc_needs(ctx, lib, glibc, glibcxx);
    kb_strv_free(&required);
    return rc;
}
