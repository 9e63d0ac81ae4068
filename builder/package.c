/* Packaging: source listing and digest, build keys, kbpkg.json, staging folders, artifacts. */
#include "builder/builder.h"
#include "archive/extract.h"
#include "manifests/manifest_check.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *kbi_artifact_name(const kb_manifest *m, const char *suffix)
{
    char ver[160];
    kbi_pkg_version(&m->version, ver, sizeof(ver));
    char *name = kbi_strdup(m->name);
    if (!name)
        return NULL;
    char *slash = strchr(name, '/');
    if (slash)
        *slash = '-';
    char *out = kbi_asprintf("%s-%s-%s.tar.zst", name, ver, suffix);
    free(name);
    return out;
}

/* Every folder on the way to rel (not rel itself, which walk lstats) must be a real folder of
 * the package: a symlinked one ("link/secret.txt" with link -> /elsewhere) would pack files from
 * outside it. */
static int check_components(kb_ctx *ctx, const char *root, const char *rel)
{
    int rc = 0;
    for (const char *s = strchr(rel, '/'); !rc && s; s = strchr(s + 1, '/')) {
        char *prefix = kbi_strndup(rel, (size_t)(s - rel));
        char *full = prefix ? kbi_path_join(root, prefix) : NULL;
        struct stat st;
        if (!full)
            rc = kbi_error_oom(ctx);
        else if (lstat(full, &st) == 0 && !S_ISDIR(st.st_mode))
            rc = kbi_error_set_path(ctx, KB_ERR_UNSAFE, full, 0, 0,
                                    "%s is %s, not a folder of the package: %s is not packaged "
                                    "through it",
                                    full, S_ISLNK(st.st_mode) ? "a symlink" : "not a folder", rel);
        free(full);
        free(prefix);
    }
    return rc;
}

/* Regular files under dir/rel, recursively, as package-relative paths. */
static int walk(kb_ctx *ctx, kb_strv *out, const char *root, const char *rel)
{
    int rc = check_components(ctx, root, rel);
    if (rc)
        return rc;
    char *full = kbi_path_join(root, rel);
    if (!full)
        return kbi_error_oom(ctx);
    struct stat st;
    if (lstat(full, &st) != 0) {
        free(full);
        return 0; /* optional folder or file */
    }
    if (S_ISREG(st.st_mode)) {
        if (!kbi_strv_contains(out, rel) && kbi_strv_push(out, rel))
            rc = kbi_error_oom(ctx);
    } else if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(full);
        if (!d)
            rc = kbi_error_set_path(ctx, KB_ERR_IO, full, 0, 0, "cannot read %s: %s", full,
                                    strerror(errno));
        struct dirent *e;
        while (!rc && d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char *child = kbi_asprintf("%s/%s", rel, e->d_name);
            rc = child ? walk(ctx, out, root, child) : kbi_error_oom(ctx);
            free(child);
        }
        if (d)
            closedir(d);
    } else {
        rc = kbi_error_set_path(ctx, KB_ERR_UNSAFE, full, 0, 0,
                                "%s is not a regular file or folder (symlinks are not packaged)",
                                full);
    }
    free(full);
    return rc;
}

/* "third_party/x*.h" gives "third_party": the folder before the first segment with a glob. */
static char *glob_base(const char *pattern)
{
    size_t first = strcspn(pattern, "*?[");
    const char *slash = NULL;
    for (const char *p = pattern; p < pattern + first; p++)
        if (*p == '/')
            slash = p;
    return slash ? kbi_strndup(pattern, (size_t)(slash - pattern)) : kbi_strdup(".");
}

/* files: a path (file or folder) or a glob over package-relative paths ('*' stays within one
 * folder). One that takes nothing is an error: the source artifact would silently lack it. */
