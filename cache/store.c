/* The local cache: paths, locks, atomic installs with records, listing, verify, gc. */
#define _GNU_SOURCE
#include "cache/store.h"
#include "archive/extract.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const cache_subdirs[] = {"blobs/sha256", "pkgs", "builds", "locks"};

int kbi_cache_open(kb_cache **out, kb_ctx *ctx)
{
    *out = NULL;
    kb_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return kbi_error_oom(ctx);
    c->ctx = ctx;
    c->root = kbi_strdup(kbi_config_str(ctx, "cache.dir"));
    if (!c->root) {
        free(c);
        return kbi_error_oom(ctx);
    }
    for (size_t i = 0; i < KB_ARRAY_LEN(cache_subdirs); i++) {
        char *d = kbi_path_join(c->root, cache_subdirs[i]);
        int rc = d ? kbi_mkdir_p(ctx, d, 0755) : kbi_error_oom(ctx);
        free(d);
        if (rc) {
            kbi_error_prefix(ctx, "cache %s", c->root);
            kbi_cache_close(c);
            return rc;
        }
    }
    *out = c;
    return 0;
}

void kbi_cache_close(kb_cache *c)
{
    if (!c)
        return;
    free(c->root);
    free(c);
}

char *kbi_cache_blob_path(const kb_cache *c, const char *digest)
{
    const char *hex = strchr(digest, ':');
    return kbi_asprintf("%s/blobs/sha256/%s", c->root, hex ? hex + 1 : digest);
}

char *kbi_cache_pkg_dir(const kb_cache *c, const char *name, const char *version,
                        const char *target)
{
    return kbi_asprintf("%s/pkgs/%s/%s/%s", c->root, name, version, target);
}

int kbi_cache_lock(kb_cache *c, kb_lock *lock, const char *kind, const char *key)
{
    /* Lock names are flat: '/' and ':' become '_' so a key never makes a path. */
    char *flat = kbi_asprintf("%s-%s", kind, key);
    if (!flat)
        return kbi_error_oom(c->ctx);
    for (char *p = flat; *p; p++)
        if (*p == '/' || *p == ':' || *p == '@')
            *p = '_';
    char *path = kbi_asprintf("%s/locks/%s.lock", c->root, flat);
    free(flat);
    if (!path)
        return kbi_error_oom(c->ctx);
    int rc = kbi_lock_acquire(c->ctx, lock, path);
    free(path);
    return rc;
}

static char *hold_lock_path(const kb_cache *c)
{
    return kbi_asprintf("%s/locks/cache.lock", c->root);
}

int kbi_cache_hold(kb_cache *c, kb_lock *lock)
{
    char *path = hold_lock_path(c);
    if (!path)
        return kbi_error_oom(c->ctx);
    int rc = 0;
    lock->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock->fd < 0)
        rc = kbi_error_set_path(c->ctx, KB_ERR_IO, path, 0, 0, "cannot open lock %s: %s", path,
                                strerror(errno));
    while (!rc && flock(lock->fd, LOCK_SH) != 0) {
        if (errno == EINTR)
            continue;
        rc = kbi_error_set_path(c->ctx, KB_ERR_IO, path, 0, 0, "cannot lock %s: %s", path,
                                strerror(errno));
        close(lock->fd);
        lock->fd = -1;
    }
    free(path);
    return rc;
}

#ifdef KBPKG_TEST_HOOKS
static bool phase_listed(const char *list, const char *phase)
{
    size_t n = strlen(phase);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if ((len == n && strncmp(p, phase, n) == 0) || (len == 3 && strncmp(p, "all", 3) == 0))
            return true;
        p += len;
        if (*p == ',')
            p++;
    }
    return false;
}

