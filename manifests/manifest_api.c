/* The public manifest API (include/kbpkg/manifest.h) over the internal kb_manifest model. */
#include "kbpkg/manifest.h"
#include "manifests/manifest.h"

#include <string.h>

KB_EXTERN int kb_manifest_open(kb_manifest **out, kb_ctx *ctx, const char *path)
{
    if (!out)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_manifest_open: NULL out");
    return kbi_manifest_load(ctx, out, path, true);
}

KB_EXTERN const char *kb_manifest_name(const kb_manifest *m)
{
    return m && m->name ? m->name : "";
}

KB_EXTERN const char *kb_manifest_version(const kb_manifest *m)
{
    return m && m->version_text ? m->version_text : "";
}

KB_EXTERN const char *kb_manifest_summary(const kb_manifest *m)
{
    return m && m->summary ? m->summary : "";
}

KB_EXTERN const char *kb_manifest_path(const kb_manifest *m)
{
    return m && m->path ? m->path : "";
}

KB_EXTERN size_t kb_manifest_export_count(const kb_manifest *m)
{
    return m ? m->exports.len : 0;
}

KB_EXTERN const char *kb_manifest_export(const kb_manifest *m, size_t index)
{
    return m && index < m->exports.len ? m->exports.items[index] : NULL;
}

/* How many targets one backend declares; arch_at gives the one at i. */
static size_t backend_target_count(const kb_backend_spec *b)
{
    if (!b->present)
        return 0;
    if (b->backend == KB_BACKEND_METAL || (b->backend == KB_BACKEND_CPU && b->archs.len == 0))
        return 1;
    return b->archs.len + (b->ptx ? 1 : 0);
}

static const char *backend_arch_at(const kb_backend_spec *b, size_t i)
{
    if (b->backend == KB_BACKEND_METAL)
        return "apple";
    if (i < b->archs.len)
        return b->archs.items[i];
    if (b->backend == KB_BACKEND_CPU)
        return "";
    return b->ptx_target;
}

KB_EXTERN int kb_manifest_target(const char **backend_out, const char **arch_out,
                                 const kb_manifest *m, size_t index)
{
    static const char *names[] = {"", "cuda", "rocm", "metal", "cpu"};
    if (!m)
        return KB_ERR_INVALID;
    for (size_t b = KB_BACKEND_CUDA; b <= KB_BACKEND_CPU; b++) {
        const kb_backend_spec *spec = &m->backends[b];
        size_t n = backend_target_count(spec);
        if (index < n) {
            if (backend_out)
                *backend_out = names[b];
            if (arch_out)
                *arch_out = backend_arch_at(spec, index);
            return 0;
        }
        index -= n;
    }
    return KB_ERR_NOT_FOUND;
}

int kbi_manifest_declared_targets(char **out, const kb_manifest *m)
{
    kb_buf b = KB_BUF_INIT;
    const char *backend, *arch;
    char entry[96];
    for (size_t i = 0; kb_manifest_target(&backend, &arch, m, i) == 0; i++)
        if (kbi_declared_format(entry, sizeof(entry), kbi_backend_from_name(backend), arch) &&
            kbi_buf_printf(&b, "%s%s", b.len ? "," : "", entry) != 0) {
            kbi_buf_free(&b);
            return KB_ERR_NOMEM;
        }
    *out = b.len ? kbi_buf_detach(&b) : kbi_strdup("");
    return *out ? 0 : KB_ERR_NOMEM;
}

KB_EXTERN int kb_version_satisfies(int *out, kb_ctx *ctx, const char *version,
                                   const char *constraint)
{
    if (!version || !constraint || !out)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_version_satisfies: NULL argument");
    *out = 0;
    kb_semver v;
    int rc = kbi_semver_parse(ctx, &v, version);
    if (rc)
        return rc;
    kb_constraint *c = NULL;
    rc = kbi_constraint_parse(ctx, &c, constraint);
    if (rc)
        return rc;
    *out = kbi_constraint_match(c, &v) ? 1 : 0;
    kbi_constraint_free(c);
    return 0;
}