static int add_file_pattern(kb_ctx *ctx, kb_strv *out, const kb_manifest *m, const char *pattern)
{
    bool glob = pattern[strcspn(pattern, "*?[")] != '\0';
    size_t before = out->len;
    int rc = 0;
    if (!glob) {
        rc = walk(ctx, out, m->dir, pattern);
        char *full = kbi_path_join(m->dir, pattern);
        bool there = full && kbi_path_exists(full);
        free(full);
        if (!rc && !there)
            rc = kbi_error_set_path(ctx, KB_ERR_MANIFEST, m->path, 0, 0,
                                    "%s: files: '%s' does not exist in %s", m->path, pattern,
                                    m->dir);
        return rc;
    }
    char *base = glob_base(pattern);
    kb_strv all = KB_STRV_INIT;
    rc = base ? walk(ctx, &all, m->dir, base) : kbi_error_oom(ctx);
    for (size_t i = 0; !rc && i < all.len; i++) {
        const char *rel = kbi_str_starts(all.items[i], "./") ? all.items[i] + 2 : all.items[i];
        if (fnmatch(pattern, rel, FNM_PATHNAME | FNM_PERIOD) == 0 && !kbi_strv_contains(out, rel) &&
            kbi_strv_push(out, rel))
            rc = kbi_error_oom(ctx);
    }
    if (!rc && out->len == before)
        rc = kbi_error_set_path(ctx, KB_ERR_MANIFEST, m->path, 0, 0,
                                "%s: files: '%s' matches no file in %s", m->path, pattern, m->dir);
    kbi_strv_free(&all);
    free(base);
    return rc;
}

/* Every file must fit the layout an install accepts: refused here, naming the manifest, rather
 * than published and refused by every install ("not part of the allowed layout"). */
static int check_layout(kb_ctx *ctx, const kb_manifest *m, const kb_strv *files)
{
    for (size_t i = 0; i < files->len; i++) {
        if (kbi_extract_layout_allows(kbi_extract_source_layout, files->items[i]))
            continue;
        kb_buf allowed = KB_BUF_INIT;
        for (size_t j = 0; kbi_extract_source_layout[j]; j++)
            if (strcmp(kbi_extract_source_layout[j], "kbpkg.json") != 0)
                kbi_buf_printf(&allowed, "%s%s", allowed.len ? ", " : "",
                               kbi_extract_source_layout[j]);
        int rc = kbi_error_set_path(ctx, KB_ERR_MANIFEST, m->path, 0, 0,
                                    "%s names %s, outside the layout a source artifact may hold "
                                    "(%s): installs would refuse it; move it under src/, include/ "
                                    "or third_party/",
                                    m->path, files->items[i], allowed.data ? allowed.data : "");
        kbi_buf_free(&allowed);
        return rc;
    }
    return 0;
}

static int add_backend_sources(kb_ctx *ctx, kb_strv *out, const kb_manifest *m,
                               const kb_backend_spec *s)
{
    int rc = 0;
    for (size_t i = 0; !rc && s->present && i < s->source_count; i++) {
        char *full = kbi_path_join(m->dir, s->sources[i].path);
        bool have = full && kbi_path_exists(full);
        if (!full)
            rc = kbi_error_oom(ctx);
        else if (!have)
            rc = kbi_error_set_path(ctx, KB_ERR_NOT_FOUND, full, 0, 0, "source %s is missing%s",
                                    s->sources[i].path,
                                    s->sources[i].url ? " (run `kbpkg fetch` in the package "
                                                        "folder: it downloads url sources)"
                                                      : "");
        else
            rc = walk(ctx, out, m->dir, s->sources[i].path);
        free(full);
    }
    for (size_t i = 0; !rc && s->present && i < s->includes.len; i++)
        rc = walk(ctx, out, m->dir, s->includes.items[i]);
    return rc;
}

