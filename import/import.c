/* kb_package_import: a Hugging Face kernel-builder project (build.toml) as a kbpkg package. */
#include "import/toml.h"
#include "kbpkg/build.h"
#include "manifests/manifest.h"
#include "model/ref.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUILD_TOML_MAX (1024 * 1024)
#define BINDING_MAX (4 * 1024 * 1024)

/* One kbpkg backend gathered from the kernel-builder kernels that target it. */
typedef struct imp_backend {
    bool present;
    kb_strv archs;
    kb_strv includes;
    kb_buf sources; /* YAML lines "      - ...\n" */
    const char *first_kernel;
} imp_backend;

typedef struct importer {
    kb_ctx *ctx;
    const char *project;
    const char *toml_path;
    kb_strv notes;    /* what could not be carried over */
    kb_strv copies;   /* project-relative files copied under src/ */
    kb_strv headers;  /* src/... headers, listed under files: */
    kb_strv exports;  /* from the torch bindings' op definitions */
    kb_strv bindings; /* [torch] src */
    imp_backend be[5];
} importer;

static int note(importer *im, const char *fmt, ...) KB_PRINTF(2, 3);
static int note(importer *im, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kb_buf b = KB_BUF_INIT;
    int rc = kbi_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (!rc && kbi_strv_push(&im->notes, b.data ? b.data : ""))
        rc = KB_ERR_NOMEM;
    kbi_buf_free(&b);
    return rc ? kbi_error_oom(im->ctx) : 0;
}

static int bad(importer *im, const kb_toml *at, const char *path, const char *what)
{
    return kbi_error_set_path(im->ctx, KB_ERR_PARSE, im->toml_path, at->line, at->col,
                              "%s:%u:%u: %s: %s", im->toml_path, at->line, at->col, path, what);
}

static int push_unique(importer *im, kb_strv *v, const char *s)
{
    if (kbi_strv_contains(v, s))
        return 0;
    return kbi_strv_push(v, s) ? kbi_error_oom(im->ctx) : 0;
}

/* An array of strings (or NULL: absent) at key of t, checked. */
static int string_array(importer *im, const kb_toml **out, const kb_toml *t, const char *key,
                        const char *where)
{
    *out = kbi_toml_get(t, key);
    char path[160];
    snprintf(path, sizeof(path), "%s.%s", where, key);
    if (*out && (*out)->type != KB_TOML_ARRAY)
        return bad(im, *out, path, "expected an array of strings");
    for (size_t i = 0; *out && i < (*out)->count; i++)
        if ((*out)->items[i]->type != KB_TOML_STRING)
            return bad(im, (*out)->items[i], path, "expected an array of strings");
    return 0;
}

/* A project-relative path kbpkg can carry: relative, no "..", no empty segment. */
static bool relative_path_ok(const char *p)
{
    if (!*p || *p == '/' || strstr(p, "//"))
        return false;
    for (const char *s = p; s; s = strchr(s, '/')) {
        s += *s == '/';
        if (strncmp(s, "..", 2) == 0 && (s[2] == '/' || !s[2]))
            return false;
    }
    return true;
}

static bool has_suffix(const char *s, const char *const *suffixes)
{
    const char *dot = strrchr(s, '.');
    for (size_t i = 0; dot && suffixes[i]; i++)
        if (strcmp(dot, suffixes[i]) == 0)
            return true;
    return false;
}

static bool is_compiled(const char *p)
{
    static const char *const s[] = {".cu", ".c", ".cc", ".cpp", ".cxx", ".hip", ".metal", NULL};
    return has_suffix(p, s);
}

static bool is_cuda_source(const char *p)
{
    static const char *const s[] = {".cu", ".hip", NULL};
    return has_suffix(p, s);
}

/* "8.0" -> sm_80, "9.0a" -> sm_90a, "10.0" -> sm_100; false when it is not a capability. */
static bool capability_arch(char *out, size_t size, const char *cap)
{
    unsigned major = 0, minor = 0;
    int n = 0;
    if (sscanf(cap, "%2u.%1u%n", &major, &minor, &n) != 2 || major == 0)
        return false;
    const char *suffix = cap + n;
    if (*suffix && strcmp(suffix, "a") != 0 && strcmp(suffix, "f") != 0)
        return false;
    snprintf(out, size, "sm_%u%u%s", major, minor, suffix);
    char why[128];
    return kbi_arch_valid(KB_BACKEND_CUDA, out, why, sizeof(why));
}

