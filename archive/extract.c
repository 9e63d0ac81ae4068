/* Safe .tar.zst extraction: own checks on every entry, libarchive's secure flags, hard limits. */
#define _GNU_SOURCE /* sync_file_range */
#include "archive/extract.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const kbi_extract_artifact_layout[] = {"kbpkg.json", "lib/", "include/", "LICENSE",
                                                   NULL};
/* The one source layout: what `kbpkg build` may put in a source artifact (builder/package.c
 * checks every file against it) is what an install extracts. third_party/ holds vendored
 * headers; the license names are the ones the manifest parser looks for. */
const char *const kbi_extract_source_layout[] = {
    "kbpkg.json", "kernel.yaml", "src/",        "include/", "tests/",    "third_party/",
    "LICENSE",    "LICENSE.md",  "LICENSE.txt", "COPYING",  "README.md", NULL};

/* Below this many extracted bytes the ratio check stays quiet: tiny archives of tiny files
 * compress far beyond any sane ratio and are harmless. */
#define RATIO_FLOOR_BYTES (1ULL << 20)
#define COMPONENT_MAX 255
/* With start_writeback, a file's written data is handed to the disk every this many bytes, so
 * writeback of a large file overlaps the decompression of the rest. */
#define WRITEBACK_STEP ((uint64_t)8 << 20)

/* Entry names seen so far, to refuse duplicates: open addressing on an FNV-1a hash. */
typedef struct name_set {
    char **slots;
    size_t cap;
    size_t len;
} name_set;

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void name_set_free(name_set *set)
{
    for (size_t i = 0; i < set->cap; i++)
        free(set->slots[i]);
    free(set->slots);
    memset(set, 0, sizeof(*set));
}

static char **name_set_slot(char **slots, size_t cap, const char *name)
{
    size_t i = (size_t)fnv1a(name) & (cap - 1);
    while (slots[i] && strcmp(slots[i], name) != 0)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

/* 1 when added, 0 when already there, negative on out of memory. */
static int name_set_add(name_set *set, const char *name)
{
    if ((set->len + 1) * 2 > set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 64;
        char **slots = calloc(cap, sizeof(*slots));
        if (!slots)
            return KB_ERR_NOMEM;
        for (size_t i = 0; i < set->cap; i++)
            if (set->slots[i])
                *name_set_slot(slots, cap, set->slots[i]) = set->slots[i];
        free(set->slots);
        set->slots = slots;
        set->cap = cap;
    }
    char **slot = name_set_slot(set->slots, set->cap, name);
    if (*slot)
        return 0;
    if (!(*slot = kbi_strdup(name)))
        return KB_ERR_NOMEM;
    set->len++;
    return 1;
}

/* State of one extraction. */
typedef struct extraction {
    kb_ctx *ctx;
    const char *archive_path;
    const kb_extract_opts *opts;
    uint64_t archive_size;
    uint64_t entries;
    uint64_t declared_bytes; /* sum of header sizes */
    uint64_t written_bytes;  /* bytes actually produced */
    name_set seen;
    /* the regular file being written */
    kb_sha256 *hash;        /* with opts->files; NULL once the data is not one stream */
    uint64_t hashed;        /* bytes hashed = the next offset expected */
    int writeback_fd;       /* with opts->start_writeback, opened on first use; -1 */
    uint64_t writeback_off; /* data before this offset was handed to the disk */
} extraction;

/* A name safe to put in a message: control bytes as \xHH, cut after 200 bytes. */
static void printable_name(char *out, size_t size, const char *name)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p && o + 5 < size; p++) {
        if (o >= 200) {
            snprintf(out + o, size - o, "...");
            return;
        }
        if (*p < 0x20 || *p == 0x7f)
            o += (size_t)snprintf(out + o, size - o, "\\x%02x", *p);
        else
            out[o++] = (char)*p;
    }
    out[o] = '\0';
}

