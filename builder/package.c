/* Packaging: source listing and digest, build keys, kbpkg.json, staging folders, artifacts. */
#include "builder/builder.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *kb_artifact_name(const kb_manifest *m, const char *suffix)
{
    char ver[160];
    kb_pkg_version(&m->version, ver, sizeof(ver));
    char *name = kb_strdup(m->name);
    if (!name)
        return NULL;
    char *slash = strchr(name, '/');
    if (slash)
        *slash = '-';
    char *out = kb_asprintf("%s-%s-%s.tar.zst", name, ver, suffix);
    free(name);
    return out;
}

/* Regular files under dir/rel, recursively, as package-relative paths. */
static int walk(kb_ctx *ctx, kb_strv *out, const char *root, const char *rel)
{
    char *full = kb_path_join(root, rel);
    if (!full)
        return kb_error_oom(ctx);
    struct stat st;
    int rc = 0;
    if (lstat(full, &st) != 0) {
        free(full);
        return 0; /* optional folder or file */
    }
    if (S_ISREG(st.st_mode)) {
        if (!kb_strv_contains(out, rel) && kb_strv_push(out, rel))
            rc = kb_error_oom(ctx);
    } else if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(full);
        if (!d)
            rc = kb_error_set_path(ctx, KB_ERR_IO, full, 0, 0, "cannot read %s: %s", full,
                                   strerror(errno));
        struct dirent *e;
        while (!rc && d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char *child = kb_asprintf("%s/%s", rel, e->d_name);
            rc = child ? walk(ctx, out, root, child) : kb_error_oom(ctx);
            free(child);
        }
        if (d)
            closedir(d);
    } else {
        rc = kb_error_set_path(ctx, KB_ERR_UNSAFE, full, 0, 0,
                               "%s is not a regular file or folder (symlinks are not packaged)",
                               full);
    }
    free(full);
    return rc;
}

int kb_source_files(kb_ctx *ctx, kb_strv *out, const kb_manifest *m)
{
    static const char *const tops[] = {"kernel.yaml", "include",    "src",      "tests",
                                       "LICENSE",     "LICENSE.md", "README.md"};
    int rc = 0;
    for (size_t i = 0; !rc && i < KB_ARRAY_LEN(tops); i++)
        rc = walk(ctx, out, m->dir, tops[i]);
    /* Files the manifest names outside those folders. */
    const char *named[] = {m->header, m->test, m->license_file};
    for (size_t i = 0; !rc && i < KB_ARRAY_LEN(named); i++)
        if (named[i])
            rc = walk(ctx, out, m->dir, named[i]);
    for (size_t b = 0; !rc && b < KB_ARRAY_LEN(m->backends); b++) {
        const kb_backend_spec *s = &m->backends[b];
        for (size_t i = 0; !rc && s->present && i < s->source_count; i++) {
            char *full = kb_path_join(m->dir, s->sources[i].path);
            bool have = full && kb_path_exists(full);
            if (!full)
                rc = kb_error_oom(ctx);
            else if (!have)
                rc = kb_error_set_path(ctx, KB_ERR_NOT_FOUND, full, 0, 0, "source %s is missing%s",
                                       s->sources[i].path,
                                       s->sources[i].url ? " (fetch its url first)" : "");
            else
                rc = walk(ctx, out, m->dir, s->sources[i].path);
            free(full);
        }
    }
    if (!rc)
        kb_strv_sort(out);
    return rc;
}

int kb_source_digest(kb_ctx *ctx, char hex[65], const kb_manifest *m)
{
    kb_strv files = KB_STRV_INIT;
    int rc = kb_source_files(ctx, &files, m);
    kb_sha256 *h = rc ? NULL : kb_sha256_new();
    if (!rc && !h)
        rc = kb_error_oom(ctx);
    for (size_t i = 0; !rc && i < files.len; i++) {
        char *full = kb_path_join(m->dir, files.items[i]);
        char file_hex[65];
        uint64_t size = 0;
        rc = full ? kb_sha256_file(ctx, full, file_hex, &size) : kb_error_oom(ctx);
        free(full);
        if (rc)
            break;
        char line[128];
        int n = snprintf(line, sizeof(line), "%llu", (unsigned long long)size);
        kb_sha256_update(h, files.items[i], strlen(files.items[i]) + 1);
        kb_sha256_update(h, line, (size_t)n + 1);
        kb_sha256_update(h, file_hex, 64);
        kb_sha256_update(h, "\n", 1);
    }
    if (h && !rc)
        kb_sha256_finish(h, hex);
    else if (h)
        kb_sha256_free(h);
    kb_strv_free(&files);
    return rc;
}