void kbi_cache_test_pause(const char *phase)
{
    const char *list = getenv("KBPKG_TEST_PAUSE_AT");
    if (!list || !*list || !phase_listed(list, phase))
        return;
    struct timespec ts = {0, KB_TEST_PAUSE_MS * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}
#endif

/* ---- walking an installed folder ---- */

/* st is NULL when the entry cannot be stat'ed (the callback's own read then reports it). */
typedef int (*walk_fn)(const char *rel, const char *abs, const struct stat *st, void *arg);

/* fn for everything below root that is not a folder, in sorted order; dir_fn (may be NULL) for
 * every folder after what it holds, root last (rel ""). */
static int walk_files(kb_ctx *ctx, const char *root, const char *rel, walk_fn fn, walk_fn dir_fn,
                      void *arg)
{
    char *dir = rel[0] ? kbi_path_join(root, rel) : kbi_strdup(root);
    if (!dir)
        return kbi_error_oom(ctx);
    DIR *d = opendir(dir);
    if (!d) {
        int rc = kbi_error_set_path(ctx, KB_ERR_IO, dir, 0, 0, "cannot open folder %s: %s", dir,
                                    strerror(errno));
        free(dir);
        return rc;
    }
    kb_strv names = KB_STRV_INIT;
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            rc = kbi_strv_push(&names, e->d_name) ? kbi_error_oom(ctx) : 0;
    closedir(d);
    kbi_strv_sort(&names);
    for (size_t i = 0; !rc && i < names.len; i++) {
        char *child_rel =
            rel[0] ? kbi_asprintf("%s/%s", rel, names.items[i]) : kbi_strdup(names.items[i]);
        char *child_abs = child_rel ? kbi_path_join(root, child_rel) : NULL;
        struct stat st;
        /* lstat: a symlink is reported as what it is, never followed out of the folder */
        bool have = child_abs && lstat(child_abs, &st) == 0;
        if (!child_abs)
            rc = kbi_error_oom(ctx);
        else if (have && S_ISDIR(st.st_mode))
            rc = walk_files(ctx, root, child_rel, fn, dir_fn, arg);
        else
            rc = fn(child_rel, child_abs, have ? &st : NULL, arg);
        free(child_rel);
        free(child_abs);
    }
    kbi_strv_free(&names);
    if (!rc && dir_fn)
        rc = dir_fn(rel, dir, NULL, arg);
    free(dir);
    return rc;
}

/* The record's file list, and everything the fsync pass must cover. */
typedef struct record_walk {
    kb_ctx *ctx;
    json_t *files;                    /* rel -> sha256 hex, for the record */
    const kb_extract_files *streamed; /* digests taken while extracting */
    json_t *streamed_at;              /* rel -> index into streamed */
    kb_strv sync_files;
    kb_strv sync_dirs; /* deepest first, the install folder last */
    uint64_t bytes;
} record_walk;

static int record_file(const char *rel, const char *abs, const struct stat *st, void *arg)
{
    record_walk *w = arg;
    if (st && !S_ISREG(st->st_mode))
        return kbi_error_set_path(w->ctx, KB_ERR_UNSAFE, abs, 0, 0, "%s is not a regular file",
                                  abs);
    /* The extraction hashed the bytes it wrote. A file whose size on disk differs from what was
     * hashed (or whose data was not one stream) is hashed from disk instead, so the record always
     * describes the files as they are. */
    const kb_extract_file *f = NULL;
    json_t *at = json_object_get(w->streamed_at, rel);
    if (at && st && S_ISREG(st->st_mode)) {
        f = &w->streamed->items[json_integer_value(at)];
        if (!f->sha256[0] || f->size != (uint64_t)st->st_size)
            f = NULL;
    }
    char hex[65];
    uint64_t size = 0;
    if (f) {
        memcpy(hex, f->sha256, sizeof(hex));
        size = f->size;
    } else {
        int rc = kbi_sha256_file(w->ctx, abs, hex, &size);
        if (rc)
            return rc;
    }
    w->bytes += size;
    if (json_object_set_new(w->files, rel, json_string(hex)) || kbi_strv_push(&w->sync_files, abs))
        return kbi_error_oom(w->ctx);
    return 0;
}

static int record_dir(const char *rel, const char *abs, const struct stat *st, void *arg)
{
    record_walk *w = arg;
    return kbi_strv_push(&w->sync_dirs, abs) ? kbi_error_oom(w->ctx) : 0;
}

/*
 * Make every file and folder of an install durable before the rename that shows it: fsync each
 * file and each folder (their entries, children before parents) once all of them are written.
 * The extraction started each file's writeback as it went (opts.start_writeback), so the fsyncs
 * mostly wait for I/O already in flight instead of issuing it one file at a time, and on a
 * journalling file system the first one commits the metadata of all. fsync per file rather than
 * one syncfs(2): syncfs would also flush every other program's dirty data on that file system
 * (unbounded on a busy machine), and before Linux 5.8 it did not report write errors.
 * bench/sync_strategies.c compares these (docs/perf.md).
 */
static int sync_install(kb_ctx *ctx, const kb_strv *files, const kb_strv *dirs)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < files->len; i++)
        rc = kbi_fsync_path(ctx, files->items[i]);
    for (size_t i = 0; !rc && i < dirs->len; i++)
        rc = kbi_fsync_path(ctx, dirs->items[i]);
    return rc;
}

/* ---- the artifact's own metadata ---- */

static int read_json_file(json_t **out, kb_ctx *ctx, const char *path)
{
    json_error_t jerr;
    *out = json_load_file(path, 0, &jerr);
    if (!*out)
        return kbi_error_set_path(ctx, KB_ERR_PARSE, path, (unsigned)jerr.line,
                                  (unsigned)jerr.column, "%s:%d:%d: %s", path, jerr.line,
                                  jerr.column, jerr.text);
    return 0;
}

static int check_field(kb_ctx *ctx, json_t *meta, const char *field, const char *want,
                       const char *path)
{
    const char *got = json_string_value(json_object_get(meta, field));
    if (!got)
        return kbi_error_set_path(ctx, KB_ERR_ARCHIVE, path, 0, 0, "%s has no '%s'", path, field);
    if (want && strcmp(got, want) != 0)
        return kbi_error_set_path(ctx, KB_ERR_ABI, path, 0, 0,
                                  "%s says %s '%s' but the index says '%s'", path, field, got,
                                  want);
    return 0;
}

static int check_artifact_meta(kb_ctx *ctx, const char *dir, const kb_install_info *info,
                               json_t **exports_out)
{
    char *path = kbi_path_join(dir, "kbpkg.json");
    if (!path)
        return kbi_error_oom(ctx);
    json_t *meta = NULL;
    int rc = read_json_file(&meta, ctx, path);
    if (!rc)
        rc = check_field(ctx, meta, "name", info->name, path);
    if (!rc)
        rc = check_field(ctx, meta, "version", info->version, path);
    if (!rc)
        rc = check_field(ctx, meta, "target", info->target, path);
    if (!rc) {
        json_t *ex = json_object_get(meta, "exports");
        if (!json_is_array(ex))
            rc =
                kbi_error_set_path(ctx, KB_ERR_ARCHIVE, path, 0, 0, "%s has no exports list", path);
        else
            *exports_out = json_incref(ex);
    }
    json_decref(meta);
    free(path);
    return rc;
}

static char *find_library(const char *dir)
{
    char *lib = kbi_path_join(dir, "lib");
    DIR *d = lib ? opendir(lib) : NULL;
    char *found = NULL;
    struct dirent *e;
    while (d && !found && (e = readdir(d)))
        if (kbi_str_starts(e->d_name, "lib") && kbi_str_ends(e->d_name, ".so"))
            found = kbi_path_join(lib, e->d_name);
    if (d)
        closedir(d);
    free(lib);
    return found;
}

/* ---- the library file: identity and content ---- */