static int refuse(extraction *x, const char *name, const char *fmt, ...) KB_PRINTF(3, 4);
static int refuse(extraction *x, const char *name, const char *fmt, ...)
{
    char shown[256], reason[256];
    printable_name(shown, sizeof(shown), name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    return kbi_error_set_path(x->ctx, KB_ERR_UNSAFE, x->archive_path, 0, 0,
                              "refusing entry '%s' of %s: %s", shown, x->archive_path, reason);
}

static int over_limit(extraction *x, const char *name, const char *limit, uint64_t value)
{
    char shown[256];
    printable_name(shown, sizeof(shown), name);
    return kbi_error_set_path(x->ctx, KB_ERR_LIMIT, x->archive_path, 0, 0,
                              "%s exceeds the %s limit (%llu) at entry '%s'", x->archive_path,
                              limit, (unsigned long long)value, shown);
}

/* Check the name and return it without its trailing '/' (folders), owned. */
static int clean_name(extraction *x, const char *name, char **out)
{
    *out = NULL;
    size_t n = strlen(name);
    size_t max = x->opts->limits.max_path_len;
    if (max && n > max)
        return refuse(x, name, "name is %zu bytes long (limit %zu)", n, max);
    if (n == 0)
        return refuse(x, name, "empty name");
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return refuse(x, name, "name has a control character");
    if (name[0] == '/')
        return refuse(x, name, "absolute path");
    if (name[n - 1] == '/')
        n--;
    const char *p = name, *end = name + n;
    while (p < end) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        size_t len = slash ? (size_t)(slash - p) : (size_t)(end - p);
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return refuse(x, name, "path has a '..' component");
        if (len == 0 || (len == 1 && p[0] == '.'))
            return refuse(x, name, "path has an empty or '.' component");
        if (len > COMPONENT_MAX)
            return refuse(x, name, "a path component is longer than %d bytes", COMPONENT_MAX);
        p += len + 1;
    }
    if (!(*out = kbi_strndup(name, n)))
        return kbi_error_oom(x->ctx);
    return 0;
}

static int check_type(extraction *x, struct archive_entry *ae, const char *name)
{
    if (archive_entry_hardlink(ae))
        return refuse(x, name, "hard link to '%s' (artifacts hold no links)",
                      archive_entry_hardlink(ae));
    switch (archive_entry_filetype(ae)) {
    case AE_IFREG:
    case AE_IFDIR:
        break;
    case AE_IFLNK:
        return refuse(x, name, "symlink to '%s' (artifacts hold no links)",
                      archive_entry_symlink(ae) ? archive_entry_symlink(ae) : "");
    case AE_IFCHR:
        return refuse(x, name, "character device");
    case AE_IFBLK:
        return refuse(x, name, "block device");
    case AE_IFIFO:
        return refuse(x, name, "fifo");
    case AE_IFSOCK:
        return refuse(x, name, "socket");
    default:
        return refuse(x, name, "unknown file type 0%o", (unsigned)archive_entry_filetype(ae));
    }
    mode_t perm = archive_entry_perm(ae);
    if (perm & (S_ISUID | S_ISGID | S_ISVTX))
        return refuse(x, name, "mode 0%o has setuid, setgid or sticky bits", (unsigned)perm);
    return 0;
}

static bool allowed_top(const char *const *allowed, const char *clean, bool is_dir)
{
    if (!allowed)
        return true;
    const char *slash = strchr(clean, '/');
    size_t top = slash ? (size_t)(slash - clean) : strlen(clean);
    for (size_t i = 0; allowed[i]; i++) {
        size_t n = strlen(allowed[i]);
        bool folder = n && allowed[i][n - 1] == '/';
        size_t name_len = folder ? n - 1 : n;
        if (name_len != top || strncmp(allowed[i], clean, top) != 0)
            continue;
        if (folder && (slash || is_dir))
            return true;
        if (!folder && !slash && !is_dir)
            return true; /* a single file, exactly */
    }
    return false;
}

bool kbi_extract_layout_allows(const char *const *allowed, const char *path)
{
    return allowed_top(allowed, path, false);
}

