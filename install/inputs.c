/* A package folder's network inputs: url sources and header-only dependencies, by digest. */
#include "archive/extract.h"
#include "manifests/manifest.h"
#include "registry/registry.h"
#include "kbpkg/build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Move a finished folder into place; another process that got there first wins. */
static int settle(kb_ctx *ctx, const char *tmp, const char *final)
{
    if (rename(tmp, final) == 0)
        return 0;
    int err = errno;
    kbi_rm_rf(NULL, tmp);
    if ((err == EEXIST || err == ENOTEMPTY) && kbi_is_dir(final))
        return 0;
    return kbi_error_set_path(ctx, KB_ERR_IO, final, 0, 0, "cannot move %s to %s: %s", tmp, final,
                              strerror(err));
}

/* <deps>/<sha256>/: the unpacked archive, or a folder holding the one file (named file). */
static int ensure_dep(kb_ctx *ctx, const char *deps, const char *url, const char *sha256,
                      bool archive, const char *file, size_t *fetched)
{
    char *final = kbi_path_join(deps, sha256);
    char *download = kbi_asprintf("%s/.%s.download", deps, sha256);
    char *tmp = NULL;
    int rc = final && download ? kbi_mkdir_p(ctx, deps, 0755) : kbi_error_oom(ctx);
    if (!rc && kbi_is_dir(final))
        goto done; /* fetched before: offline is fine */
    if (!rc)
        rc = kbi_url_fetch_verified(ctx, url, sha256, download);
    if (!rc && fetched)
        (*fetched)++;
    if (!rc && archive) {
        kb_extract_opts opts = KB_EXTRACT_OPTS_INIT;
        opts.zip = true;
        rc = kbi_extract_archive(&tmp, ctx, download, deps, &opts);
        if (rc)
            kbi_error_prefix(ctx, "unpacking %s", url);
    } else if (!rc) {
        rc = kbi_mkdtemp(ctx, &tmp, deps, ".kbpkg-dep-");
        char *to = rc ? NULL : kbi_path_join(tmp, file);
        if (!rc && (!to || rename(download, to) != 0))
            rc = to ? kbi_error_set_path(ctx, KB_ERR_IO, to, 0, 0, "cannot move %s to %s: %s",
                                         download, to, strerror(errno))
                    : kbi_error_oom(ctx);
        free(to);
    }
    if (!rc)
        rc = settle(ctx, tmp, final);
    else if (tmp)
        kbi_rm_rf(NULL, tmp);
done:
    if (download)
        unlink(download);
    free(tmp);
    free(final);
    free(download);
    return rc;
}

/* A url source lives in the package folder under its path; the cache keeps it by digest so
 * the next checkout needs no network. */
static int ensure_url_source(kb_ctx *ctx, const kb_manifest *m, const kb_source *s,
                             const char *deps, size_t *fetched)
{
    char *dest = kbi_path_join(m->dir, s->path);
    if (!dest)
        return kbi_error_oom(ctx);
    char have[65] = "";
    if (kbi_path_exists(dest) && kbi_sha256_file(NULL, dest, have, NULL) == 0 &&
        strcmp(have, s->sha256) == 0) {
        free(dest);
        return 0;
    }
    const char *base = strrchr(s->path, '/');
    base = base ? base + 1 : s->path;
    int rc = ensure_dep(ctx, deps, s->url, s->sha256, false, base, fetched);
    char *cached = rc ? NULL : kbi_asprintf("%s/%s/%s", deps, s->sha256, base);
    kb_buf data = KB_BUF_INIT;
    if (!rc)
        rc = cached ? kbi_read_file(ctx, cached, &data) : kbi_error_oom(ctx);
    char *dir = rc ? NULL : kbi_strdup(dest);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash)
        *slash = '\0';
    if (!rc)
        rc = dir ? kbi_mkdir_p(ctx, dir, 0755) : kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_write_file_atomic(ctx, dest, data.data, data.len, 0644);
    kbi_buf_free(&data);
    free(dir);
    free(cached);
    free(dest);
    return rc;
}

KB_EXTERN int kb_fetch_inputs(size_t *fetched, kb_ctx *ctx, const char *dir)
{
    if (fetched)
        *fetched = 0;
    kb_manifest *m = NULL;
    int rc = kbi_manifest_load(ctx, &m, dir, false);
    char *deps = rc ? NULL : kbi_path_join(kbi_config_str(ctx, "cache.dir"), "deps");
    if (!rc && !deps)
        rc = kbi_error_oom(ctx);
    for (size_t b = 0; !rc && b < KB_ARRAY_LEN(m->backends); b++)
        for (size_t i = 0; !rc && i < m->backends[b].source_count; i++)
            if (m->backends[b].sources[i].url)
                rc = ensure_url_source(ctx, m, &m->backends[b].sources[i], deps, fetched);
    for (size_t i = 0; !rc && i < m->dep_count; i++) {
        const kb_dependency *d = &m->deps[i];
        rc = ensure_dep(ctx, deps, d->url, d->sha256, d->archive, d->file, fetched);
        if (rc)
            kbi_error_prefix(ctx, "%s: dependency %s", m->path, d->name);
    }
    free(deps);
    kb_manifest_free(m);
    return rc;
}