int kbi_file_id_of_fd(kb_file_id *out, int fd)
{
    struct stat st;
    memset(out, 0, sizeof(*out));
    if (fstat(fd, &st) != 0)
        return KB_ERR_IO;
    *out = (kb_file_id){true,
                        (uint64_t)st.st_dev,
                        (uint64_t)st.st_ino,
                        (uint64_t)st.st_size,
                        (int64_t)st.st_ctim.tv_sec,
                        (int64_t)st.st_ctim.tv_nsec};
    return 0;
}

bool kbi_file_id_equal(const kb_file_id *a, const kb_file_id *b)
{
    return a->known && b->known && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->ctime_s == b->ctime_s && a->ctime_ns == b->ctime_ns;
}

/* The kernel ABI bakes the target id into the library as a string literal (KBPKG_TARGET): a
 * library without "<target>\0" among its bytes was built for something else. Checked here,
 * before anything dlopens it, so that its constructors never run in a process that would then
 * refuse it; the loader's kbpkg_kernel_info() check after dlopen stays the exact one. */
static int library_names_target(kb_ctx *ctx, int fd, const char *path, const char *target)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size == 0)
        return kbi_error_set_path(ctx, KB_ERR_ABI, path, 0, 0, "%s is empty or unreadable", path);
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
        return kbi_error_set_path(ctx, KB_ERR_IO, path, 0, 0, "cannot map %s: %s", path,
                                  strerror(errno));
    bool found = memmem(map, (size_t)st.st_size, target, strlen(target) + 1) != NULL;
    munmap(map, (size_t)st.st_size);
    if (!found)
        return kbi_error_set_path(ctx, KB_ERR_ABI, path, 0, 0,
                                  "%s does not carry the target id '%s' (kbpkg_kernel_info bakes "
                                  "it in): it was built for another target, refused before "
                                  "loading it",
                                  path, target);
    return 0;
}

int kbi_cache_open_library(kb_installed *p, kb_ctx *ctx)
{
    if (!p->library)
        return kbi_error_set_path(ctx, KB_ERR_LOAD, p->dir, 0, 0, "%s holds no lib/lib*.so",
                                  p->dir);
    int fd = kbi_open_regular(ctx, p->library, 0);
    if (fd < 0)
        return fd == KB_ERR_NOT_FOUND ? KB_ERR_LOAD : fd;
    kb_file_id now;
    int rc = kbi_file_id_of_fd(&now, fd) ? kbi_error_set_path(ctx, KB_ERR_IO, p->library, 0, 0,
                                                              "cannot stat %s", p->library)
                                         : 0;
    if (!rc && kbi_file_id_equal(&now, &p->lib_id))
        return fd; /* the very file install hashed and checked */
    char hex[65];
    if (!rc && !p->lib_sha256[0])
        rc = kbi_error_set_path(ctx, KB_ERR_DIGEST, p->library, 0, 0,
                                "the install record of %s has no digest for %s: install it again",
                                p->dir, p->library);
    if (!rc)
        rc = kbi_sha256_fd(ctx, fd, p->library, hex, NULL);
    if (!rc && strcmp(hex, p->lib_sha256) != 0)
        rc = kbi_error_set_path(ctx, KB_ERR_DIGEST, p->library, 0, 0,
                                "%s changed since it was installed: sha256 %s, expected %s; "
                                "refused before loading it ('kbpkg install' puts it back)",
                                p->library, hex, p->lib_sha256);
    if (!rc)
        rc = library_names_target(ctx, fd, p->library, p->target);
    if (rc) {
        close(fd);
        return rc;
    }
    p->lib_id = now; /* same bytes (a copied cache, a touch): the next check is cheap again */
    return fd;
}

int kbi_cache_blob_check(kb_cache *c, const char *path, const char *digest)
{
    char hex[65];
    const char *want = kbi_str_starts(digest, "sha256:") ? digest + 7 : NULL;
    int rc = kbi_sha256_file(c->ctx, path, hex, NULL);
    if (rc == KB_ERR_NOT_FOUND)
        return rc;
    if (!rc && want && strcmp(hex, want) == 0)
        return 0;
    kbi_log(c->ctx, KB_LOG_WARN, "%s does not hash to %s (sha256 %s): removed, fetching it again",
            path, digest, rc ? "unreadable" : hex);
    kb_ctx_clear_error(c->ctx);
    unlink(path);
    return KB_ERR_DIGEST;
}

/* Hash (from the extraction's digests) and write the record, then sync the whole folder. */
static json_t *admission_json(const kb_trust_admission *a)
{
    if (!a)
        return json_pack("{s:s}", "status", KB_TRUST_NOT_CHECKED);
    json_t *layer = a->layer ? json_loads(a->layer, 0, NULL) : NULL;
    return json_pack("{s:s?,s:s?,s:s?,s:o?}", "status", a->status, "key_id", a->key_id,
                     "registry_kind", a->registry_kind, "signature", layer);
}

/* The library's path below dir and its identity, as the loader will compare them. */
static json_t *library_json(kb_ctx *ctx, const char *dir, const char *target, int *rc)
{
    char *lib = find_library(dir);
    json_t *out = NULL;
    int fd = lib ? kbi_open_regular(ctx, lib, O_NOFOLLOW) : -1;
    kb_file_id id;
    *rc = 0;
    if (!lib)
        *rc = kbi_error_set_path(ctx, KB_ERR_ARCHIVE, dir, 0, 0, "%s holds no lib/lib*.so", dir);
    else if (fd < 0)
        *rc = fd;
    else if (kbi_file_id_of_fd(&id, fd) != 0)
        *rc = kbi_error_set_path(ctx, KB_ERR_IO, lib, 0, 0, "cannot stat %s", lib);
    else
        *rc = library_names_target(ctx, fd, lib, target);
    if (!*rc) {
        out = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I}", "path", lib + strlen(dir) + 1, "size",
                        (json_int_t)id.size, "dev", (json_int_t)id.dev, "ino", (json_int_t)id.ino,
                        "ctime_s", (json_int_t)id.ctime_s, "ctime_ns", (json_int_t)id.ctime_ns);
        if (!out)
            *rc = kbi_error_oom(ctx);
    }
    if (fd >= 0)
        close(fd);
    free(lib);
    return out;
}