int kbi_source_files(kb_ctx *ctx, kb_strv *out, const kb_manifest *m)
{
    static const char *const tops[] = {"kernel.yaml", "include",    "src",      "tests",
                                       "LICENSE",     "LICENSE.md", "README.md"};
    int rc = 0;
    for (size_t i = 0; !rc && i < KB_ARRAY_LEN(tops); i++)
        rc = walk(ctx, out, m->dir, tops[i]);
    /* Files the manifest names outside those folders. */
    const char *named[] = {m->header, m->test, m->bench, m->license_file};
    for (size_t i = 0; !rc && i < KB_ARRAY_LEN(named); i++)
        if (named[i])
            rc = walk(ctx, out, m->dir, named[i]);
    for (size_t i = 0; !rc && i < m->includes.len; i++)
        rc = walk(ctx, out, m->dir, m->includes.items[i]);
    for (size_t i = 0; !rc && i < m->files.len; i++)
        rc = add_file_pattern(ctx, out, m, m->files.items[i]);
    for (size_t b = 0; !rc && b < KB_ARRAY_LEN(m->backends); b++)
        rc = add_backend_sources(ctx, out, m, &m->backends[b]);
    if (!rc)
        kbi_strv_sort(out);
    if (!rc)
        rc = check_layout(ctx, m, out);
    return rc;
}

/* Files that no build or package test reads: an edit to them must not rebuild any target. */
static bool read_by_no_build(const char *rel)
{
    return kbi_str_starts(rel, "README");
}

static int digest_files(kb_ctx *ctx, char hex[65], const kb_manifest *m, bool build_inputs)
{
    kb_strv files = KB_STRV_INIT;
    int rc = kbi_source_files(ctx, &files, m);
    kb_sha256 *h = rc ? NULL : kbi_sha256_new();
    if (!rc && !h)
        rc = kbi_error_oom(ctx);
    for (size_t i = 0; !rc && i < files.len; i++) {
        if (build_inputs && read_by_no_build(files.items[i]))
            continue;
        char *full = kbi_path_join(m->dir, files.items[i]);
        char file_hex[65];
        uint64_t size = 0;
        rc = full ? kbi_sha256_file(ctx, full, file_hex, &size) : kbi_error_oom(ctx);
        free(full);
        if (rc)
            break;
        char line[128];
        int n = snprintf(line, sizeof(line), "%llu", (unsigned long long)size);
        kbi_sha256_update(h, files.items[i], strlen(files.items[i]) + 1);
        kbi_sha256_update(h, line, (size_t)n + 1);
        kbi_sha256_update(h, file_hex, 64);
        kbi_sha256_update(h, "\n", 1);
    }
    if (h && !rc)
        kbi_sha256_finish(h, hex);
    else if (h)
        kbi_sha256_free(h);
    kbi_strv_free(&files);
    return rc;
}

int kbi_source_digest(kb_ctx *ctx, char hex[65], const kb_manifest *m)
{
    return digest_files(ctx, hex, m, false);
}

int kbi_build_inputs_digest(kb_ctx *ctx, char hex[65], const kb_manifest *m)
{
    return digest_files(ctx, hex, m, true);
}

void kbi_build_key(char hex[65], const char *source_digest, const char *target,
                   const char *toolchain_id, const kb_strv *flags)
{
    kb_sha256 *h = kbi_sha256_new();
    if (!h) {
        hex[0] = '\0';
        return;
    }
    const char *parts[][2] = {{"source:", source_digest},
                              {"\ntarget:", target},
                              {"\ntoolchain:", toolchain_id},
                              {"\nflags:", ""}};
    for (size_t i = 0; i < KB_ARRAY_LEN(parts); i++) {
        kbi_sha256_update(h, parts[i][0], strlen(parts[i][0]));
        kbi_sha256_update(h, parts[i][1], strlen(parts[i][1]));
    }
    for (size_t i = 0; flags && i < flags->len; i++) {
        kbi_sha256_update(h, i ? " " : "", i ? 1 : 0);
        kbi_sha256_update(h, flags->items[i], strlen(flags->items[i]));
    }
    kbi_sha256_update(h, "\n", 1);
    kbi_sha256_finish(h, hex);
}

int kbi_target_build_key(char hex[65], kb_strv *flags_out, const kb_manifest *m,
                         const kb_plan_item *item, const char *source_digest)
{
    kb_strv flags = KB_STRV_INIT;
    if (kbi_compile_flags(m, item, &flags)) {
        kbi_strv_free(&flags);
        return KB_ERR_NOMEM;
    }
    kbi_build_key(hex, source_digest, item->target, item->tc->id, &flags);
    if (flags_out)
        *flags_out = flags;
    else
        kbi_strv_free(&flags);
    return hex[0] ? 0 : KB_ERR_NOMEM;
}

