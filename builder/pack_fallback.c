/* Stand-in for the archive module's reproducible writer until builder/archive.h is merged:
 * sorted entries, mtime = SOURCE_DATE_EPOCH, owners 0, modes 0644/0755, zstd. */
#include "builder/builder.h"

#ifdef KB_BUILDER_ARCHIVE_FALLBACK
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Regular files under root (relative paths, sorted); symlinks and specials are refused. */
static int list_files(kb_ctx *ctx, kb_strv *out, const char *root, const char *rel)
{
    char *full = rel ? kb_path_join(root, rel) : kb_strdup(root);
    struct stat st;
    int rc = 0;
    if (!full)
        return kb_error_oom(ctx);
    if (lstat(full, &st) != 0)
        rc = kb_error_set_path(ctx, KB_ERR_IO, full, 0, 0, "cannot stat %s", full);
    else if (S_ISREG(st.st_mode))
        rc = kb_strv_push(out, rel) ? kb_error_oom(ctx) : 0;
    else if (S_ISDIR(st.st_mode)) {
        kb_strv names = KB_STRV_INIT;
        DIR *d = opendir(full);
        struct dirent *e;
        while (d && (e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                kb_strv_push(&names, e->d_name);
        if (d)
            closedir(d);
        for (size_t i = 0; !rc && i < names.len; i++) {
            char *child =
                rel ? kb_asprintf("%s/%s", rel, names.items[i]) : kb_strdup(names.items[i]);
            rc = child ? list_files(ctx, out, root, child) : kb_error_oom(ctx);
            free(child);
        }
        kb_strv_free(&names);
    } else
        rc = kb_error_set_path(ctx, KB_ERR_UNSAFE, full, 0, 0, "%s is not a regular file or folder",
                               full);
    free(full);
    return rc;
}

static int add_entry(struct archive *a, const char *name, const kb_buf *data, bool dir, bool exec,
                     int64_t epoch)
{
    struct archive_entry *e = archive_entry_new();
    if (!e)
        return -1;
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, dir ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(e, dir || exec ? 0755 : 0644);
    archive_entry_set_size(e, dir ? 0 : (la_int64_t)data->len);
    archive_entry_set_mtime(e, (time_t)epoch, 0);
    archive_entry_set_uid(e, 0);
    archive_entry_set_gid(e, 0);
    int rc = archive_write_header(a, e) == ARCHIVE_OK ? 0 : -1;
    if (!rc && !dir && data->len &&
        archive_write_data(a, data->data, data->len) != (la_ssize_t)data->len)
        rc = -1;
    archive_entry_free(e);
    return rc;
}

/* Parent folders of every member, each once, then the members; all sorted by path. */
static int collect_paths(kb_strv *paths, const kb_archive_member *members, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        char *p = kb_strdup(members[i].archive_path);
        if (!p)
            return KB_ERR_NOMEM;
        for (char *s = strchr(p, '/'); s; s = strchr(s + 1, '/')) {
            *s = '\0';
            char *dir = kb_asprintf("%s/", p);
            *s = '/';
            if (!dir || (!kb_strv_contains(paths, dir) && kb_strv_push(paths, dir))) {
                free(dir);
                free(p);
                return KB_ERR_NOMEM;
            }
            free(dir);
        }
        free(p);
        if (kb_strv_push(paths, members[i].archive_path))
            return KB_ERR_NOMEM;
    }
    kb_strv_sort(paths);
    return 0;
}

static const kb_archive_member *member_of(const kb_archive_member *m, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].archive_path, path) == 0)
            return &m[i];
    return NULL;
}

int kb_archive_write_members(kb_archive_result *out, kb_ctx *ctx, const char *out_path,
                             const kb_archive_member *members, size_t count,
                             int64_t source_date_epoch)
{
    kb_strv paths = KB_STRV_INIT;
    if (collect_paths(&paths, members, count)) {
        kb_strv_free(&paths);
        return kb_error_oom(ctx);
    }
    struct archive *a = archive_write_new();
    kb_buf tar = KB_BUF_INIT;
    size_t used = 0;
    int rc = 0;
    if (!a || kb_buf_grow(&tar, 64u << 20) || archive_write_set_format_pax_restricted(a) ||
        archive_write_add_filter_zstd(a) ||
        archive_write_set_filter_option(a, "zstd", "compression-level", "19") ||
        archive_write_set_bytes_in_last_block(a, 1) ||
        archive_write_open_memory(a, tar.data, tar.cap, &used) != ARCHIVE_OK)
        rc = kb_error_set(ctx, KB_ERR_ARCHIVE, "cannot start %s: %s", out_path,
                          a ? archive_error_string(a) : "out of memory");
    for (size_t i = 0; !rc && i < paths.len; i++) {
        const char *p = paths.items[i];
        kb_buf data = KB_BUF_INIT;
        bool dir = kb_str_ends(p, "/");
        const kb_archive_member *m = dir ? NULL : member_of(members, count, p);
        if (m)
            rc = kb_read_file(ctx, m->file_path, &data);
        bool exec = m && (access(m->file_path, X_OK) == 0 || kb_str_ends(p, ".so"));
        if (!rc && add_entry(a, p, &data, dir, exec, source_date_epoch))
            rc = kb_error_set(ctx, KB_ERR_ARCHIVE, "cannot add %s to %s: %s", p, out_path,
                              archive_error_string(a));
        kb_buf_free(&data);
    }
    if (a && archive_write_close(a) != ARCHIVE_OK && !rc)
        rc = kb_error_set(ctx, KB_ERR_ARCHIVE, "cannot finish %s: %s (over 64 MiB?)", out_path,
                          archive_error_string(a));
    if (a)
        archive_write_free(a);
    if (!rc)
        rc = kb_write_file_atomic(ctx, out_path, tar.data, used, 0644);
    if (!rc) {
        kb_sha256_hex(tar.data, used, out->sha256);
        out->size = used;
    }
    kb_buf_free(&tar);
    kb_strv_free(&paths);
    return rc;
}

int kb_archive_write_dir(kb_archive_result *out, kb_ctx *ctx, const char *out_path,
                         const char *staging_dir, int64_t source_date_epoch)
{
    kb_strv files = KB_STRV_INIT;
    int rc = list_files(ctx, &files, staging_dir, NULL);
    kb_archive_member *members = rc ? NULL : calloc(files.len + 1, sizeof(*members));
    char **paths = members ? calloc(files.len + 1, sizeof(*paths)) : NULL;
    if (!rc && !paths)
        rc = kb_error_oom(ctx);
    for (size_t i = 0; !rc && i < files.len; i++) {
        paths[i] = kb_path_join(staging_dir, files.items[i]);
        members[i] = (kb_archive_member){files.items[i], paths[i]};
        if (!paths[i])
            rc = kb_error_oom(ctx);
    }
    if (!rc)
        rc = kb_archive_write_members(out, ctx, out_path, members, files.len, source_date_epoch);
    for (size_t i = 0; paths && i < files.len; i++)
        free(paths[i]);
    free(paths);
    free(members);
    kb_strv_free(&files);
    return rc;
}
#else
/* The real writer is linked; keep this translation unit non-empty for -pedantic. */
typedef int kb_pack_fallback_unused;
#endif