static int write_record(kb_ctx *ctx, const char *dir, const kb_install_info *info, json_t *exports,
                        const kb_extract_files *streamed)
{
    record_walk w = {ctx, json_object(), streamed, json_object(), KB_STRV_INIT, KB_STRV_INIT, 0};
    int rc = w.files && w.streamed_at ? 0 : kbi_error_oom(ctx);
    for (size_t i = 0; !rc && i < streamed->len; i++)
        if (json_object_set_new(w.streamed_at, streamed->items[i].path,
                                json_integer((json_int_t)i)))
            rc = kbi_error_oom(ctx);
    if (!rc)
        rc = walk_files(ctx, dir, "", record_file, record_dir, &w);
    json_decref(w.streamed_at);
    if (rc) {
        json_decref(w.files);
        kbi_strv_free(&w.sync_files);
        kbi_strv_free(&w.sync_dirs);
        return rc;
    }
    json_t *library = library_json(ctx, dir, info->target, &rc);
    if (rc) {
        json_decref(w.files);
        kbi_strv_free(&w.sync_files);
        kbi_strv_free(&w.sync_dirs);
        return rc;
    }
    json_t *rec = json_pack(
        "{s:i,s:s,s:s,s:s,s:s?,s:s?,s:s?,s:s?,s:b,s:I,s:I,s:O,s:o,s:o,s:o}", "record", 2, "name",
        info->name, "version", info->version, "target", info->target, "artifact_digest",
        info->artifact_digest, "index_digest", info->index_digest, "registry", info->registry,
        "reason", info->reason, "local_build", info->local_build, "installed_at",
        (json_int_t)time(NULL), "bytes", (json_int_t)w.bytes, "exports", exports, "files", w.files,
        "library", library, "admission", admission_json(info->admission));
    if (!rec) {
        kbi_strv_free(&w.sync_files);
        kbi_strv_free(&w.sync_dirs);
        return kbi_error_oom(ctx);
    }
    char *text = json_dumps(rec, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(rec);
    char *path = kbi_path_join(dir, KB_INSTALL_RECORD);
    /* A plain write: the folder is not visible yet, and the pass below syncs the record too. */
    rc =
        text && path ? kbi_write_file_new(ctx, path, text, strlen(text), 0644) : kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_strv_push(&w.sync_files, path) ? kbi_error_oom(ctx) : 0;
    if (!rc)
        rc = sync_install(ctx, &w.sync_files, &w.sync_dirs);
    kbi_strv_free(&w.sync_files);
    kbi_strv_free(&w.sync_dirs);
    free(text);
    free(path);
    return rc;
}

/* Swap the new folder into place; the previous install (if any) ends up in tmp and is removed. */
static int publish_dir(kb_ctx *ctx, const char *tmp, const char *final)
{
    if (rename(tmp, final) == 0)
        return 0;
    if (errno != EEXIST && errno != ENOTEMPTY)
        return kbi_error_set_path(ctx, KB_ERR_IO, final, 0, 0, "cannot rename %s to %s: %s", tmp,
                                  final, strerror(errno));
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE) != 0)
        return kbi_error_set_path(ctx, KB_ERR_IO, final, 0, 0, "cannot replace %s: %s", final,
                                  strerror(errno));
    return 0;
}

int kbi_cache_install_artifact(char **out_dir, kb_cache *c, const char *artifact_path,
                               const kb_install_info *info)
{
    kb_ctx *ctx = c->ctx;
    if (out_dir)
        *out_dir = NULL;
    char *final = kbi_cache_pkg_dir(c, info->name, info->version, info->target);
    char *parent = final ? kbi_asprintf("%s/pkgs/%s/%s", c->root, info->name, info->version) : NULL;
    char *tmp = NULL;
    json_t *exports = NULL;
    kb_extract_files streamed = KB_EXTRACT_FILES_INIT;
    kb_lock hold = {-1};
    int rc = parent ? kbi_cache_hold(c, &hold) : kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_mkdir_p(ctx, parent, 0755);
    if (!rc) {
        kb_extract_opts opts = KB_EXTRACT_OPTS_INIT;
        opts.allowed_top = kbi_extract_artifact_layout;
        opts.files = &streamed;
        opts.start_writeback = true;
        rc = kbi_extract_archive(&tmp, ctx, artifact_path, parent, &opts);
        if (rc)
            kbi_error_prefix(ctx, "installing %s@%s %s", info->name, info->version, info->target);
    }
    if (!rc) {
        kbi_cache_test_pause("extract");
        rc = check_artifact_meta(ctx, tmp, info, &exports);
    }
    if (!rc) {
        char *lib = find_library(tmp);
        if (!lib)
            rc = kbi_error_set_path(ctx, KB_ERR_ARCHIVE, artifact_path, 0, 0,
                                    "artifact %s holds no lib/lib*.so", artifact_path);
        free(lib);
    }
    if (!rc)
        rc = write_record(ctx, tmp, info, exports, &streamed);
    if (!rc) {
        kbi_cache_test_pause("record");
        rc = publish_dir(ctx, tmp, final);
    }
    if (!rc) {
        kbi_fsync_dir(parent);
        kbi_cache_bump_generation(c);
        kbi_cache_test_pause("rename");
    }
    if (tmp)
        kbi_rm_rf(NULL, tmp); /* after an exchange it holds the previous install */
    kbi_lock_release(&hold);
    if (!rc && out_dir) {
        *out_dir = final;
        final = NULL;
    }
    json_decref(exports);
    kbi_extract_files_free(&streamed);
    free(tmp);
    free(parent);
    free(final);
    return rc;
}