void kb_build_key(char hex[65], const char *source_digest, const char *target,
                  const char *toolchain_id, const kb_strv *flags)
{
    kb_sha256 *h = kb_sha256_new();
    if (!h) {
        hex[0] = '\0';
        return;
    }
    const char *parts[][2] = {{"source:", source_digest},
                              {"\ntarget:", target},
                              {"\ntoolchain:", toolchain_id},
                              {"\nflags:", ""}};
    for (size_t i = 0; i < KB_ARRAY_LEN(parts); i++) {
        kb_sha256_update(h, parts[i][0], strlen(parts[i][0]));
        kb_sha256_update(h, parts[i][1], strlen(parts[i][1]));
    }
    for (size_t i = 0; flags && i < flags->len; i++) {
        kb_sha256_update(h, i ? " " : "", i ? 1 : 0);
        kb_sha256_update(h, flags->items[i], strlen(flags->items[i]));
    }
    kb_sha256_update(h, "\n", 1);
    kb_sha256_finish(h, hex);
}

int kb_target_build_key(char hex[65], kb_strv *flags_out, const kb_manifest *m,
                        const kb_plan_item *item, const char *source_digest)
{
    kb_strv flags = KB_STRV_INIT;
    if (kb_compile_flags(m, item, &flags)) {
        kb_strv_free(&flags);
        return KB_ERR_NOMEM;
    }
    kb_build_key(hex, source_digest, item->target, item->tc->id, &flags);
    if (flags_out)
        *flags_out = flags;
    else
        kb_strv_free(&flags);
    return hex[0] ? 0 : KB_ERR_NOMEM;
}

static int copy_file(kb_ctx *ctx, const char *from, const char *to, unsigned mode)
{
    kb_buf data = KB_BUF_INIT;
    int rc = kb_read_file(ctx, from, &data);
    if (!rc) {
        char *dir = kb_strdup(to);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash)
            *slash = '\0';
        rc = dir ? kb_mkdir_p(ctx, dir, 0755) : kb_error_oom(ctx);
        free(dir);
    }
    if (!rc)
        rc = kb_write_file_atomic(ctx, to, data.data, data.len, mode);
    kb_buf_free(&data);
    return rc;
}

static json_t *strv_json(const kb_strv *v)
{
    json_t *a = json_array();
    for (size_t i = 0; a && v && i < v->len; i++)
        json_array_append_new(a, json_string(v->items[i]));
    return a;
}

int kb_write_kbpkg_json(kb_ctx *ctx, const char *path, const kb_pkg_meta *meta)
{
    const kb_manifest *m = meta->manifest;
    char ver[160];
    kb_pkg_version(&m->version, ver, sizeof(ver));
    json_t *root =
        json_pack("{s:s, s:s, s:s, s:i, s:o, s:{s:s, s:s}, s:o, s:s, s:s, s:s?, s:s?}", "name",
                  m->name, "version", ver, "target", meta->target, "abi", (int)m->abi, "exports",
                  strv_json(&m->exports), "toolchain", "name", meta->toolchain->name, "version",
                  meta->toolchain->version, "flags", strv_json(meta->flags), "source_digest",
                  meta->source_digest, "build_key", meta->build_key, "glibc", meta->glibc,
                  "glibcxx", meta->glibcxx);
    if (!root)
        return kb_error_set(ctx, KB_ERR_GENERIC, "cannot build kbpkg.json for %s", meta->target);
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (!text)
        return kb_error_oom(ctx);
    kb_buf b = KB_BUF_INIT;
    int rc = kb_buf_printf(&b, "%s\n", text) ? kb_error_oom(ctx) : 0;
    free(text);
    if (!rc)
        rc = kb_write_file_atomic(ctx, path, b.data, b.len, 0644);
    kb_buf_free(&b);
    return rc;
}