/* YAML double-quoted scalar: every string we write goes through here. */
static void yq(kb_buf *b, const char *s)
{
    kbi_buf_puts(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            kbi_buf_printf(b, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            kbi_buf_printf(b, "\\x%02x", (unsigned)(unsigned char)*s);
        else
            kbi_buf_append(b, s, 1);
    }
    kbi_buf_puts(b, "\"");
}

static void yaml_list(kb_buf *b, const kb_strv *v, const char *prefix)
{
    kbi_buf_puts(b, "[");
    for (size_t i = 0; i < v->len; i++) {
        kbi_buf_puts(b, i ? ", " : "");
        char *p = kbi_asprintf("%s%s", prefix, v->items[i]);
        yq(b, p ? p : "");
        free(p);
    }
    kbi_buf_puts(b, "]");
}

/* ---- reading build.toml ---- */

/* Flags of a kernel for one source: cuda-flags for CUDA/HIP sources, cxx-flags for the rest;
 * flags kbpkg refuses (absolute paths) are left out with a note. */
static int source_flags(importer *im, kb_strv *out, const kb_toml *flags, const char *kernel)
{
    for (size_t i = 0; flags && i < flags->count; i++) {
        const char *f = flags->items[i]->str;
        const char *prev = i ? flags->items[i - 1]->str : NULL;
        const char *why = kbi_flag_unportable(prev, f);
        int rc = why ? note(im, "kernel.%s: flag '%s' left out: %s", kernel, f, why)
                     : push_unique(im, out, f);
        if (rc)
            return rc;
    }
    return 0;
}

static int add_source(importer *im, imp_backend *be, const char *kernel, const kb_toml *src,
                      const kb_toml *cuda_flags, const kb_toml *cxx_flags)
{
    const char *p = src->str;
    if (!relative_path_ok(p))
        return bad(im, src, "src", "a source path must be relative to the project, without '..'");
    int rc = push_unique(im, &im->copies, p);
    if (rc || !is_compiled(p)) {
        char *h = kbi_asprintf("src/%s", p);
        rc = rc ? rc : h ? push_unique(im, &im->headers, h) : kbi_error_oom(im->ctx);
        free(h);
        return rc;
    }
    kb_strv flags = KB_STRV_INIT;
    rc = source_flags(im, &flags, is_cuda_source(p) ? cuda_flags : cxx_flags, kernel);
    kbi_buf_puts(&be->sources, "      - ");
    if (!rc && flags.len) {
        kbi_buf_puts(&be->sources, "{path: ");
        char *path = kbi_asprintf("src/%s", p);
        yq(&be->sources, path ? path : "");
        free(path);
        kbi_buf_puts(&be->sources, ", flags: ");
        yaml_list(&be->sources, &flags, "");
        kbi_buf_puts(&be->sources, "}\n");
    } else if (!rc) {
        char *path = kbi_asprintf("src/%s", p);
        yq(&be->sources, path ? path : "");
        free(path);
        kbi_buf_puts(&be->sources, "\n");
    }
    kbi_strv_free(&flags);
    return rc;
}

static int kernel_archs(importer *im, imp_backend *be, kb_backend b, const kb_toml *k,
                        const char *kname)
{
    const char *key = b == KB_BACKEND_CUDA ? "cuda-capabilities" : "rocm-archs";
    char where[160];
    snprintf(where, sizeof(where), "kernel.%s", kname);
    const kb_toml *list = NULL;
    int rc = string_array(im, &list, k, key, where);
    kb_strv mine = KB_STRV_INIT;
    for (size_t i = 0; !rc && list && i < list->count; i++) {
        char arch[48], why[160];
        const char *v = list->items[i]->str;
        bool ok = b == KB_BACKEND_CUDA ? capability_arch(arch, sizeof(arch), v)
                                       : kbi_arch_valid(b, v, why, sizeof(why));
        if (b == KB_BACKEND_ROCM)
            snprintf(arch, sizeof(arch), "%s", v);
        char path[200];
        snprintf(path, sizeof(path), "%s.%s", where, key);
        rc = ok ? push_unique(im, &mine, arch)
                : bad(im, list->items[i], path,
                      b == KB_BACKEND_CUDA ? "not a CUDA capability (\"8.0\", \"9.0a\")"
                                           : "not a gfx arch kbpkg knows");
    }
    if (!rc && !mine.len) {
        const char *defaults = b == KB_BACKEND_CUDA ? "sm_80, sm_90" : "gfx90a, gfx942";
        bool cuda = b == KB_BACKEND_CUDA;
        rc = kbi_strv_push(&mine, cuda ? "sm_80" : "gfx90a") ||
                     kbi_strv_push(&mine, cuda ? "sm_90" : "gfx942")
                 ? kbi_error_oom(im->ctx)
                 : 0;
        if (!rc)
            rc = note(im,
                      "kernel.%s: no %s (kernel-builder builds its default list); using %s: "
                      "adjust archs in kernel.yaml",
                      kname, key, defaults);
    }
    bool earlier = be->archs.len > 0; /* another kernel of this backend came first */
    bool differs = earlier && mine.len != be->archs.len;
    for (size_t i = 0; !rc && i < mine.len; i++) {
        differs |= earlier && !kbi_strv_contains(&be->archs, mine.items[i]);
        rc = push_unique(im, &be->archs, mine.items[i]);
    }
    if (!rc && differs)
        rc = note(im,
                  "kernel.%s: its %s differ from kernel.%s's; kbpkg builds every %s source "
                  "for the union",
                  kname, key, be->first_kernel, kbi_backend_name(b));
    kbi_strv_free(&mine);
    return rc;
}

static int kernel_depends(importer *im, const kb_toml *k, const char *kname)
{
    char where[160];
    snprintf(where, sizeof(where), "kernel.%s", kname);
    const kb_toml *deps = NULL;
    int rc = string_array(im, &deps, k, "depends", where);
    for (size_t i = 0; !rc && deps && i < deps->count; i++) {
        const char *d = deps->items[i]->str;
        if (strcmp(d, "torch") == 0)
            continue; /* the torch bindings' concern, reported once with them */
        rc = note(im,
                  "kernel.%s: dependency '%s' is provided by kernel-builder; add it under "
                  "dependencies: with url and sha256 (header-only) or vendor it in third_party/",
                  kname, d);
    }
    return rc;
}

static const char *const kernel_keys[] = {"backend",           "src",        "include",
                                          "cuda-capabilities", "rocm-archs", "cuda-flags",
                                          "cxx-flags",         "depends",    NULL};

static int read_kernel(importer *im, const kb_toml *k)
{
    const char *kname = k->key;
    char where[160];
    snprintf(where, sizeof(where), "kernel.%s", kname);
    if (k->type != KB_TOML_TABLE)
        return bad(im, k, where, "expected a table");
    const kb_toml *backend = kbi_toml_get(k, "backend");
    if (backend && backend->type != KB_TOML_STRING)
        return bad(im, backend, where, "backend: expected a string");
    const char *bname = backend ? backend->str : "cuda";
    kb_backend b = kbi_backend_from_name(bname);
    if (b == KB_BACKEND_NONE)
        return note(im, "kernel.%s: backend '%s' has no kbpkg backend: not carried over", kname,
                    bname);
    for (size_t i = 0; i < k->count; i++) {
        bool known = false;
        for (size_t j = 0; kernel_keys[j]; j++)
            known |= strcmp(k->items[i]->key, kernel_keys[j]) == 0;
        int rc = known ? 0 : note(im, "kernel.%s.%s: not carried over", kname, k->items[i]->key);
        if (rc)
            return rc;
    }
    const kb_toml *src = NULL, *inc = NULL, *cuda_flags = NULL, *cxx_flags = NULL;
    int rc = string_array(im, &src, k, "src", where);
    if (!rc && (!src || !src->count))
        return bad(im, k, where, "a kernel needs a non-empty src array");
    if (!rc)
        rc = string_array(im, &inc, k, "include", where);
    if (!rc)
        rc = string_array(im, &cuda_flags, k, "cuda-flags", where);
    if (!rc)
        rc = string_array(im, &cxx_flags, k, "cxx-flags", where);
    imp_backend *be = &im->be[b];
    if (!be->present) {
        be->present = true;
        be->first_kernel = kname;
    }
    if (!rc && (b == KB_BACKEND_CUDA || b == KB_BACKEND_ROCM))
        rc = kernel_archs(im, be, b, k, kname);
    for (size_t i = 0; !rc && inc && i < inc->count; i++) {
        const char *d = inc->items[i]->str;
        if (!relative_path_ok(d) && strcmp(d, ".") != 0)
            return bad(im, inc->items[i], "include", "an include folder must be project-relative");
        char *mapped = strcmp(d, ".") == 0 ? kbi_strdup("src") : kbi_asprintf("src/%s", d);
        rc = mapped ? push_unique(im, &be->includes, mapped) : kbi_error_oom(im->ctx);
        free(mapped);
    }
    for (size_t i = 0; !rc && i < src->count; i++)
        rc = add_source(im, be, kname, src->items[i], cuda_flags, cxx_flags);
    if (!rc)
        rc = kernel_depends(im, k, kname);
    return rc;
}

/* The op names a torch binding defines (ops.def("name(...) -> ...")): the C-ABI exports the
 * author writes in their place. */
static int binding_ops(importer *im, const char *rel)
{
    char *path = kbi_path_join(im->project, rel);
    kb_buf text = KB_BUF_INIT;
    int rc = path ? kbi_read_file(im->ctx, path, &text) : kbi_error_oom(im->ctx);
    free(path);
    if (rc) { /* a missing binding only loses export names */
        kb_ctx_clear_error(im->ctx);
        kbi_buf_free(&text);
        return 0;
    }
    const char *s = text.data ? text.data : "";
    for (const char *at = strstr(s, ".def(\""); !rc && at; at = strstr(at + 1, ".def(\"")) {
        const char *name = at + 6;
        size_t n = 0;
        while ((name[n] >= 'a' && name[n] <= 'z') || (name[n] >= 'A' && name[n] <= 'Z') ||
               (name[n] >= '0' && name[n] <= '9') || name[n] == '_')
            n++;
        char *op = n && n < 64 ? kbi_strndup(name, n) : NULL;
        if (op)
            rc = push_unique(im, &im->exports, op);
        free(op);
    }
    kbi_buf_free(&text);
    return rc;
}

static int read_torch(importer *im, const kb_toml *torch)
{
    if (!torch)
        return 0;
    const kb_toml *src = NULL;
    int rc = string_array(im, &src, torch, "src", "torch");
    for (size_t i = 0; !rc && src && i < src->count; i++) {
        rc = push_unique(im, &im->bindings, src->items[i]->str);
        if (!rc && relative_path_ok(src->items[i]->str) && strstr(src->items[i]->str, ".c"))
            rc = binding_ops(im, src->items[i]->str);
    }
    if (rc)
        return rc;
    kb_buf list = KB_BUF_INIT;
    for (size_t i = 0; i < im->bindings.len; i++)
        kbi_buf_printf(&list, "%s%s", i ? ", " : "", im->bindings.items[i]);
    rc = note(im,
              "torch: the PyTorch bindings (%s) are not carried over: kbpkg packages export C "
              "functions; write one C-ABI wrapper per op in the header and a source, and load "
              "them from Python with kbpkg's binding (docs/python.md)",
              list.data ? list.data : "none listed");
    kbi_buf_free(&list);
    return rc;
}

static int read_project(importer *im, const kb_toml *root, const char **gname)
{
    const kb_toml *general = kbi_toml_get(root, "general");
    const kb_toml *name = kbi_toml_get(general, "name");
    if (!name || name->type != KB_TOML_STRING)
        return kbi_error_set_path(im->ctx, KB_ERR_PARSE, im->toml_path, general ? general->line : 1,
                                  general ? general->col : 1,
                                  "%s:%u:%u: general.name: a string is required", im->toml_path,
                                  general ? general->line : 1, general ? general->col : 1);
    *gname = name->str;
    const kb_toml *universal = kbi_toml_get(general, "universal");
    if (universal && universal->type == KB_TOML_BOOL && universal->flag)
        return kbi_error_set(im->ctx, KB_ERR_INVALID,
                             "%s: general.universal = true: a Python-only kernel, nothing for "
                             "kbpkg to compile",
                             im->toml_path);
    const kb_toml *kernels = kbi_toml_get(root, "kernel");
    if (!kernels || kernels->type != KB_TOML_TABLE || !kernels->count)
        return kbi_error_set(im->ctx, KB_ERR_INVALID, "%s: no [kernel.NAME] table to import",
                             im->toml_path);
    int rc = read_torch(im, kbi_toml_get(root, "torch"));
    for (size_t i = 0; !rc && i < kernels->count; i++)
        rc = read_kernel(im, kernels->items[i]);
    for (size_t i = 0; !rc && i < root->count; i++) {
        const char *k = root->items[i]->key;
        if (strcmp(k, "general") && strcmp(k, "kernel") && strcmp(k, "torch"))
            rc = note(im, "[%s]: not carried over", k);
    }
    return rc;
}

/* ---- writing the package ---- */

static void emit_backend(kb_buf *y, const importer *im, kb_backend b)
{
    const imp_backend *be = &im->be[b];
    kbi_buf_printf(y, "  %s:\n", kbi_backend_name(b));
    if (be->archs.len) {
        kbi_buf_puts(y, "    archs: ");
        yaml_list(y, &be->archs, "");
        kbi_buf_puts(y, "\n");
    }
    if (be->includes.len) {
        kbi_buf_puts(y, "    includes: ");
        yaml_list(y, &be->includes, "");
        kbi_buf_puts(y, "\n");
    }
    kbi_buf_puts(y, "    sources:\n");
    kbi_buf_append(y, be->sources.data ? be->sources.data : "", be->sources.len);
}

static void emit_manifest(kb_buf *y, const importer *im, const char *name, const char *header,
                          const char *license)
{
    kbi_buf_printf(y, "# Imported from a kernel-builder project by `kbpkg import` (%s).\n",
                   im->toml_path);
    kbi_buf_puts(y, "name: ");
    yq(y, name);
    kbi_buf_puts(y, "\nversion: 0.1.0\n");
    if (license) {
        kbi_buf_puts(y, "license: ");
        yq(y, license);
        kbi_buf_puts(y, "\n");
    }
    kbi_buf_puts(y, "abi: 1\nheader: ");
    yq(y, header);
    kbi_buf_puts(y, "\nexports: ");
    yaml_list(y, &im->exports, "");
    kbi_buf_puts(y, "\n");
    if (im->headers.len) {
        kbi_buf_puts(y, "files: ");
        yaml_list(y, &im->headers, "");
        kbi_buf_puts(y, "\n");
    }
    kbi_buf_puts(y, "backends:\n");
    for (int b = KB_BACKEND_CUDA; b <= KB_BACKEND_CPU; b++)
        if (im->be[b].present && im->be[b].sources.len)
            emit_backend(y, im, (kb_backend)b);
}

/* The license id from README.md's Hugging Face front matter ("license: apache-2.0"). */
static char *readme_license(kb_ctx *ctx, const char *project)
{
    char *path = kbi_path_join(project, "README.md");
    kb_buf text = KB_BUF_INIT;
    char *out = NULL;
    if (path && !kbi_path_exists(path))
        ; /* none: noted by the caller */
    else if (path && kbi_read_file(ctx, path, &text) != 0)
        kb_ctx_clear_error(ctx); /* unreadable: the same as none */
    else if (path && text.data && strncmp(text.data, "---\n", 4) == 0) {
        const char *end = strstr(text.data + 3, "\n---");
        const char *lic = strstr(text.data + 3, "\nlicense:");
        if (lic && (!end || lic < end)) {
            lic += 9;
            while (*lic == ' ' || *lic == '"' || *lic == '\'')
                lic++;
            size_t n = strcspn(lic, "\"'\r\n #");
            out = n ? kbi_strndup(lic, n) : NULL;
        }
    }
    kbi_buf_free(&text);
    free(path);
    return out;
}

static int copy_file(kb_ctx *ctx, const char *from, const char *to)
{
    kb_buf b = KB_BUF_INIT;
    char *dir = kbi_strdup(to);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash)
        *slash = '\0';
    int rc = dir ? kbi_read_file(ctx, from, &b) : kbi_error_oom(ctx);
    if (!rc && slash)
        rc = kbi_mkdir_p(ctx, dir, 0755);
    if (!rc)
        rc = kbi_write_file_new(ctx, to, b.data ? b.data : "", b.len, 0644);
    free(dir);
    kbi_buf_free(&b);
    return rc;
}