/* ---- the generation of what is installed ---- */

void kbi_cache_bump_generation(kb_cache *c)
{
    char *path = kbi_path_join(c->root, KB_CACHE_GENERATION);
    int fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
    if (fd < 0 || write(fd, "+", 1) != 1)
        kbi_log(c->ctx, KB_LOG_WARN,
                "cannot update %s: %s; programs that already opened this package may not see the "
                "change until the next install or uninstall",
                path ? path : KB_CACHE_GENERATION, strerror(errno));
    if (fd >= 0)
        close(fd);
    free(path);
}

void kbi_cache_generation_read(kb_cache_gen *out, const char *gen_path)
{
    struct stat st;
    memset(out, 0, sizeof(*out));
    if (stat(gen_path, &st) != 0)
        return;
    out->exists = true;
    out->dev = (uint64_t)st.st_dev;
    out->ino = (uint64_t)st.st_ino;
    out->size = (uint64_t)st.st_size;
}

bool kbi_cache_generation_equal(const kb_cache_gen *a, const kb_cache_gen *b)
{
    return a->exists == b->exists && a->dev == b->dev && a->ino == b->ino && a->size == b->size;
}

/* ---- reading records ---- */

void kbi_installed_clear(kb_installed *p)
{
    free(p->name);
    free(p->version);
    free(p->target);
    free(p->dir);
    free(p->artifact_digest);
    free(p->index_digest);
    free(p->registry);
    free(p->reason);
    free(p->library);
    kbi_strv_free(&p->exports);
    kbi_trust_admission_clear(&p->admission);
    memset(p, 0, sizeof(*p));
}

int kbi_installed_copy(kb_installed *dst, const kb_installed *src)
{
    memset(dst, 0, sizeof(*dst));
    struct {
        char **to;
        const char *from;
    } strs[] = {{&dst->name, src->name},
                {&dst->version, src->version},
                {&dst->target, src->target},
                {&dst->dir, src->dir},
                {&dst->artifact_digest, src->artifact_digest},
                {&dst->index_digest, src->index_digest},
                {&dst->registry, src->registry},
                {&dst->reason, src->reason},
                {&dst->library, src->library}};
    bool ok = true;
    for (size_t i = 0; i < KB_ARRAY_LEN(strs); i++)
        if (strs[i].from && !(*strs[i].to = kbi_strdup(strs[i].from)))
            ok = false;
    for (size_t i = 0; ok && i < src->exports.len; i++)
        ok = kbi_strv_push(&dst->exports, src->exports.items[i]) == 0;
    dst->local_build = src->local_build;
    dst->bytes = src->bytes;
    dst->lib_id = src->lib_id;
    memcpy(dst->lib_sha256, src->lib_sha256, sizeof(dst->lib_sha256));
    if (ok && kbi_trust_admission_copy(&dst->admission, &src->admission) != 0)
        ok = false;
    if (!ok) {
        kbi_installed_clear(dst);
        return KB_ERR_NOMEM;
    }
    return 0;
}

static char *json_str_dup(json_t *obj, const char *key)
{
    return kbi_strdup(json_string_value(json_object_get(obj, key)));
}

/* The record's library (a name directly under lib/, as install found it) and its identity;
 * records from before kbpkg recorded them fall back to the folder's lib/lib*.so. */
static void read_library(kb_installed *out, json_t *rec, const char *dir)
{
    json_t *lib = json_object_get(rec, "library");
    const char *rel = json_string_value(json_object_get(lib, "path"));
    if (rel && kbi_str_starts(rel, "lib/") && !strchr(rel + 4, '/') && strcmp(rel + 4, "..") &&
        strcmp(rel + 4, ".") && rel[4])
        out->library = kbi_path_join(dir, rel);
    else
        out->library = find_library(dir);
    const char *rel_now = out->library ? out->library + strlen(dir) + 1 : NULL;
    const char *hex =
        rel_now ? json_string_value(json_object_get(json_object_get(rec, "files"), rel_now)) : NULL;
    if (hex && strlen(hex) == 64)
        memcpy(out->lib_sha256, hex, 65);
    if (rel && json_is_integer(json_object_get(lib, "ino")))
        out->lib_id = (kb_file_id){true,
                                   (uint64_t)json_integer_value(json_object_get(lib, "dev")),
                                   (uint64_t)json_integer_value(json_object_get(lib, "ino")),
                                   (uint64_t)json_integer_value(json_object_get(lib, "size")),
                                   (int64_t)json_integer_value(json_object_get(lib, "ctime_s")),
                                   (int64_t)json_integer_value(json_object_get(lib, "ctime_ns"))};
}

static void read_admission(kb_trust_admission *a, json_t *adm)
{
    a->status = json_str_dup(adm, "status");
    a->key_id = json_str_dup(adm, "key_id");
    a->registry_kind = json_str_dup(adm, "registry_kind");
    json_t *layer = json_object_get(adm, "signature");
    a->layer = json_is_object(layer) ? json_dumps(layer, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
}

int kbi_cache_read_install(kb_installed *out, kb_cache *c, const char *dir)
{
    memset(out, 0, sizeof(*out));
    char *path = kbi_path_join(dir, KB_INSTALL_RECORD);
    json_t *rec = NULL;
    int rc = path ? read_json_file(&rec, c->ctx, path) : kbi_error_oom(c->ctx);
    if (!rc) {
        out->name = json_str_dup(rec, "name");
        out->version = json_str_dup(rec, "version");
        out->target = json_str_dup(rec, "target");
        out->artifact_digest = json_str_dup(rec, "artifact_digest");
        out->index_digest = json_str_dup(rec, "index_digest");
        out->registry = json_str_dup(rec, "registry");
        out->reason = json_str_dup(rec, "reason");
        out->local_build = json_is_true(json_object_get(rec, "local_build"));
        out->bytes = (uint64_t)json_integer_value(json_object_get(rec, "bytes"));
        out->dir = kbi_strdup(dir);
        read_library(out, rec, dir);
        read_admission(&out->admission, json_object_get(rec, "admission"));
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(rec, "exports"), i, v)
        {
            if (json_is_string(v))
                kbi_strv_push(&out->exports, json_string_value(v));
        }
        if (!out->name || !out->version || !out->target)
            rc = kbi_error_set_path(c->ctx, KB_ERR_PARSE, path, 0, 0,
                                    "%s lacks name, version or target", path);
    }
    if (rc)
        kbi_installed_clear(out);
    json_decref(rec);
    free(path);
    return rc;
}