/* include/<header>: the manifest's header keeps its place when it is under include/. */
static char *header_member(const char *header)
{
    if (kb_str_starts(header, "include/"))
        return kb_strdup(header);
    const char *base = strrchr(header, '/');
    return kb_asprintf("include/%s", base ? base + 1 : header);
}

int kb_stage_artifact(kb_ctx *ctx, const char *staging, const kb_pkg_meta *meta,
                      const char *lib_path)
{
    const kb_manifest *m = meta->manifest;
    char lib[128];
    kb_lib_name(m->name, lib, sizeof(lib));
    char *lib_dst = kb_asprintf("%s/lib/lib%s.so", staging, lib);
    char *json = kb_path_join(staging, "kbpkg.json");
    int rc = (!lib_dst || !json) ? kb_error_oom(ctx) : 0;
    if (!rc)
        rc = copy_file(ctx, lib_path, lib_dst, 0755);
    if (!rc && m->header) {
        char *member = header_member(m->header);
        char *from = kb_path_join(m->dir, m->header);
        char *to = member ? kb_path_join(staging, member) : NULL;
        rc = (from && to) ? copy_file(ctx, from, to, 0644) : kb_error_oom(ctx);
        free(member);
        free(from);
        free(to);
    }
    if (!rc) { /* the package header includes <kbpkg/kernel_abi.h>: a consumer needs it too */
        char *include_root = kb_path_join(staging, "include");
        rc = include_root ? kb_abi_header_write(ctx, include_root) : kb_error_oom(ctx);
        free(include_root);
    }
    if (!rc) {
        const char *lic = m->license_file ? m->license_file : "LICENSE";
        char *from = kb_path_join(m->dir, lic);
        char *to = kb_path_join(staging, "LICENSE");
        if (!from || !to)
            rc = kb_error_oom(ctx);
        else if (kb_path_exists(from))
            rc = copy_file(ctx, from, to, 0644);
        free(from);
        free(to);
    }
    if (!rc)
        rc = kb_write_kbpkg_json(ctx, json, meta);
    free(lib_dst);
    free(json);
    return rc;
}

int kb_write_source_artifact(kb_ctx *ctx, char **out_path, char hex[65], uint64_t *size,
                             const kb_manifest *m, const char *out_dir, int64_t epoch)
{
    *out_path = NULL;
    kb_strv files = KB_STRV_INIT;
    int rc = kb_source_files(ctx, &files, m);
    kb_archive_member *members = rc ? NULL : calloc(files.len + 1, sizeof(*members));
    char **paths = members ? calloc(files.len + 1, sizeof(*paths)) : NULL;
    if (!rc && (!members || !paths))
        rc = kb_error_oom(ctx);
    for (size_t i = 0; !rc && i < files.len; i++) {
        paths[i] = kb_path_join(m->dir, files.items[i]);
        members[i].archive_path = files.items[i];
        members[i].file_path = paths[i];
        if (!paths[i])
            rc = kb_error_oom(ctx);
    }
    char *name = rc ? NULL : kb_artifact_name(m, "source");
    char *path = name ? kb_path_join(out_dir, name) : NULL;
    if (!rc && !path)
        rc = kb_error_oom(ctx);
    kb_archive_result res;
    if (!rc)
        rc = kb_archive_write_members(&res, ctx, path, members, files.len, epoch);
    if (!rc) {
        memcpy(hex, res.sha256, 65);
        *size = res.size;
        *out_path = path;
        path = NULL;
    }
    for (size_t i = 0; paths && i < files.len; i++)
        free(paths[i]);
    free(paths);
    free(members);
    free(name);
    free(path);
    kb_strv_free(&files);
    return rc;
}