static int write_header(kb_ctx *ctx, const char *path, const char *name, const kb_strv *ops)
{
    kb_buf h = KB_BUF_INIT;
    kbi_buf_printf(&h,
                   "/* %s: the package's C API. Imported from kernel-builder: declare one C-ABI\n"
                   " * wrapper per export (pointers, sizes, a stream; 0 or KBPKG_KERNEL_*) and\n"
                   " * define them in a source of each backend. */\n"
                   "#pragma once\n\n#include <stdint.h>\n\n#include <kbpkg/kernel_abi.h>\n\n"
                   "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
                   name);
    for (size_t i = 0; i < ops->len; i++)
        kbi_buf_printf(&h, "/* KBPKG_EXPORT int %s(..., void *stream); */\n", ops->items[i]);
    kbi_buf_puts(&h, "\n#ifdef __cplusplus\n}\n#endif\n");
    int rc = h.data ? kbi_write_file_new(ctx, path, h.data, h.len, 0644) : kbi_error_oom(ctx);
    kbi_buf_free(&h);
    return rc;
}

/* Sources and headers under src/, the license, the starter header, then kernel.yaml last. */
static int write_package(importer *im, const char *dir, const char *name, const char *header,
                         const char *yaml)
{
    kb_ctx *ctx = im->ctx;
    int rc = kbi_mkdir_p(ctx, dir, 0755);
    for (size_t i = 0; !rc && i < im->copies.len; i++) {
        char *from = kbi_path_join(im->project, im->copies.items[i]);
        char *rel = kbi_asprintf("src/%s", im->copies.items[i]);
        char *to = rel ? kbi_path_join(dir, rel) : NULL;
        rc = from && to ? copy_file(ctx, from, to) : kbi_error_oom(ctx);
        free(from);
        free(rel);
        free(to);
    }
    char *lic_from = kbi_path_join(im->project, "LICENSE");
    char *lic_to = kbi_path_join(dir, "LICENSE");
    if (!rc && lic_from && lic_to && kbi_path_exists(lic_from))
        rc = copy_file(ctx, lic_from, lic_to);
    else if (!rc)
        rc = note(im, "LICENSE: the project has none; add one before publishing");
    free(lic_from);
    free(lic_to);
    char *hpath = kbi_path_join(dir, header);
    char *hdir = hpath ? kbi_strndup(hpath, (size_t)(strrchr(hpath, '/') - hpath)) : NULL;
    if (!rc)
        rc = hdir ? kbi_mkdir_p(ctx, hdir, 0755) : kbi_error_oom(ctx);
    if (!rc)
        rc = write_header(ctx, hpath, name, &im->exports);
    free(hdir);
    free(hpath);
    char *ypath = kbi_path_join(dir, "kernel.yaml");
    if (!rc)
        rc = ypath ? kbi_write_file_new(ctx, ypath, yaml, strlen(yaml), 0644) : kbi_error_oom(ctx);
    free(ypath);
    return rc;
}