static int copy_file(kb_ctx *ctx, const char *from, const char *to, unsigned mode)
{
    kb_buf data = KB_BUF_INIT;
    int rc = kbi_read_file(ctx, from, &data);
    if (!rc) {
        char *dir = kbi_strdup(to);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash)
            *slash = '\0';
        rc = dir ? kbi_mkdir_p(ctx, dir, 0755) : kbi_error_oom(ctx);
        free(dir);
    }
    if (!rc)
        rc = kbi_write_file_atomic(ctx, to, data.data, data.len, mode);
    kbi_buf_free(&data);
    return rc;
}

static json_t *strv_json(const kb_strv *v)
{
    json_t *a = json_array();
    for (size_t i = 0; a && v && i < v->len; i++)
        json_array_append_new(a, json_string(v->items[i]));
    return a;
}

/* {"export": {returns, args}} for the typed ones among the exports this artifact lists;
 * NULL (no member) when none is typed, so untyped packages' kbpkg.json stays as it was. */
static json_t *signatures_json(const kb_manifest *m)
{
    json_t *sigs = json_object();
    for (size_t i = 0; sigs && i < m->exports.len; i++)
        if (m->export_sigs[i].returns)
            json_object_set_new(sigs, m->exports.items[i], kbi_export_sig_json(&m->export_sigs[i]));
    if (sigs && json_object_size(sigs) == 0) {
        json_decref(sigs);
        return NULL;
    }
    return sigs;
}

int kbi_write_kbpkg_json(kb_ctx *ctx, const char *path, const kb_pkg_meta *meta)
{
    const kb_manifest *m = meta->manifest;
    char ver[160];
    kbi_pkg_version(&m->version, ver, sizeof(ver));
    kb_strv exports = KB_STRV_INIT;
    if (kbi_manifest_backend_exports(m, meta->backend, &exports)) {
        kbi_strv_free(&exports);
        return kbi_error_oom(ctx);
    }
    json_t *root = json_pack(
        "{s:s, s:s, s:s, s:i, s:o, s:{s:s, s:s}, s:o, s:s, s:s, s:s?, s:s?}", "name", m->name,
        "version", ver, "target", meta->target, "abi", (int)m->abi, "exports", strv_json(&exports),
        "toolchain", "name", meta->toolchain->name, "version", meta->toolchain->version, "flags",
        strv_json(meta->flags), "source_digest", meta->source_digest, "build_key", meta->build_key,
        "glibc", meta->glibc, "glibcxx", meta->glibcxx);
    kbi_strv_free(&exports);
    if (!root)
        return kbi_error_set(ctx, KB_ERR_GENERIC, "cannot build kbpkg.json for %s", meta->target);
    json_t *sigs = signatures_json(m);
    if (sigs)
        json_object_set_new(root, "signatures", sigs);
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (!text)
        return kbi_error_oom(ctx);
    kb_buf b = KB_BUF_INIT;
    int rc = kbi_buf_printf(&b, "%s\n", text) ? kbi_error_oom(ctx) : 0;
    free(text);
    if (!rc)
        rc = kbi_write_file_atomic(ctx, path, b.data, b.len, 0644);
    kbi_buf_free(&b);
    return rc;
}

/* include/<header>: the manifest's header keeps its place when it is under include/. */
static char *header_member(const char *header)
{
    if (kbi_str_starts(header, "include/"))
        return kbi_strdup(header);
    const char *base = strrchr(header, '/');
    return kbi_asprintf("include/%s", base ? base + 1 : header);
}