/* An uninstall renames <target> to <target>.removing.<pid> before deleting it. */
#define REMOVING_MARK ".removing."

static int list_subdirs(kb_strv *out, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : KB_ERR_IO;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strstr(e->d_name, REMOVING_MARK))
            continue; /* ".", "..", in-progress .kbpkg-extract-* and <target>.removing.* */
        char *p = kbi_path_join(dir, e->d_name);
        if (p && kbi_is_dir(p))
            kbi_strv_push(out, e->d_name);
        free(p);
    }
    closedir(d);
    kbi_strv_sort(out);
    return 0;
}

typedef struct install_list {
    kb_installed *items;
    size_t len, cap;
} install_list;

static int list_push(install_list *l, kb_installed *p)
{
    if (kbi_array_grow((void **)&l->items, &l->cap, l->len + 1, sizeof(*l->items)))
        return KB_ERR_NOMEM;
    l->items[l->len++] = *p;
    return 0;
}

/* pkgs/<org>/<name>/<version>/<target>: four levels of sorted folders. */
int kbi_cache_list(kb_installed **out, size_t *count, kb_cache *c, const char *name_filter)
{
    *out = NULL;
    *count = 0;
    install_list l = {0};
    kb_strv orgs = KB_STRV_INIT;
    char *pkgs = kbi_path_join(c->root, "pkgs");
    int rc = pkgs ? list_subdirs(&orgs, pkgs) : KB_ERR_NOMEM;
    for (size_t a = 0; !rc && a < orgs.len; a++) {
        char *orgdir = kbi_path_join(pkgs, orgs.items[a]);
        kb_strv names = KB_STRV_INIT;
        list_subdirs(&names, orgdir);
        for (size_t b = 0; !rc && b < names.len; b++) {
            char *full = kbi_asprintf("%s/%s", orgs.items[a], names.items[b]);
            if (name_filter && strcmp(full, name_filter) != 0) {
                free(full);
                continue;
            }
            char *namedir = kbi_path_join(orgdir, names.items[b]);
            kb_strv versions = KB_STRV_INIT;
            list_subdirs(&versions, namedir);
            for (size_t v = 0; !rc && v < versions.len; v++) {
                char *vdir = kbi_path_join(namedir, versions.items[v]);
                kb_strv targets = KB_STRV_INIT;
                list_subdirs(&targets, vdir);
                for (size_t t = 0; !rc && t < targets.len; t++) {
                    char *tdir = kbi_path_join(vdir, targets.items[t]);
                    kb_installed p;
                    /* A folder without a readable record is not an install; gc removes it. */
                    if (tdir && kbi_cache_read_install(&p, c, tdir) == 0 &&
                        list_push(&l, &p) != 0) {
                        kbi_installed_clear(&p);
                        rc = KB_ERR_NOMEM;
                    }
                    free(tdir);
                }
                kbi_strv_free(&targets);
                free(vdir);
            }
            kbi_strv_free(&versions);
            free(namedir);
            free(full);
        }
        kbi_strv_free(&names);
        free(orgdir);
    }
    kbi_strv_free(&orgs);
    free(pkgs);
    kb_ctx_clear_error(c->ctx);
    if (rc) {
        kbi_installed_list_free(l.items, l.len);
        return rc == KB_ERR_NOMEM ? kbi_error_oom(c->ctx)
                                  : kbi_error_set(c->ctx, rc, "cannot list %s", c->root);
    }
    *out = l.items;
    *count = l.len;
    return 0;
}

void kbi_installed_list_free(kb_installed *list, size_t count)
{
    for (size_t i = 0; list && i < count; i++)
        kbi_installed_clear(&list[i]);
    free(list);
}

/* ---- verify ---- */

typedef struct verify_walk {
    kb_ctx *ctx;
    json_t *files; /* rel -> sha256 hex: from the artifact when it could be read, else the record */
    kb_strv *issues;
    size_t seen;
} verify_walk;

static int verify_file(const char *rel, const char *abs, const struct stat *st, void *arg)
{
    verify_walk *w = arg;
    if (strcmp(rel, KB_INSTALL_RECORD) == 0)
        return 0;
    const char *want = json_string_value(json_object_get(w->files, rel));
    if (!want)
        return kbi_strv_push_owned(w->issues, kbi_asprintf("%s: not part of the artifact", abs));
    w->seen++;
    /* never opened: a FIFO would block the read, a device (through a symlink) never ends */
    if (st && !S_ISREG(st->st_mode))
        return kbi_strv_push_owned(w->issues,
                                   kbi_asprintf("%s: not a regular file (%s)", abs,
                                                S_ISLNK(st->st_mode)    ? "a symlink"
                                                : S_ISFIFO(st->st_mode) ? "a FIFO"
                                                : S_ISDIR(st->st_mode)  ? "a folder"
                                                                        : "a device or socket"));
    char hex[65];
    if (kbi_sha256_file(w->ctx, abs, hex, NULL) != 0) {
        kb_ctx_clear_error(w->ctx);
        return kbi_strv_push_owned(w->issues, kbi_asprintf("%s: unreadable", abs));
    }
    if (strcmp(hex, want) != 0)
        return kbi_strv_push_owned(w->issues,
                                   kbi_asprintf("%s: sha256 %s, expected %s", abs, hex, want));
    return 0;
}