static void importer_free(importer *im)
{
    kbi_strv_free(&im->notes);
    kbi_strv_free(&im->copies);
    kbi_strv_free(&im->headers);
    kbi_strv_free(&im->exports);
    kbi_strv_free(&im->bindings);
    for (size_t b = 0; b < KB_ARRAY_LEN(im->be); b++) {
        kbi_strv_free(&im->be[b].archs);
        kbi_strv_free(&im->be[b].includes);
        kbi_buf_free(&im->be[b].sources);
    }
}

/* Everything up to writing: read, map, and check the manifest parses. */
static int plan_import(importer *im, kb_buf *yaml, char **name_out, char **header_out,
                       const char *name)
{
    kb_buf text = KB_BUF_INIT;
    kb_toml *root = NULL;
    const char *gname = NULL;
    int rc = kbi_read_file(im->ctx, im->toml_path, &text);
    if (!rc && text.len > BUILD_TOML_MAX)
        rc = kbi_error_set(im->ctx, KB_ERR_LIMIT, "%s: over %d bytes", im->toml_path,
                           BUILD_TOML_MAX);
    if (!rc)
        rc = kbi_toml_parse(&root, im->ctx, im->toml_path, text.data ? text.data : "", text.len);
    if (!rc)
        rc = read_project(im, root, &gname);
    if (!rc)
        *name_out = name ? kbi_strdup(name) : kbi_asprintf("kernels-community/%s", gname);
    if (!rc && !*name_out)
        rc = kbi_error_oom(im->ctx);
    if (!rc && !kbi_pkg_name_valid(*name_out))
        rc = kbi_error_set(im->ctx, KB_ERR_INVALID,
                           "'%s' is not a package name (org/name, [a-z0-9._-]): give one with "
                           "--name",
                           *name_out);
    if (!rc && !im->exports.len) {
        rc = kbi_strv_push(&im->exports, gname) ? kbi_error_oom(im->ctx) : 0;
        if (!rc)
            rc = note(im,
                      "exports: no torch op definitions found; '%s' stands in: list your "
                      "C-ABI functions",
                      gname);
    }
    if (!rc) {
        const char *slash = strchr(*name_out, '/');
        *header_out = kbi_asprintf("include/%s.h", slash + 1);
        rc = *header_out ? 0 : kbi_error_oom(im->ctx);
    }
    char *license = rc ? NULL : readme_license(im->ctx, im->project);
    if (!rc) {
        emit_manifest(yaml, im, *name_out, *header_out, license);
        rc = note(im, "version: build.toml has none; 0.1.0 written");
    }
    if (!rc && !license)
        rc = note(im, "license: no license id found (README.md front matter); add license:");
    if (!rc && !im->be[KB_BACKEND_CPU].present)
        rc = note(im, "cpu: no CPU backend; kbpkg's package test compares every target "
                      "against a CPU reference: add cpu: {sources: [...]} and test:");
    free(license);
    kb_manifest *m = NULL;
    if (!rc) /* what we wrote must be a manifest kbpkg accepts */
        rc = kbi_manifest_parse(im->ctx, &m, "kernel.yaml (imported)", yaml->data, yaml->len);
    kb_manifest_free(m);
    kbi_toml_free(root);
    kbi_buf_free(&text);
    return rc;
}