/* The quoted includes of a header: #include "x.h" (angle brackets are the system's). */
static int quoted_includes(kb_ctx *ctx, const char *path, kb_strv *out)
{
    kb_buf text = KB_BUF_INIT;
    int rc = kbi_read_file(ctx, path, &text);
    for (const char *p = text.data; !rc && p && *p;) {
        size_t len = strcspn(p, "\n");
        const char *q = p;
        while (q < p + len && (*q == ' ' || *q == '\t'))
            q++;
        if (q < p + len && *q == '#') {
            q++;
            while (q < p + len && (*q == ' ' || *q == '\t'))
                q++;
            if ((size_t)(p + len - q) > 8 && strncmp(q, "include", 7) == 0) {
                const char *open = memchr(q + 7, '"', (size_t)(p + len - q - 7));
                const char *close =
                    open ? memchr(open + 1, '"', (size_t)(p + len - open - 1)) : NULL;
                if (close &&
                    kbi_strv_push_owned(out, kbi_strndup(open + 1, (size_t)(close - open - 1))))
                    rc = kbi_error_oom(ctx);
            }
        }
        p += len + (p[len] == '\n');
    }
    kbi_buf_free(&text);
    return rc;
}

/* Where a quoted include of `from` (package-relative) resolves inside the package: beside it,
 * then include/, then the include folders; NULL when nowhere. */
static char *resolve_include(const kb_manifest *m, const char *from, const char *name)
{
    kb_strv dirs = KB_STRV_INIT;
    const char *slash = strrchr(from, '/');
    kbi_strv_push_owned(&dirs, slash ? kbi_strndup(from, (size_t)(slash - from)) : kbi_strdup("."));
    kbi_strv_push(&dirs, "include");
    for (size_t i = 0; i < m->includes.len; i++)
        kbi_strv_push(&dirs, m->includes.items[i]);
    char *found = NULL;
    for (size_t i = 0; i < dirs.len && !found; i++) {
        char *rel = strcmp(dirs.items[i], ".") == 0 ? kbi_strdup(name)
                                                    : kbi_asprintf("%s/%s", dirs.items[i], name);
        char *full = rel && kbi_package_path_ok(rel) ? kbi_path_join(m->dir, rel) : NULL;
        if (full && kbi_path_exists(full) && !kbi_is_dir(full))
            found = rel;
        else
            free(rel);
        free(full);
    }
    kbi_strv_free(&dirs);
    return found;
}

/* The public header and every package header it includes with quotes (the kernel ABI header
 * first among them): a consumer compiles against the installed include/ alone. A quoted
 * include the package does not hold is an error here, not in every consumer's build. */
static int header_closure(kb_ctx *ctx, const kb_manifest *m, kb_strv *out)
{
    int rc = kbi_strv_push(out, m->header) ? kbi_error_oom(ctx) : 0;
    for (size_t i = 0; !rc && i < out->len; i++) {
        char *full = kbi_path_join(m->dir, out->items[i]);
        kb_strv inc = KB_STRV_INIT;
        rc = full ? quoted_includes(ctx, full, &inc) : kbi_error_oom(ctx);
        for (size_t j = 0; !rc && j < inc.len; j++) {
            char *rel = resolve_include(m, out->items[i], inc.items[j]);
            if (!rel)
                rc = kbi_error_set_path(ctx, KB_ERR_BUILD, full, 0, 0,
                                        "%s includes \"%s\", which the package does not hold: a "
                                        "consumer of the installed header could not compile it "
                                        "(add it under include/)",
                                        out->items[i], inc.items[j]);
            else if (kbi_strv_contains(out, rel))
                free(rel);
            else if (kbi_strv_push_owned(out, rel))
                rc = kbi_error_oom(ctx);
        }
        kbi_strv_free(&inc);
        free(full);
    }
    return rc;
}

static int stage_headers(kb_ctx *ctx, const char *staging, const kb_manifest *m)
{
    kb_strv headers = KB_STRV_INIT;
    int rc = header_closure(ctx, m, &headers);
    for (size_t i = 0; !rc && i < headers.len; i++) {
        char *member = header_member(headers.items[i]);
        char *from = kbi_path_join(m->dir, headers.items[i]);
        char *to = member ? kbi_path_join(staging, member) : NULL;
        rc = (from && to) ? copy_file(ctx, from, to, 0644) : kbi_error_oom(ctx);
        free(member);
        free(from);
        free(to);
    }
    kbi_strv_free(&headers);
    return rc;
}