/* The artifact's own kbpkg.json against the record's name, version, target and exports: the
 * loader hands out only the record's exports, so an added one must not go unnoticed. */
static void verify_meta(kb_strv *issues, kb_ctx *ctx, const char *blob, const kb_installed *p)
{
    kb_buf b = KB_BUF_INIT;
    json_t *meta = NULL;
    if (kbi_extract_read_member(&b, ctx, blob, "kbpkg.json", 1 << 20 /* as publish caps it */) == 0)
        meta = json_loadb(b.data, b.len, 0, NULL);
    kbi_buf_free(&b);
    kb_ctx_clear_error(ctx);
    if (!meta) {
        kbi_strv_push_owned(issues, kbi_asprintf("%s: the artifact %s has no readable kbpkg.json",
                                                 p->dir, p->artifact_digest));
        return;
    }
    const char *fields[][2] = {{"name", p->name}, {"version", p->version}, {"target", p->target}};
    for (size_t i = 0; i < KB_ARRAY_LEN(fields); i++) {
        const char *got = json_string_value(json_object_get(meta, fields[i][0]));
        if (!got || strcmp(got, fields[i][1]) != 0)
            kbi_strv_push_owned(issues,
                                kbi_asprintf("%s: the record says %s '%s', the artifact '%s'",
                                             p->dir, fields[i][0], fields[i][1], got ? got : ""));
    }
    kb_strv want = KB_STRV_INIT;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(meta, "exports"), i, v)
    {
        if (json_is_string(v))
            kbi_strv_push(&want, json_string_value(v));
    }
    for (i = 0; i < p->exports.len; i++)
        if (!kbi_strv_contains(&want, p->exports.items[i]))
            kbi_strv_push_owned(
                issues, kbi_asprintf("%s: the record exports %s, which the artifact does not "
                                     "declare",
                                     p->dir, p->exports.items[i]));
    if (want.len != p->exports.len)
        kbi_strv_push_owned(issues,
                            kbi_asprintf("%s: the record lists %zu exports, the artifact %zu",
                                         p->dir, p->exports.len, want.len));
    kbi_strv_free(&want);
    json_decref(meta);
}

/* The files as the artifact blob holds them, once the blob hashes to the record's digest; NULL
 * (with an issue) when it cannot be read or does not match. */
static json_t *artifact_files(kb_strv *issues, kb_cache *c, const kb_installed *p, char **blob_out)
{
    *blob_out = NULL;
    if (!p->artifact_digest || !kbi_str_starts(p->artifact_digest, "sha256:")) {
        kbi_strv_push_owned(issues,
                            kbi_asprintf("%s: the record names no artifact digest", p->dir));
        return NULL;
    }
    char *blob = kbi_cache_blob_path(c, p->artifact_digest);
    char hex[65];
    int rc = blob ? kbi_sha256_file(c->ctx, blob, hex, NULL) : KB_ERR_NOMEM;
    kb_ctx_clear_error(c->ctx);
    if (rc) {
        kbi_strv_push_owned(
            issues, kbi_asprintf("%s: the artifact %s is not in the cache (%s), so the files "
                                 "cannot be checked against it: install it again",
                                 p->dir, p->artifact_digest, blob ? blob : ""));
        free(blob);
        return NULL;
    }
    if (strcmp(hex, p->artifact_digest + 7) != 0) {
        kbi_strv_push_owned(issues, kbi_asprintf("%s: sha256 %s, expected %s (the artifact blob)",
                                                 blob, hex, p->artifact_digest + 7));
        free(blob);
        return NULL;
    }
    kb_extract_files members = KB_EXTRACT_FILES_INIT;
    json_t *files = json_object();
    rc = files ? kbi_extract_hash_members(&members, c->ctx, blob) : KB_ERR_NOMEM;
    for (size_t i = 0; !rc && i < members.len; i++)
        json_object_set_new(files, members.items[i].path, json_string(members.items[i].sha256));
    kbi_extract_files_free(&members);
    if (rc) {
        kbi_strv_push_owned(issues,
                            kbi_asprintf("%s: %s", blob, kb_ctx_last_error(c->ctx)->message));
        kb_ctx_clear_error(c->ctx);
        json_decref(files);
        free(blob);
        return NULL;
    }
    *blob_out = blob;
    return files;
}

int kbi_cache_verify_one(kb_strv *issues, kb_cache *c, const kb_installed *p)
{
    char *path = kbi_path_join(p->dir, KB_INSTALL_RECORD);
    json_t *rec = NULL;
    int rc = path ? read_json_file(&rec, c->ctx, path) : kbi_error_oom(c->ctx);
    free(path);
    if (rc)
        return rc;
    char *blob = NULL;
    json_t *files = artifact_files(issues, c, p, &blob);
    if (blob)
        verify_meta(issues, c->ctx, blob, p);
    /* Without the artifact, the record's own list is all there is to compare with. */
    verify_walk w = {c->ctx, files ? files : json_object_get(rec, "files"), issues, 0};
    rc = walk_files(c->ctx, p->dir, "", verify_file, NULL, &w);
    if (!rc && w.seen != json_object_size(w.files)) {
        const char *rel;
        json_t *v;
        json_object_foreach(w.files, rel, v)
        {
            char *abs = kbi_path_join(p->dir, rel);
            struct stat st;
            if (abs && lstat(abs, &st) != 0)
                kbi_strv_push_owned(issues, kbi_asprintf("%s: missing", abs));
            free(abs);
        }
    }
    json_decref(files);
    json_decref(rec);
    free(blob);
    return rc;
}