static int check_entry(extraction *x, struct archive_entry *ae, const char *name, char **clean)
{
    const kb_extract_limits *lim = &x->opts->limits;
    if (lim->max_entries && ++x->entries > lim->max_entries)
        return over_limit(x, name, "max_entries", lim->max_entries);
    int rc = clean_name(x, name, clean);
    if (!rc)
        rc = check_type(x, ae, name);
    bool is_dir = archive_entry_filetype(ae) == AE_IFDIR;
    if (!rc && !allowed_top(x->opts->allowed_top, *clean, is_dir))
        rc = refuse(x, name, "not part of the allowed layout");
    if (!rc) {
        int added = name_set_add(&x->seen, *clean);
        if (added < 0)
            rc = kbi_error_oom(x->ctx);
        else if (added == 0)
            rc = refuse(x, name, "duplicate entry");
    }
    uint64_t size = archive_entry_size_is_set(ae) && archive_entry_size(ae) > 0
                        ? (uint64_t)archive_entry_size(ae)
                        : 0;
    if (!rc && lim->max_file_bytes && size > lim->max_file_bytes)
        rc = over_limit(x, name, "max_file_bytes", lim->max_file_bytes);
    if (!rc && lim->max_total_bytes && (x->declared_bytes += size) > lim->max_total_bytes)
        rc = over_limit(x, name, "max_total_bytes", lim->max_total_bytes);
    if (rc) {
        free(*clean);
        *clean = NULL;
    }
    return rc;
}

/* Past the floor, more output than max_ratio times the whole archive is a bomb. */
static int check_ratio(extraction *x, const char *name)
{
    uint64_t ratio = x->opts->limits.max_ratio;
    if (!ratio || x->written_bytes <= RATIO_FLOOR_BYTES)
        return 0;
    uint64_t archive = x->archive_size ? x->archive_size : 1;
    if (x->written_bytes / archive > ratio)
        return over_limit(x, name, "max_ratio", ratio);
    return 0;
}

static int archive_read_failure(extraction *x, struct archive *a)
{
    return kbi_error_set_path(x->ctx, KB_ERR_ARCHIVE, x->archive_path, 0, 0,
                              "cannot read archive %s: %s", x->archive_path,
                              archive_error_string(a) ? archive_error_string(a) : "unknown error");
}

/* A failed write names the file on disk; a full disk (ENOSPC, EDQUOT) or a file size limit
 * (EFBIG from RLIMIT_FSIZE) gets its own code so callers and users can tell it from damage. */
static int write_failure(extraction *x, struct archive *out, const char *what, const char *dest)
{
    int err = archive_errno(out);
    int code = kbi_err_from_errno(err) == KB_ERR_NOT_FOUND ? KB_ERR_IO : kbi_err_from_errno(err);
    const char *why = err == ENOSPC || err == EDQUOT ? "no space left on device"
                      : err == EFBIG                 ? "file too large (file size limit reached)"
                                                     : archive_error_string(out);
    return kbi_error_set_path(x->ctx, code, dest, 0, 0, "cannot %s %s from %s: %s", what, dest,
                              x->archive_path, why ? why : "write failed");
}

/* Ask the kernel to start writing [writeback_off, end) of dest (end 0: to the end of the file)
 * without waiting: every 8 MiB of a large file, and each file as it is finished, so that
 * writeback overlaps the decompression of what follows. Only a hint: durability comes from the
 * installer's fsync pass, which then mostly waits for I/O already under way. */