int kbi_stage_artifact(kb_ctx *ctx, const char *staging, const kb_pkg_meta *meta,
                       const char *lib_path)
{
    const kb_manifest *m = meta->manifest;
    char lib[128];
    kbi_lib_name(m->name, lib, sizeof(lib));
    char *lib_dst = kbi_asprintf("%s/lib/lib%s.so", staging, lib);
    char *json = kbi_path_join(staging, "kbpkg.json");
    int rc = (!lib_dst || !json) ? kbi_error_oom(ctx) : 0;
    if (!rc)
        rc = copy_file(ctx, lib_path, lib_dst, 0755);
    if (!rc && m->header)
        rc = stage_headers(ctx, staging, m);
    if (!rc) { /* the package header includes <kbpkg/kernel_abi.h>: a consumer needs it too */
        char *include_root = kbi_path_join(staging, "include");
        rc = include_root ? kbi_abi_header_write(ctx, include_root) : kbi_error_oom(ctx);
        free(include_root);
    }
    if (!rc) {
        const char *lic = m->license_file ? m->license_file : "LICENSE";
        char *from = kbi_path_join(m->dir, lic);
        char *to = kbi_path_join(staging, "LICENSE");
        if (!from || !to)
            rc = kbi_error_oom(ctx);
        else if (kbi_path_exists(from))
            rc = copy_file(ctx, from, to, 0644);
        free(from);
        free(to);
    }
    if (!rc)
        rc = kbi_write_kbpkg_json(ctx, json, meta);
    free(lib_dst);
    free(json);
    return rc;
}

/* ---- the compiler's dependency lists against the source artifact ---- */

/* The paths of a make rule "obj: a.h b\ c.h \\\n d.h" (the target left out). */
static int parse_dep_file(kb_ctx *ctx, const char *text, kb_strv *out)
{
    const char *p = strchr(text, ':');
    /* "C:" never occurs on Linux; the first ": " ends the target. */
    while (p && p[1] != ' ' && p[1] != '\n' && p[1] != '\\' && p[1] != '\0')
        p = strchr(p + 1, ':');
    if (!p)
        return 0;
    p++;
    kb_buf tok = KB_BUF_INIT;
    int rc = 0;
    for (;; p++) {
        if (*p == '\\' && p[1] == '\n') {
            p++;
            continue;
        }
        if (*p == '\\' && p[1] == ' ') {
            kbi_buf_append(&tok, " ", 1);
            p++;
            continue;
        }
        if (*p == '\0' || *p == ' ' || *p == '\t' || *p == '\n') {
            if (tok.len && kbi_strv_push(out, tok.data))
                rc = kbi_error_oom(ctx);
            kbi_buf_reset(&tok);
            /* a second rule (from -MP, or nvcc's) ends the first */
            if (*p == '\0' || (*p == '\n' && p[1] != ' ' && p[1] != '\t'))
                break;
            continue;
        }
        kbi_buf_append(&tok, p, 1);
    }
    kbi_buf_free(&tok);
    return rc;
}

/* dep, as the compiler wrote it (relative to the package folder or absolute), checked: inside
 * the package it must be a source artifact file; beside the package (a sibling folder, which
 * a checkout has and the artifact does not) it is an error; elsewhere it is the system's. */