/* ---- uninstall and gc ---- */

static void remove_if_empty(const char *dir)
{
    rmdir(dir); /* fails harmlessly when not empty */
}

int kbi_cache_uninstall(size_t *removed, kb_cache *c, const char *name, const char *version,
                        const char *target)
{
    *removed = 0;
    kb_installed *list = NULL;
    size_t n = 0;
    int rc = kbi_cache_list(&list, &n, c, name);
    for (size_t i = 0; !rc && i < n; i++) {
        if (version && strcmp(list[i].version, version) != 0)
            continue;
        if (target && strcmp(list[i].target, target) != 0)
            continue;
        kb_lock lock;
        char *key = kbi_asprintf("%s@%s/%s", list[i].name, list[i].version, list[i].target);
        kb_lock hold = {-1};
        rc = key ? kbi_cache_hold(c, &hold) : kbi_error_oom(c->ctx);
        if (!rc)
            rc = kbi_cache_lock(c, &lock, "install", key);
        if (!rc) {
            /* Rename away first so a reader never sees a half-removed install. */
            char *doomed = kbi_asprintf("%s" REMOVING_MARK "%ld", list[i].dir, (long)getpid());
            if (doomed && rename(list[i].dir, doomed) == 0) {
                kbi_cache_bump_generation(c); /* gone from the listing: tell memos now */
                rc = kbi_rm_rf(c->ctx, doomed);
                (*removed)++;
            }
            free(doomed);
            kbi_lock_release(&lock);
            char *vdir = kbi_asprintf("%s/pkgs/%s/%s", c->root, list[i].name, list[i].version);
            char *ndir = kbi_asprintf("%s/pkgs/%s", c->root, list[i].name);
            if (vdir)
                remove_if_empty(vdir);
            if (ndir)
                remove_if_empty(ndir);
            free(vdir);
            free(ndir);
        }
        kbi_lock_release(&hold);
        free(key);
    }
    kbi_installed_list_free(list, n);
    if (!rc && *removed == 0)
        return kbi_error_set(c->ctx, KB_ERR_NOT_FOUND, "%s%s%s%s%s is not installed", name,
                             version ? "@" : "", version ? version : "", target ? " " : "",
                             target ? target : "");
    return rc;
}

static bool referenced(const kb_installed *list, size_t n, const kb_strv *keep, const char *hex)
{
    for (size_t i = 0; i < n; i++)
        if (list[i].artifact_digest && kbi_str_ends(list[i].artifact_digest, hex))
            return true;
    for (size_t i = 0; keep && i < keep->len; i++)
        if (kbi_str_ends(keep->items[i], hex))
            return true;
    return false;
}

/* Bytes under path (files only), for gc's report. */
static uint64_t tree_bytes(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return (uint64_t)st.st_size;
    uint64_t total = 0;
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *child = kbi_path_join(path, e->d_name);
        total += child ? tree_bytes(child) : 0;
        free(child);
    }
    if (d)
        closedir(d);
    return total;
}

static bool is_install_leftover(const char *name)
{
    return kbi_str_starts(name, ".kbpkg-extract-") || strstr(name, REMOVING_MARK) != NULL;
}

/* pkgs/<org>/<name>/<version>/: extraction and removal folders live beside the targets
 * (depth 3). Folders emptied on the way up are removed too. */
static void sweep_leftovers(const char *dir, int depth, size_t *removed, uint64_t *bytes)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    kb_strv names = KB_STRV_INIT;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            kbi_strv_push(&names, e->d_name);
    closedir(d);
    for (size_t i = 0; i < names.len; i++) {
        char *path = kbi_path_join(dir, names.items[i]);
        if (!path || !kbi_is_dir(path)) {
            free(path);
            continue;
        }
        if (depth == 3 && is_install_leftover(names.items[i])) {
            uint64_t size = tree_bytes(path);
            if (kbi_rm_rf(NULL, path) == 0) {
                (*removed)++;
                *bytes += size;
            }
        } else if (depth < 3) {
            sweep_leftovers(path, depth + 1, removed, bytes);
            remove_if_empty(path);
        }
        free(path);
    }
    kbi_strv_free(&names);
}

static bool is_partial_blob(const char *name)
{
    return kbi_str_ends(name, ".part") || strstr(name, ".tmp-") != NULL;
}

int kbi_cache_gc(size_t *removed, uint64_t *bytes_freed, kb_cache *c, const kb_strv *keep)
{
    *removed = 0;
    *bytes_freed = 0;
    /* Exclusive: no install is running, so every temporary file below is a dead one's. */
    kb_lock excl = {-1};
    char *lock_path = hold_lock_path(c);
    int rc = lock_path ? kbi_lock_acquire(c->ctx, &excl, lock_path) : kbi_error_oom(c->ctx);
    free(lock_path);
    if (rc)
        return rc;
    kb_installed *list = NULL;
    size_t n = 0;
    rc = kbi_cache_list(&list, &n, c, NULL);
    if (rc) {
        kbi_lock_release(&excl);
        return rc;
    }
    char *pkgs = kbi_path_join(c->root, "pkgs");
    if (pkgs)
        sweep_leftovers(pkgs, 0, removed, bytes_freed);
    free(pkgs);
    char *blobs = kbi_path_join(c->root, "blobs/sha256");
    DIR *d = blobs ? opendir(blobs) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (referenced(list, n, keep, e->d_name) && !is_partial_blob(e->d_name))
            continue;
        char *p = kbi_path_join(blobs, e->d_name);
        struct stat st;
        if (p && stat(p, &st) == 0 && unlink(p) == 0) {
            (*removed)++;
            *bytes_freed += (uint64_t)st.st_size;
        }
        free(p);
    }
    if (d)
        closedir(d);
    free(blobs);
    kbi_installed_list_free(list, n);
    kbi_lock_release(&excl);
    return 0;
}