static void start_writeback(extraction *x, const char *dest, uint64_t end)
{
#ifdef SYNC_FILE_RANGE_WRITE
    if (x->writeback_fd < 0)
        x->writeback_fd = open(dest, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (x->writeback_fd < 0)
        return;
    uint64_t from = x->writeback_off;
    sync_file_range(x->writeback_fd, (off_t)from, end ? (off_t)(end - from) : 0,
                    SYNC_FILE_RANGE_WRITE);
    x->writeback_off = end;
#else
    (void)x;
    (void)dest;
    (void)end;
#endif
}

static void end_writeback(extraction *x)
{
    if (x->writeback_fd >= 0)
        close(x->writeback_fd);
    x->writeback_fd = -1;
    x->writeback_off = 0;
}

/* Record a regular file just written (opts->files), with its digest when it came as one stream. */
static int record_file(extraction *x, const char *clean)
{
    kb_extract_files *f = x->opts->files;
    char hex[65] = "";
    if (x->hash) {
        kbi_sha256_finish(x->hash, hex);
        x->hash = NULL;
    }
    if (kbi_array_grow((void **)&f->items, &f->cap, f->len + 1, sizeof(*f->items)))
        return kbi_error_oom(x->ctx);
    kb_extract_file *e = &f->items[f->len];
    if (!(e->path = kbi_strdup(clean)))
        return kbi_error_oom(x->ctx);
    e->size = x->hashed;
    memcpy(e->sha256, hex, sizeof(hex));
    f->len++;
    return 0;
}

static int copy_data(extraction *x, struct archive *in, struct archive *out, const char *name,
                     const char *dest)
{
    const kb_extract_limits *lim = &x->opts->limits;
    uint64_t file_bytes = 0;
    for (;;) {
        const void *block;
        size_t len;
        la_int64_t offset;
        int r = archive_read_data_block(in, &block, &len, &offset);
        if (r == ARCHIVE_EOF)
            return 0;
        if (r != ARCHIVE_OK)
            return archive_read_failure(x, in);
        file_bytes += len;
        x->written_bytes += len;
        /* Headers can lie (sparse maps, pax sizes): count what really comes out. */
        if (lim->max_file_bytes && file_bytes > lim->max_file_bytes)
            return over_limit(x, name, "max_file_bytes", lim->max_file_bytes);
        if (lim->max_total_bytes && x->written_bytes > lim->max_total_bytes)
            return over_limit(x, name, "max_total_bytes", lim->max_total_bytes);
        int rc = check_ratio(x, name);
        if (rc)
            return rc;
        if (archive_write_data_block(out, block, len, offset) != ARCHIVE_OK)
            return write_failure(x, out, "write", dest);
        if (x->hash && (uint64_t)offset != x->hashed) {
            kbi_sha256_free(x->hash); /* a hole (sparse entry): the caller hashes the file */
            x->hash = NULL;
        }
        if (x->hash) {
            kbi_sha256_update(x->hash, block, len);
            x->hashed += len;
        }
        if (x->opts->start_writeback && (uint64_t)offset + len >= x->writeback_off + WRITEBACK_STEP)
            start_writeback(x, dest, (uint64_t)offset + len);
    }
}

static int open_reader_as(kb_ctx *ctx, struct archive **out, const char *archive_path, bool zip_too)
{
    struct archive *a = archive_read_new();
    if (!a)
        return kbi_error_oom(ctx);
    archive_read_support_filter_all(a);
    archive_read_support_format_tar(a);
    if (zip_too)
        archive_read_support_format_zip(a);
    if (archive_read_open_filename(a, archive_path, 65536) != ARCHIVE_OK) {
        int rc = kbi_error_set_path(
            ctx, kbi_path_exists(archive_path) ? KB_ERR_ARCHIVE : KB_ERR_NOT_FOUND, archive_path, 0,
            0, "cannot open archive %s: %s", archive_path, archive_error_string(a));
        archive_read_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

static int open_reader(kb_ctx *ctx, struct archive **out, const char *archive_path)
{
    return open_reader_as(ctx, out, archive_path, false);
}

/* Write one checked entry below root with a normalized header (no owner, xattrs or ACLs). */
static int extract_entry(extraction *x, struct archive *in, struct archive *out,
                         struct archive_entry *ae, const char *root, const char *clean,
                         const char *name)
{
    char *target = kbi_path_join(root, clean);
    if (!target)
        return kbi_error_oom(x->ctx);
    bool is_dir = archive_entry_filetype(ae) == AE_IFDIR;
    archive_entry_set_pathname(ae, target);
    archive_entry_set_perm(ae, is_dir || (archive_entry_perm(ae) & 0111) ? 0755 : 0644);
    archive_entry_xattr_clear(ae);
    archive_entry_acl_clear(ae);
    archive_entry_set_uid(ae, 0);
    archive_entry_set_gid(ae, 0);
    archive_entry_set_fflags(ae, 0, 0);
    int rc = 0;
    x->hashed = 0;
    if (!is_dir && x->opts->files && !(x->hash = kbi_sha256_new()))
        rc = kbi_error_oom(x->ctx);
    if (!rc && archive_write_header(out, ae) != ARCHIVE_OK) {
        int err = archive_errno(out);
        rc = err == ENOSPC || err == EDQUOT || err == EFBIG
                 ? write_failure(x, out, "create", target)
                 : kbi_error_set_path(x->ctx, KB_ERR_UNSAFE, x->archive_path, 0, 0,
                                      "refusing entry '%s' of %s: %s", clean, x->archive_path,
                                      archive_error_string(out));
    }
    if (!rc && !is_dir)
        rc = copy_data(x, in, out, name, target);
    if (!rc && archive_write_finish_entry(out) != ARCHIVE_OK)
        rc = write_failure(x, out, "finish", target);
    if (!rc && !is_dir && x->opts->start_writeback)
        start_writeback(x, target, 0);
    end_writeback(x);
    if (!rc && !is_dir && x->opts->files)
        rc = record_file(x, clean);
    kbi_sha256_free(x->hash);
    x->hash = NULL;
    free(target);
    return rc;
}

static int extract_all(extraction *x, struct archive *in, struct archive *out, const char *root)
{
    for (;;) {
        struct archive_entry *ae;
        int r = archive_read_next_header(in, &ae);
        if (r == ARCHIVE_EOF)
            return 0;
        if (r != ARCHIVE_OK)
            return archive_read_failure(x, in);
        const char *name = archive_entry_pathname(ae);
        if (!name)
            return refuse(x, "?", "the name cannot be decoded");
        char *owned_name = kbi_strdup(name), *clean = NULL;
        if (!owned_name)
            return kbi_error_oom(x->ctx);
        int rc = check_entry(x, ae, owned_name, &clean);
        if (!rc)
            rc = extract_entry(x, in, out, ae, root, clean, owned_name);
        if (!rc)
            rc = kbi_progress_report(x->ctx, "extract", x->archive_path, x->written_bytes, 0, 0);
        free(clean);
        free(owned_name);
        if (rc)
            return rc;
    }
}

static struct archive *open_disk_writer(void)
{
    struct archive *out = archive_write_disk_new();
    if (!out)
        return NULL;
    /* ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS cannot be set: every entry is rebased under the
     * (absolute) temp folder. check_entry refuses absolute names before that. */
    archive_write_disk_set_options(out, ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                            ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                            ARCHIVE_EXTRACT_NO_OVERWRITE | ARCHIVE_EXTRACT_PERM);
    return out;
}

static int validate_opts(kb_ctx *ctx, const kb_extract_opts *opts)
{
    if (!opts || opts->version != KB_EXTRACT_OPTS_VERSION)
        return kbi_error_set(ctx, KB_ERR_INVALID,
                             "kb_extract_opts: start from KB_EXTRACT_OPTS_INIT (version %u)",
                             KB_EXTRACT_OPTS_VERSION);
    return 0;
}

int kbi_extract_archive(char **out_dir, kb_ctx *ctx, const char *archive_path, const char *parent,
                        const kb_extract_opts *opts)
{
    *out_dir = NULL;
    int rc = validate_opts(ctx, opts);
    if (rc)
        return rc;
    char real_parent[PATH_MAX];
    if (!realpath(parent, real_parent))
        return kbi_error_set_path(ctx, errno == ENOENT ? KB_ERR_NOT_FOUND : KB_ERR_IO, parent, 0, 0,
                                  "cannot use %s as extraction folder: %s", parent,
                                  strerror(errno));
    struct stat st;
    if (stat(archive_path, &st) != 0)
        return kbi_error_set_path(ctx, errno == ENOENT ? KB_ERR_NOT_FOUND : KB_ERR_IO, archive_path,
                                  0, 0, "cannot open archive %s: %s", archive_path,
                                  strerror(errno));
    if (opts->files)
        kbi_extract_files_free(opts->files);
    extraction x = {ctx, archive_path, opts, (uint64_t)st.st_size, 0, 0, 0, {0}, NULL, 0, -1, 0};
    struct archive *in = NULL, *out = NULL;
    char *root = NULL;
    rc = open_reader_as(ctx, &in, archive_path, opts->zip);
    if (!rc)
        rc = kbi_mkdtemp(ctx, &root, real_parent, ".kbpkg-extract-");
    if (!rc && !(out = open_disk_writer()))
        rc = kbi_error_oom(ctx);
    if (!rc)
        rc = extract_all(&x, in, out, root);
    if (!rc && archive_write_close(out) != ARCHIVE_OK)
        rc = kbi_error_set_path(ctx, KB_ERR_IO, root, 0, 0, "cannot finish extraction into %s: %s",
                                root, archive_error_string(out));
    archive_write_free(out);
    archive_read_free(in);
    name_set_free(&x.seen);
    if (!rc)
        rc = kbi_progress_report(ctx, "extract", archive_path, x.written_bytes, x.written_bytes, 1);
    if (rc && opts->files)
        kbi_extract_files_free(opts->files);
    if (rc && root)
        kbi_rm_rf(NULL, root); /* keeps the error that matters */
    if (rc)
        free(root);
    else
        *out_dir = root;
    return rc;
}

void kbi_extract_files_free(kb_extract_files *files)
{
    for (size_t i = 0; i < files->len; i++)
        free(files->items[i].path);
    free(files->items);
    memset(files, 0, sizeof(*files));
}

static int read_data_into(kb_ctx *ctx, struct archive *a, kb_buf *out, const char *archive_path,
                          const char *member, uint64_t max_bytes)
{
    char chunk[65536];
    uint64_t total = 0;
    for (;;) {
        la_ssize_t n = archive_read_data(a, chunk, sizeof(chunk));
        if (n == 0)
            return 0;
        if (n < 0)
            return kbi_error_set_path(ctx, KB_ERR_ARCHIVE, archive_path, 0, 0,
                                      "cannot read '%s' from %s: %s", member, archive_path,
                                      archive_error_string(a));
        total += (uint64_t)n;
        if (max_bytes && total > max_bytes)
            return kbi_error_set_path(ctx, KB_ERR_LIMIT, archive_path, 0, 0,
                                      "'%s' in %s is larger than %llu bytes", member, archive_path,
                                      (unsigned long long)max_bytes);
        if (kbi_buf_append(out, chunk, (size_t)n))
            return kbi_error_oom(ctx);
    }
}

/* What was read must be what an extraction would install: a second entry of the same name
 * (which the extractor refuses) makes the read fail too. */
static int refuse_later_duplicate(kb_ctx *ctx, struct archive *a, const char *archive_path,
                                  const char *member)
{
    for (;;) {
        struct archive_entry *ae;
        int r = archive_read_next_header(a, &ae);
        if (r == ARCHIVE_EOF)
            return 0;
        if (r != ARCHIVE_OK)
            return kbi_error_set_path(ctx, KB_ERR_ARCHIVE, archive_path, 0, 0,
                                      "cannot read archive %s: %s", archive_path,
                                      archive_error_string(a));
        const char *name = archive_entry_pathname(ae);
        if (name && strcmp(name, member) == 0)
            return kbi_error_set_path(ctx, KB_ERR_UNSAFE, archive_path, 0, 0,
                                      "refusing entry '%s' of %s: duplicate entry", member,
                                      archive_path);
    }
}

int kbi_extract_read_member(kb_buf *out, kb_ctx *ctx, const char *archive_path, const char *member,
                            uint64_t max_bytes)
{
    struct archive *a = NULL;
    int rc = open_reader(ctx, &a, archive_path);
    if (rc)
        return rc;
    size_t start = out->len;
    for (;;) {
        struct archive_entry *ae;
        int r = archive_read_next_header(a, &ae);
        if (r == ARCHIVE_EOF) {
            rc = kbi_error_set_path(ctx, KB_ERR_NOT_FOUND, archive_path, 0, 0,
                                    "%s has no member '%s'", archive_path, member);
            break;
        }
        if (r != ARCHIVE_OK) {
            rc = kbi_error_set_path(ctx, KB_ERR_ARCHIVE, archive_path, 0, 0,
                                    "cannot read archive %s: %s", archive_path,
                                    archive_error_string(a));
            break;
        }
        const char *name = archive_entry_pathname(ae);
        if (!name || strcmp(name, member) != 0)
            continue;
        if (archive_entry_filetype(ae) != AE_IFREG || archive_entry_hardlink(ae)) {
            rc = kbi_error_set_path(ctx, KB_ERR_UNSAFE, archive_path, 0, 0,
                                    "'%s' in %s is not a regular file", member, archive_path);
            break;
        }
        rc = read_data_into(ctx, a, out, archive_path, member, max_bytes);
        if (!rc && kbi_buf_grow(out, 0))
            rc = kbi_error_oom(ctx);
        if (!rc)
            rc = refuse_later_duplicate(ctx, a, archive_path, member);
        break;
    }
    archive_read_free(a);
    if (rc) {
        out->len = start;
        if (out->data)
            out->data[start] = '\0';
    }
    return rc;
}

int kbi_extract_list(kb_strv *names, uint64_t **sizes, kb_ctx *ctx, const char *archive_path)
{
    if (sizes)
        *sizes = NULL;
    size_t sizes_cap = 0;
    struct archive *a = NULL;
    int rc = open_reader(ctx, &a, archive_path);
    if (rc)
        return rc;
    for (;;) {
        struct archive_entry *ae;
        int r = archive_read_next_header(a, &ae);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK) {
            rc = kbi_error_set_path(ctx, KB_ERR_ARCHIVE, archive_path, 0, 0,
                                    "cannot read archive %s: %s", archive_path,
                                    archive_error_string(a));
            break;
        }
        const char *name = archive_entry_pathname(ae) ? archive_entry_pathname(ae) : "?";
        bool dir = archive_entry_filetype(ae) == AE_IFDIR;
        char *shown =
            dir && !kbi_str_ends(name, "/") ? kbi_asprintf("%s/", name) : kbi_strdup(name);
        if (kbi_strv_push_owned(names, shown)) { /* frees shown on failure */
            rc = kbi_error_oom(ctx);
            break;
        }
        if (sizes) {
            if (kbi_array_grow((void **)sizes, &sizes_cap, names->len, sizeof(**sizes))) {
                rc = kbi_error_oom(ctx);
                break;
            }
            (*sizes)[names->len - 1] = dir ? 0 : (uint64_t)archive_entry_size(ae);
        }
    }
    archive_read_free(a);
    return rc;
}

int kbi_extract_hash_members(kb_extract_files *out, kb_ctx *ctx, const char *archive_path)
{
    struct archive *a = NULL;
    int rc = open_reader(ctx, &a, archive_path);
    while (!rc) {
        struct archive_entry *ae;
        int r = archive_read_next_header(a, &ae);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK) {
            rc = kbi_error_set_path(ctx, KB_ERR_ARCHIVE, archive_path, 0, 0,
                                    "cannot read archive %s: %s", archive_path,
                                    archive_error_string(a));
            break;
        }
        const char *name = archive_entry_pathname(ae);
        if (!name || archive_entry_filetype(ae) != AE_IFREG || archive_entry_hardlink(ae))
            continue;
        while (kbi_str_starts(name, "./"))
            name += 2;
        kb_sha256 *h = kbi_sha256_new();
        if (!h) {
            rc = kbi_error_oom(ctx);
            break;
        }
        char chunk[65536];
        uint64_t total = 0;
        la_ssize_t n;
        while ((n = archive_read_data(a, chunk, sizeof(chunk))) > 0) {
            kbi_sha256_update(h, chunk, (size_t)n);
            total += (uint64_t)n;
        }
        if (n < 0) {
            kbi_sha256_free(h);
            rc = kbi_error_set_path(ctx, KB_ERR_ARCHIVE, archive_path, 0, 0,
                                    "cannot read '%s' from %s: %s", name, archive_path,
                                    archive_error_string(a));
            break;
        }
        if (kbi_array_grow((void **)&out->items, &out->cap, out->len + 1, sizeof(*out->items))) {
            kbi_sha256_free(h);
            rc = kbi_error_oom(ctx);
            break;
        }
        kb_extract_file *e = &out->items[out->len];
        kbi_sha256_finish(h, e->sha256);
        e->size = total;
        if (!(e->path = kbi_strdup(name)))
            rc = kbi_error_oom(ctx);
        else
            out->len++;
    }
    archive_read_free(a);
    return rc;
}