static int check_one_dependency(kb_ctx *ctx, const kb_manifest *m, const char *pkg_abs,
                                const char *parent_abs, const char *deps_abs, const char *work_abs,
                                const kb_strv *files, const char *obj, const char *dep)
{
    char *joined = dep[0] == '/' ? kbi_strdup(dep) : kbi_path_join(pkg_abs, dep);
    char *real = joined ? realpath(joined, NULL) : NULL;
    free(joined);
    if (!real)
        return 0; /* generated or gone: nothing the artifact could carry */
    size_t dn = deps_abs ? strlen(deps_abs) : 0, wn = work_abs ? strlen(work_abs) : 0;
    if ((dn && strncmp(real, deps_abs, dn) == 0 && real[dn] == '/') ||
        (wn && strncmp(real, work_abs, wn) == 0 && real[wn] == '/')) {
        free(real);
        return 0; /* a declared dependency (fetched by digest), or the build's own kernel ABI
                     header */
    }
    size_t n = strlen(pkg_abs), pn = strlen(parent_abs);
    int rc = 0;
    if (strncmp(real, pkg_abs, n) == 0 && real[n] == '/') {
        if (!kbi_strv_contains(files, real + n + 1))
            rc = kbi_error_set_path(ctx, KB_ERR_MANIFEST, m->path, 0, 0,
                                    "%s reads %s, which the source artifact leaves out: a build "
                                    "from the published source would fail (move it under "
                                    "include/ or src/, or list it in files:)",
                                    obj, real + n + 1);
    } else if (pn > 1 && strncmp(real, parent_abs, pn) == 0 && real[pn] == '/') {
        rc = kbi_error_set_path(ctx, KB_ERR_MANIFEST, m->path, 0, 0,
                                "%s reads %s, outside the package folder: the source artifact "
                                "cannot carry it (vendor it under third_party/ or declare it in "
                                "dependencies:)",
                                obj, real);
    }
    free(real);
    return rc;
}

int kbi_check_dependency_lists(kb_ctx *ctx, const kb_manifest *m, const char *work_dir,
                               const char *deps_root)
{
    char *deps_abs = deps_root ? realpath(deps_root, NULL) : NULL;
    char *work_abs = realpath(work_dir, NULL);
    char *pkg_abs = realpath(m->dir, NULL);
    if (!pkg_abs) {
        free(deps_abs);
        free(work_abs);
        return kbi_error_set_path(ctx, KB_ERR_IO, m->dir, 0, 0, "cannot resolve %s", m->dir);
    }
    char *parent = kbi_strdup(pkg_abs);
    char *slash = parent ? strrchr(parent, '/') : NULL;
    if (slash)
        *slash = '\0';
    kb_strv files = KB_STRV_INIT;
    int rc = parent ? kbi_source_files(ctx, &files, m) : kbi_error_oom(ctx);
    char *objdir = rc ? NULL : kbi_path_join(work_dir, "obj");
    DIR *d = objdir ? opendir(objdir) : NULL;
    struct dirent *e;
    while (!rc && d && (e = readdir(d))) {
        if (!kbi_str_ends(e->d_name, ".o.d"))
            continue;
        char *path = kbi_path_join(objdir, e->d_name);
        kb_buf text = KB_BUF_INIT;
        kb_strv deps = KB_STRV_INIT;
        rc = path ? kbi_read_file(ctx, path, &text) : kbi_error_oom(ctx);
        if (!rc && text.data)
            rc = parse_dep_file(ctx, text.data, &deps);
        /* "03-ln.cu.o.d" -> "ln.cu", the source the message names */
        char *src = kbi_strndup(e->d_name + 3, strlen(e->d_name) - 3 - 4);
        for (size_t i = 0; !rc && i < deps.len; i++)
            rc = check_one_dependency(ctx, m, pkg_abs, parent ? parent : "", deps_abs, work_abs,
                                      &files, src ? src : e->d_name, deps.items[i]);
        free(src);
        kbi_strv_free(&deps);
        kbi_buf_free(&text);
        free(path);
    }
    if (d)
        closedir(d);
    free(objdir);
    kbi_strv_free(&files);
    free(parent);
    free(pkg_abs);
    free(deps_abs);
    free(work_abs);
    return rc;
}

/* What decides the source artifact's bytes: the listing digest, the epoch, the writer, and the
 * exec bits (the archive records modes; the digest does not). */