KB_EXTERN int kb_package_import(char ***notes_out, size_t *note_count, kb_ctx *ctx,
                                const char *project, const char *dir, const char *name)
{
    if (!notes_out || !note_count || !project || !dir)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_package_import: NULL argument");
    *notes_out = NULL;
    *note_count = 0;
    importer im = {.ctx = ctx, .project = project};
    char *toml_path = kbi_path_join(project, "build.toml");
    char *ypath = kbi_path_join(dir, "kernel.yaml");
    char *pkg = NULL, *header = NULL;
    kb_buf yaml = KB_BUF_INIT;
    int rc = toml_path && ypath ? 0 : kbi_error_oom(ctx);
    im.toml_path = toml_path;
    if (!rc && kbi_path_exists(ypath))
        rc =
            kbi_error_set(ctx, KB_ERR_EXISTS, "%s already exists: import into a new folder", ypath);
    if (!rc)
        rc = plan_import(&im, &yaml, &pkg, &header, name);
    if (!rc)
        rc = write_package(&im, dir, pkg, header, yaml.data);
    if (!rc) {
        *note_count = im.notes.len;
        *notes_out = im.notes.items; /* malloc'd strings: kb_strings_free */
        memset(&im.notes, 0, sizeof(im.notes));
    }
    free(toml_path);
    free(ypath);
    free(pkg);
    free(header);
    kbi_buf_free(&yaml);
    importer_free(&im);
    return rc;
}