static int source_artifact_key(kb_ctx *ctx, char hex[65], const kb_manifest *m,
                               const kb_strv *files, const char *source_digest, int64_t epoch)
{
    kb_sha256 *h = kbi_sha256_new();
    if (!h)
        return kbi_error_oom(ctx);
    char head[256];
    int n =
        snprintf(head, sizeof(head), "source:%s\nepoch:%lld\nwriter:%d %d %u\nexec:", source_digest,
                 (long long)epoch, KB_ARCHIVE_ZSTD_LEVEL, KB_ARCHIVE_ZSTD_LEVEL_LARGE,
                 KB_ARCHIVE_ZSTD_SMALL);
    kbi_sha256_update(h, head, (size_t)n);
    for (size_t i = 0; i < files->len; i++) {
        char *full = kbi_path_join(m->dir, files->items[i]);
        struct stat st;
        if (!full || stat(full, &st) != 0) {
            free(full);
            kbi_sha256_free(h);
            return full ? kbi_error_set_path(ctx, KB_ERR_IO, files->items[i], 0, 0,
                                             "cannot stat %s", files->items[i])
                        : kbi_error_oom(ctx);
        }
        free(full);
        kbi_sha256_update(h, (st.st_mode & 0111) ? "x" : "-", 1);
    }
    kbi_sha256_finish(h, hex);
    return 0;
}

/* The sidecar "<artifact>.key" holds "<key> <sha256> <size>\n" of the artifact written for key. */
static char *sidecar_path(const char *artifact)
{
    return kbi_asprintf("%s.key", artifact);
}

/* The artifact at path was written for key and is still those bytes: reuse it. */
static bool source_artifact_current(kb_ctx *ctx, const char *path, const char *key, char hex[65],
                                    uint64_t *size)
{
    char *side = sidecar_path(path);
    kb_buf b = KB_BUF_INIT;
    char want_key[65], want_hex[65];
    unsigned long long want_size = 0;
    bool ok = side && kbi_path_exists(side) && kbi_read_file(ctx, side, &b) == 0 && b.data &&
              sscanf(b.data, "%64s %64s %llu", want_key, want_hex, &want_size) == 3 &&
              strcmp(want_key, key) == 0 && kbi_sha256_file(ctx, path, hex, size) == 0 &&
              strcmp(hex, want_hex) == 0 && *size == want_size;
    if (!ok)
        kb_ctx_clear_error(ctx); /* a missing or stale artifact is rewritten, not an error */
    kbi_buf_free(&b);
    free(side);
    return ok;
}

static int write_sidecar(kb_ctx *ctx, const char *path, const char *key, const char *hex,
                         uint64_t size)
{
    char *side = sidecar_path(path);
    char *text = kbi_asprintf("%s %s %llu\n", key, hex, (unsigned long long)size);
    int rc = side && text ? kbi_write_file_atomic(ctx, side, text, strlen(text), 0644)
                          : kbi_error_oom(ctx);
    free(side);
    free(text);
    return rc;
}

int kbi_write_source_artifact(kb_ctx *ctx, char **out_path, char hex[65], uint64_t *size,
                              const kb_manifest *m, const char *out_dir, const char *source_digest,
                              int64_t epoch)
{
    *out_path = NULL;
    kb_strv files = KB_STRV_INIT;
    int rc = kbi_source_files(ctx, &files, m);
    char key[65];
    if (!rc)
        rc = source_artifact_key(ctx, key, m, &files, source_digest, epoch);
    char *name = rc ? NULL : kbi_artifact_name(m, "source");
    char *path = name ? kbi_path_join(out_dir, name) : NULL;
    if (!rc && !path)
        rc = kbi_error_oom(ctx);
    if (!rc && source_artifact_current(ctx, path, key, hex, size)) {
        *out_path = path;
        free(name);
        kbi_strv_free(&files);
        return 0;
    }
    kb_archive_member *members = rc ? NULL : calloc(files.len + 1, sizeof(*members));
    char **paths = members ? calloc(files.len + 1, sizeof(*paths)) : NULL;
    if (!rc && (!members || !paths))
        rc = kbi_error_oom(ctx);
    for (size_t i = 0; !rc && i < files.len; i++) {
        paths[i] = kbi_path_join(m->dir, files.items[i]);
        members[i].archive_path = files.items[i];
        members[i].file_path = paths[i];
        if (!paths[i])
            rc = kbi_error_oom(ctx);
    }
    kb_archive_result res;
    if (!rc)
        rc = kbi_archive_write_members(&res, ctx, path, members, files.len, epoch);
    if (!rc)
        rc = write_sidecar(ctx, path, key, res.sha256, res.size);
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
    kbi_strv_free(&files);
    return rc;
}
