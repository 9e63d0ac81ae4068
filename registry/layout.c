/* The OCI image layout transport: oci-layout, index.json (tags by ref.name), blobs/sha256/. */
#include "registry/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LAYOUT_FILE "oci-layout"
#define LAYOUT_TEXT "{\"imageLayoutVersion\":\"1.0.0\"}"

/* Byte offsets [start, end) in index.json's text; start SCAN_NONE when absent. */
typedef struct span {
    size_t start, end;
} span;

/* One entry of index.json's "manifests": the whole value, its "digest" string and its
 * annotations' ref name string (the last of each, absent when none is a plain string). They
 * only pick which entries to parse: jansson's reading of the entry decides, so a repeated key
 * can cost a parse but never hide an entry. */
typedef struct memo_entry {
    span whole, digest, ref;
} memo_entry;

/* index.json as last read through this handle (see each_entry). */
typedef struct index_memo {
    int fd;         /* held open, so no later file can get its inode; -1: nothing read */
    struct stat st; /* identity and state when read */
    kb_buf text;
    memo_entry *entries;
    size_t count;
    size_t list_open, list_close; /* where "manifests"' '[' and ']' are (when scanned) */
    bool scanned;                 /* false: the scanner gave up on this text, jansson reads it */
    json_t *parsed;               /* jansson's reading, kept once made (only when not scanned) */
} index_memo;

typedef struct layout {
    char *root;
    char *index_path;
    char *lock_path;
    char *blob_dir;
    index_memo memo;
    bool swept; /* stale temp files removed by this handle already */
} layout;

static layout *L(kb_registry *r)
{
    return r->impl;
}

static int io_fail(kb_ctx *ctx, const char *what, const char *path, int err)
{
    return kbi_error_errno(ctx, err, what, path);
}

static char *blob_path(kb_registry *r, const char *digest)
{
    return kbi_asprintf("%s/%s", L(r)->blob_dir, kbi_digest_hex(digest));
}

/* The layout must say it is one, in the version we understand. */
static int check_layout_file(kb_registry *r)
{
    char *path = kbi_path_join(L(r)->root, LAYOUT_FILE);
    if (!path)
        return kbi_error_oom(r->ctx);
    kb_buf b = KB_BUF_INIT;
    int rc = kbi_read_file(r->ctx, path, &b);
    if (!rc) {
        json_error_t jerr;
        json_t *j = json_loadb(b.data, b.len, 0, &jerr);
        const char *v = json_string_value(json_object_get(j, "imageLayoutVersion"));
        if (!j)
            rc = kbi_error_set_path(r->ctx, KB_ERR_PARSE, path, (unsigned)jerr.line,
                                    (unsigned)jerr.column, "%s: %s", path, jerr.text);
        else if (!v || strcmp(v, "1.0.0") != 0)
            rc = kbi_error_set_path(r->ctx, KB_ERR_REGISTRY, path, 0, 0,
                                    "%s: unsupported imageLayoutVersion '%s' (expected 1.0.0)",
                                    path, v ? v : "");
        json_decref(j);
    }
    kbi_buf_free(&b);
    free(path);
    return rc;
}

/* Create the layout on first write; leave an existing one alone. */
static int ensure_layout(kb_registry *r)
{
    int rc = kbi_mkdir_p(r->ctx, L(r)->blob_dir, 0755);
    if (rc)
        return rc;
    char *path = kbi_path_join(L(r)->root, LAYOUT_FILE);
    if (!path)
        return kbi_error_oom(r->ctx);
    if (!kbi_path_exists(path))
        rc = kbi_write_file_atomic(r->ctx, path, LAYOUT_TEXT, strlen(LAYOUT_TEXT), 0644);
    else
        rc = check_layout_file(r);
    free(path);
    return rc;
}

static int layout_ping(kb_registry *r)
{
    if (!kbi_is_dir(L(r)->root))
        return kbi_error_set_path(r->ctx, KB_ERR_NOT_FOUND, L(r)->root, 0, 0,
                                  "no OCI layout folder at %s", L(r)->root);
    return check_layout_file(r);
}

/* index.json's bytes as an index with a manifests array (added when missing). */
static int parse_index(json_t **out, kb_registry *r, const char *data, size_t len)
{
    *out = NULL;
    json_error_t jerr;
    json_t *j = json_loadb(data, len, 0, &jerr);
    if (!j)
        return kbi_error_set_path(r->ctx, KB_ERR_PARSE, L(r)->index_path, (unsigned)jerr.line,
                                  (unsigned)jerr.column, "%s:%d:%d: %s", L(r)->index_path,
                                  jerr.line, jerr.column, jerr.text);
    json_t *manifests = json_object_get(j, "manifests");
    if (!manifests) {
        manifests = json_array();
        json_object_set_new(j, "manifests", manifests);
    }
    if (!json_is_object(j) || !json_is_array(manifests)) {
        json_decref(j);
        return kbi_error_set_path(r->ctx, KB_ERR_PARSE, L(r)->index_path, 0, 0,
                                  "%s: not an OCI image index (no manifests array)",
                                  L(r)->index_path);
    }
    *out = j;
    return 0;
}

/* index.json, or an empty index when the layout has none yet. */
static int load_index(json_t **out, kb_registry *r)
{
    *out = NULL;
    if (!kbi_path_exists(L(r)->index_path)) {
        *out = json_pack("{s:i, s:s, s:[]}", "schemaVersion", 2, "mediaType", KB_MT_OCI_INDEX,
                         "manifests");
        return *out ? 0 : kbi_error_oom(r->ctx);
    }
    kb_buf b = KB_BUF_INIT;
    int rc = kbi_read_file(r->ctx, L(r)->index_path, &b);
    if (!rc)
        rc = parse_index(out, r, b.data, b.len);
    kbi_buf_free(&b);
    return rc;
}

static const char *entry_ref_name(json_t *entry)
{
    return json_string_value(
        json_object_get(json_object_get(entry, "annotations"), KB_OCI_REF_NAME));
}

/* ---- looking entries up without building the whole index.json ----
 *
 * A layout keeps every tag of every repository in index.json: with 10,000 packages that is
 * 20,000 entries and 4.5 MB, and jansson needs 0.15-0.4 s to build and free it, three times
 * per resolution (tags, the version's index, its signature tag). A lookup wants the entries
 * of one repository or digest, so a scanner checks the JSON syntax of the whole file in one
 * pass without building anything, and notes for each "manifests" entry where it lies and
 * where its digest and ref name strings are. A lookup compares those and parses only the
 * entries that match. The scan is kept per registry handle until index.json changes.
 *
 * The scanner takes the plain subset that kbpkg and other tools write: ASCII strings without
 * escapes, numbers without exponents. Anything else (an escape, UTF-8, an exponent, nesting
 * deeper than 64, or JSON that is not valid) makes it give up, and the whole file goes
 * through jansson as before, so results and errors are the same either way: with no escapes,
 * a string's bytes in the file are the string. */

#define SCAN_MAX_DEPTH 64
#define SCAN_MAX_NUMBER 18 /* characters: never near int64 or double overflow */
#define SCAN_NONE ((size_t)-1)

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A string at *p (its opening quote) without escapes, control or non-ASCII bytes: advances
 * past it and gives its content as [*start, *end). */
static bool scan_string(const char **p, const char *end, size_t *start, size_t *stop,
                        const char *base)
{
    const char *c = *p + 1;
    unsigned bad = 0;
    while (c < end && *c != '"') {
        unsigned char u = (unsigned char)*c++;
        bad |= (unsigned)(u < 0x20) | (unsigned)(u >= 0x80) | (unsigned)(u == '\\');
    }
    if (c >= end || bad)
        return false;
    *start = (size_t)(*p + 1 - base);
    *stop = (size_t)(c - base);
    *p = c + 1;
    return true;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?, short: what jansson reads without overflow. */
static bool scan_number(const char **p, const char *end)
{
    const char *c = *p;
    if (c < end && *c == '-')
        c++;
    if (c >= end || !is_digit(*c))
        return false;
    if (*c == '0')
        c++;
    else
        while (c < end && is_digit(*c))
            c++;
    if (c < end && *c == '.') {
        if (++c >= end || !is_digit(*c))
            return false;
        while (c < end && is_digit(*c))
            c++;
    }
    if (c - *p > SCAN_MAX_NUMBER || (c < end && (*c == 'e' || *c == 'E' || is_digit(*c))))
        return false;
    *p = c;
    return true;
}

static bool scan_literal(const char **p, const char *end, const char *word, size_t n)
{
    if ((size_t)(end - *p) < n || memcmp(*p, word, n) != 0)
        return false;
    *p += n;
    return true;
}

/* The keys the scanner looks for, told apart once per key read. */
enum { KEY_OTHER, KEY_MANIFESTS, KEY_DIGEST, KEY_ANNOTATIONS, KEY_REF_NAME };

static int key_kind(const char *key, size_t len)
{
    static const struct {
        const char *name;
        int kind;
    } keys[] = {{"manifests", KEY_MANIFESTS},
                {"digest", KEY_DIGEST},
                {"annotations", KEY_ANNOTATIONS},
                {KB_OCI_REF_NAME, KEY_REF_NAME}};
    for (size_t i = 0; i < KB_ARRAY_LEN(keys); i++)
        if (len == strlen(keys[i].name) && memcmp(key, keys[i].name, len) == 0)
            return keys[i].kind;
    return KEY_OTHER;
}

/* Scan state: what the next token may be. */
enum { WANT_VALUE, WANT_VALUE_OR_CLOSE, WANT_KEY, WANT_KEY_OR_CLOSE, WANT_COLON, WANT_NEXT };

/* Note one more entry; false when out of memory. */
static bool add_entry(index_memo *m, size_t *cap, size_t start)
{
    if (kbi_array_grow((void **)&m->entries, cap, m->count + 1, sizeof(*m->entries)))
        return false;
    m->entries[m->count++] = (memo_entry){{start, SCAN_NONE}, {SCAN_NONE, 0}, {SCAN_NONE, 0}};
    return true;
}

/* Fill m->entries from m->text. Depths: 1 the document, 2 inside "manifests", 3 inside an
 * entry, 4 inside its annotations. False when the scanner cannot vouch for the text. */
static bool scan_index(index_memo *m)
{
    const char *base = m->text.data, *p = base, *end = base + m->text.len;
    char stack[SCAN_MAX_DEPTH];
    int depth = 0, want = WANT_VALUE;
    bool in_manifests = false, seen_manifests = false, done = false;
    size_t cap = 0;
    int key = KEY_OTHER;         /* the last key read */
    bool in_annotations = false; /* the current entry's annotations object is open */
    m->count = 0;
    while (!done) {
        while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
            p++;
        if (p >= end)
            return false;
        char c = *p;
        bool closing = false;
        size_t s0, s1;
        switch (want) {
        case WANT_KEY_OR_CLOSE:
        case WANT_KEY:
            if (want == WANT_KEY_OR_CLOSE && c == '}') {
                closing = true;
                break;
            }
            if (c != '"' || !scan_string(&p, end, &s0, &s1, base))
                return false;
            key = key_kind(base + s0, s1 - s0);
            if (depth == 1 && key == KEY_MANIFESTS && seen_manifests)
                return false; /* twice: jansson's path decides which one counts */
            want = WANT_COLON;
            continue;
        case WANT_COLON:
            if (c != ':')
                return false;
            p++;
            want = WANT_VALUE;
            continue;
        case WANT_NEXT:
            if (c == ',') {
                p++;
                want = stack[depth - 1] == '{' ? WANT_KEY : WANT_VALUE;
                continue;
            }
            if (c != (stack[depth - 1] == '{' ? '}' : ']'))
                return false;
            closing = true;
            break;
        default: /* a value */
            if (want == WANT_VALUE_OR_CLOSE && c == ']') {
                closing = true;
                break;
            }
            if (depth == 0 && c != '{')
                return false;
            bool manifests_value = depth == 1 && key == KEY_MANIFESTS;
            if (manifests_value && c != '[')
                return false; /* jansson's path names the problem */
            if (in_manifests && depth == 2 && !add_entry(m, &cap, (size_t)(p - base)))
                return false;
            if (c == '{' || c == '[') {
                if (depth == SCAN_MAX_DEPTH)
                    return false;
                if (manifests_value) {
                    in_manifests = seen_manifests = true;
                    m->list_open = (size_t)(p - base);
                }
                if (in_manifests && depth == 3 && c == '{' && key == KEY_ANNOTATIONS)
                    in_annotations = true;
                stack[depth++] = c;
                p++;
                want = c == '{' ? WANT_KEY_OR_CLOSE : WANT_VALUE_OR_CLOSE;
                continue;
            }
            if (c == '"') {
                if (!scan_string(&p, end, &s0, &s1, base))
                    return false;
                if (in_manifests && depth == 3 && key == KEY_DIGEST)
                    m->entries[m->count - 1].digest = (span){s0, s1};
                if (in_annotations && depth == 4 && key == KEY_REF_NAME)
                    m->entries[m->count - 1].ref = (span){s0, s1};
            } else if (!(c == 't'   ? scan_literal(&p, end, "true", 4)
                         : c == 'f' ? scan_literal(&p, end, "false", 5)
                         : c == 'n' ? scan_literal(&p, end, "null", 4)
                                    : scan_number(&p, end))) {
                return false;
            }
            break;
        }
        if (closing) {
            if (in_manifests && depth == 2)
                m->list_close = (size_t)(p - base);
            p++;
            depth--;
            if (in_manifests && depth == 1)
                in_manifests = false;
            if (in_annotations && depth == 3)
                in_annotations = false;
        }
        /* a value ended at depth: an entry when it was a child of "manifests" */
        if (in_manifests && depth == 2)
            m->entries[m->count - 1].whole.end = (size_t)(p - base);
        if (depth == 0)
            done = true;
        want = WANT_NEXT;
    }
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p == end;
}

static void memo_clear(index_memo *m)
{
    if (m->fd >= 0)
        close(m->fd);
    kbi_buf_free(&m->text);
    free(m->entries);
    json_decref(m->parsed);
    memset(m, 0, sizeof(*m));
    m->fd = -1;
}

static bool same_file_state(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Bring the memo up to date with index.json: kept while the file is the one read (same
 * inode, which the held fd keeps from being reused, same size and times; kbpkg replaces the
 * file by rename, never in place), else read and scanned again. *absent: no index.json. */
static int memo_refresh(kb_registry *r, bool *absent)
{
    index_memo *m = &L(r)->memo;
    struct stat now;
    *absent = false;
    if (stat(L(r)->index_path, &now) != 0) {
        memo_clear(m);
        if (errno == ENOENT)
            return *absent = true, 0;
        return io_fail(r->ctx, "stat", L(r)->index_path, errno);
    }
    if (m->fd >= 0 && same_file_state(&now, &m->st))
        return 0;
    memo_clear(m);
    int fd = open(L(r)->index_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) /* removed since the stat */
            return *absent = true, 0;
        return io_fail(r->ctx, "open", L(r)->index_path, errno);
    }
    int rc = fstat(fd, &m->st) == 0 ? 0 : io_fail(r->ctx, "stat", L(r)->index_path, errno);
    if (!rc && kbi_buf_grow(&m->text, (size_t)m->st.st_size + 1))
        rc = kbi_error_oom(r->ctx);
    while (!rc) {
        if (m->text.cap - m->text.len < 2 && kbi_buf_grow(&m->text, 65536)) {
            rc = kbi_error_oom(r->ctx);
            break;
        }
        ssize_t n = read(fd, m->text.data + m->text.len, m->text.cap - m->text.len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = io_fail(r->ctx, "read", L(r)->index_path, errno);
        if (n <= 0)
            break;
        m->text.len += (size_t)n;
        m->text.data[m->text.len] = '\0';
    }
    if (rc) {
        close(fd);
        memo_clear(m);
        return rc;
    }
    m->fd = fd;
    m->scanned = m->text.len && scan_index(m);
    return 0;
}

/* How a lookup picks entries from the scan: by ref name ("<repo>:" prefix) or by digest. */
typedef struct entry_key {
    const char *text;
    bool is_digest; /* else a ref-name prefix */
} entry_key;

static bool entry_may_match(const index_memo *m, const memo_entry *e, const entry_key *k)
{
    const span *s = k->is_digest ? &e->digest : &e->ref;
    size_t n = strlen(k->text);
    if (s->start == SCAN_NONE || s->end - s->start < n)
        return false;
    if (k->is_digest && s->end - s->start != n)
        return false;
    return memcmp(m->text.data + s->start, k->text, n) == 0;
}

/* Called for each candidate entry: 0 goes on, 1 stops, a negative kb_err stops with it. */
typedef int (*entry_fn)(json_t *entry, void *arg);

/* Call fn for every "manifests" entry of index.json that key may select, in file order,
 * parsed one by one (fn checks the exact match). When the scanner gave up, every entry of
 * the whole index, parsed by jansson, is offered. */
static int each_entry(kb_registry *r, const entry_key *key, entry_fn fn, void *arg)
{
    bool absent;
    int rc = memo_refresh(r, &absent);
    if (rc || absent)
        return rc;
    index_memo *m = &L(r)->memo;
    if (m->scanned) {
        for (size_t i = 0; !rc && i < m->count; i++) {
            const memo_entry *e = &m->entries[i];
            if (!entry_may_match(m, e, key))
                continue;
            json_t *entry =
                json_loadb(m->text.data + e->whole.start, e->whole.end - e->whole.start, 0, NULL);
            rc = entry ? fn(entry, arg) : KB_ERR_NOMEM; /* it scanned: only memory fails */
            json_decref(entry);
        }
    } else {
        if (!m->parsed)
            rc = parse_index(&m->parsed, r, m->text.data, m->text.len);
        size_t i;
        json_t *entry;
        json_array_foreach(json_object_get(m->parsed, "manifests"), i, entry)
        {
            if (!rc)
                rc = fn(entry, arg);
        }
    }
    if (rc == KB_ERR_NOMEM)
        return kbi_error_oom(r->ctx);
    return rc < 0 ? rc : 0;
}

/* Does entry's ref name say "<repo>:<something>"? Then the something, borrowed. */
static const char *entry_tag_of(json_t *entry, const char *repo)
{
    const char *name = entry_ref_name(entry);
    size_t rlen = strlen(repo);
    if (name && strncmp(name, repo, rlen) == 0 && name[rlen] == ':')
        return name + rlen + 1;
    return NULL;
}

typedef struct tag_query {
    const char *repo;
    const char *tag;
    json_t *found; /* owned */
} tag_query;

static int match_tag(json_t *entry, void *arg)
{
    tag_query *q = arg;
    const char *tag = entry_tag_of(entry, q->repo);
    if (!tag || strcmp(tag, q->tag) != 0)
        return 0;
    q->found = json_incref(entry); /* the first one, as other tools read it */
    return 1;
}

typedef struct digest_query {
    const char *digest;
    json_t *found; /* owned */
} digest_query;

static int match_digest(json_t *entry, void *arg)
{
    digest_query *q = arg;
    const char *d = json_string_value(json_object_get(entry, "digest"));
    if (d && strcmp(d, q->digest) == 0) {
        json_decref(q->found); /* the last one */
        q->found = json_incref(entry);
    }
    return 0;
}

typedef struct tags_query {
    const char *repo;
    kb_strv *out;
} tags_query;

static int collect_tag(json_t *entry, void *arg)
{
    tags_query *q = arg;
    const char *tag = entry_tag_of(entry, q->repo);
    if (tag && !kbi_strv_contains(q->out, tag) && kbi_strv_push(q->out, tag))
        return KB_ERR_NOMEM;
    return 0;
}

static int layout_blob_exists(uint64_t *size_out, kb_registry *r, const char *repo,
                              const char *digest)
{
    char *path = blob_path(r, digest);
    if (!path)
        return kbi_error_oom(r->ctx);
    struct stat st;
    int rc = 0;
    if (stat(path, &st) != 0)
        rc = errno == ENOENT ? kbi_error_set_path(r->ctx, KB_ERR_NOT_FOUND, path, 0, 0,
                                                  "blob %s not found in %s", digest, L(r)->root)
                             : io_fail(r->ctx, "stat", path, errno);
    else
        *size_out = (uint64_t)st.st_size;
    free(path);
    return rc;
}

static int copy_fd_to_writer(kb_registry *r, int fd, const char *path, kb_blob_writer *w)
{
    char chunk[65536];
    if (w->written && lseek(fd, (off_t)w->written, SEEK_SET) < 0)
        return io_fail(r->ctx, "seek", path, errno);
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return io_fail(r->ctx, "read", path, errno);
        if (n == 0)
            return 0;
        int rc = kbi_blob_writer_write(w, chunk, (size_t)n);
        if (rc)
            return rc;
    }
}

static int layout_blob_get(kb_registry *r, const char *repo, const char *digest, kb_blob_writer *w)
{
    char *path = blob_path(r, digest);
    if (!path)
        return kbi_error_oom(r->ctx);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc;
    if (fd < 0) {
        rc = errno == ENOENT ? kbi_error_set_path(r->ctx, KB_ERR_NOT_FOUND, path, 0, 0,
                                                  "blob %s not found in %s", digest, L(r)->root)
                             : io_fail(r->ctx, "open", path, errno);
    } else {
        struct stat st;
        rc = 0;
        kbi_log(r->ctx, KB_LOG_DEBUG, "read %s%s", path,
                w->written ? " (resuming a partial download)" : "");
        bool sized = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
        if (sized && !w->expected)
            w->expected = (uint64_t)st.st_size;
        /* a resumed prefix longer than the blob cannot be part of it */
        if (sized && w->written > (uint64_t)st.st_size)
            rc = kbi_blob_writer_truncate(w);
        if (!rc)
            rc = copy_fd_to_writer(r, fd, path, w);
        close(fd);
    }
    free(path);
    return rc;
}

/* Copy a file into the blob store, checking it still hashes to digest. */
static int store_file_blob(kb_registry *r, const char *digest, const char *src)
{
    char *dest = blob_path(r, digest);
    if (!dest)
        return kbi_error_oom(r->ctx);
    int fd = open(src, O_RDONLY | O_CLOEXEC);
    int rc;
    if (fd < 0) {
        rc = io_fail(r->ctx, "open", src, errno);
    } else {
        kb_blob_writer w;
        rc = kbi_blob_writer_open(&w, r->ctx, dest, 0, false);
        if (!rc) {
            rc = copy_fd_to_writer(r, fd, src, &w);
            if (!rc)
                rc = kbi_blob_writer_commit(&w, digest, src);
            else
                kbi_blob_writer_close(&w, false);
        }
        close(fd);
    }
    free(dest);
    return rc;
}

static int layout_blob_put(kb_registry *r, const char *repo, const char *digest, uint64_t size,
                           const char *path, const void *data, const char *what)
{
    (void)what; /* a local copy reports no progress */
    int rc = ensure_layout(r);
    if (rc)
        return rc;
    if (path)
        return store_file_blob(r, digest, path);
    char *dest = blob_path(r, digest);
    if (!dest)
        return kbi_error_oom(r->ctx);
    rc = kbi_write_file_atomic(r->ctx, dest, data, (size_t)size, 0644);
    free(dest);
    return rc;
}

static int read_manifest_blob(kb_registry_manifest *m, kb_registry *r, const char *digest)
{
    char *path = blob_path(r, digest);
    if (!path)
        return kbi_error_oom(r->ctx);
    struct stat st;
    int rc = 0;
    if (stat(path, &st) != 0)
        rc = errno == ENOENT ? kbi_error_set_path(r->ctx, KB_ERR_NOT_FOUND, path, 0, 0,
                                                  "manifest %s not found in %s", digest, L(r)->root)
                             : io_fail(r->ctx, "stat", path, errno);
    else if ((uint64_t)st.st_size > KB_MANIFEST_MAX)
        rc = kbi_error_set_path(r->ctx, KB_ERR_LIMIT, path, 0, 0,
                                "manifest %s is %lld bytes, more than the %zu allowed", digest,
                                (long long)st.st_size, KB_MANIFEST_MAX);
    kb_buf b = KB_BUF_INIT;
    if (!rc)
        rc = kbi_read_file(r->ctx, path, &b);
    if (!rc && !kbi_buf_grow(&b, 0)) {
        m->len = b.len;
        m->data = kbi_buf_detach(&b);
    } else if (!rc) {
        rc = kbi_error_oom(r->ctx);
    }
    kbi_buf_free(&b);
    if (!rc) {
        char hex[65];
        kbi_sha256_hex(m->data, m->len, hex);
        if (strcmp(hex, kbi_digest_hex(digest)) != 0)
            rc = kbi_error_set_path(r->ctx, KB_ERR_DIGEST, path, 0, 0,
                                    "digest mismatch for manifest %s: expected %s, got sha256:%s",
                                    path, digest, hex);
    }
    free(path);
    return rc;
}

/* The media type an index entry records, else the one the JSON declares. */
static char *manifest_media_type(json_t *entry, const kb_registry_manifest *m)
{
    const char *mt = json_string_value(json_object_get(entry, "mediaType"));
    if (mt)
        return kbi_strdup(mt);
    json_t *j = json_loadb(m->data, m->len, 0, NULL);
    mt = json_string_value(json_object_get(j, "mediaType"));
    char *copy = kbi_strdup(mt ? mt : KB_MT_OCI_MANIFEST);
    json_decref(j);
    return copy;
}

static int layout_manifest_get(kb_registry_manifest **out, kb_registry *r, const char *repo,
                               const char *reference)
{
    json_t *entry = NULL;
    const char *digest = reference;
    int rc;
    if (!kbi_str_starts(reference, "sha256:")) {
        char *prefix = kbi_asprintf("%s:", repo);
        entry_key key = {prefix, false};
        tag_query q = {repo, reference, NULL};
        rc = prefix ? each_entry(r, &key, match_tag, &q) : kbi_error_oom(r->ctx);
        free(prefix);
        if (rc)
            return rc;
        entry = q.found;
        digest = json_string_value(json_object_get(entry, "digest"));
        if (!entry || !kbi_digest_valid(digest)) {
            json_decref(entry);
            return kbi_error_set_path(r->ctx, KB_ERR_NOT_FOUND, L(r)->index_path, 0, 0,
                                      "%s:%s not found in %s", repo, reference, L(r)->root);
        }
    } else {
        digest_query q = {reference, NULL};
        entry_key key = {reference, true};
        rc = each_entry(r, &key, match_digest, &q);
        if (rc)
            return rc;
        entry = q.found;
    }
    kb_registry_manifest *m = calloc(1, sizeof(*m));
    rc = m ? read_manifest_blob(m, r, digest) : kbi_error_oom(r->ctx);
    if (!rc && !(m->media_type = manifest_media_type(entry, m)))
        rc = kbi_error_oom(r->ctx);
    json_decref(entry);
    if (rc) {
        kbi_registry_manifest_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

/* Drop every entry named "<repo>:<tag>" (other tools may have written several). */
static void remove_tag(json_t *manifests, const char *repo, const char *tag)
{
    size_t rlen = strlen(repo);
    for (size_t i = json_array_size(manifests); i-- > 0;) {
        const char *name = entry_ref_name(json_array_get(manifests, i));
        if (name && strncmp(name, repo, rlen) == 0 && name[rlen] == ':' &&
            strcmp(name + rlen + 1, tag) == 0)
            json_array_remove(manifests, i);
    }
}

/* The index.json entry tagging a manifest "<repo>:<tag>". */
static json_t *tag_entry(const char *repo, const kb_tag_put *put, const char *digest)
{
    char *name = kbi_asprintf("%s:%s", repo, put->tag);
    json_t *entry =
        name ? json_pack("{s:s, s:s, s:I, s:{s:s}}", "mediaType", put->media_type, "digest", digest,
                         "size", (json_int_t)put->len, "annotations", KB_OCI_REF_NAME, name)
             : NULL;
    free(name);
    return entry;
}

/* Is the scanned entry tagged by one of the batch's tags? */
static bool entry_retagged(const index_memo *m, const memo_entry *e, const char *repo,
                           const kb_tag_put *puts, size_t n)
{
    if (e->ref.start == SCAN_NONE)
        return false;
    const char *ref = m->text.data + e->ref.start;
    size_t len = e->ref.end - e->ref.start, rlen = strlen(repo);
    if (len <= rlen || memcmp(ref, repo, rlen) != 0 || ref[rlen] != ':')
        return false;
    for (size_t i = 0; i < n; i++)
        if (len - rlen - 1 == strlen(puts[i].tag) &&
            !memcmp(ref + rlen + 1, puts[i].tag, len - rlen - 1))
            return true;
    return false;
}

/* The new index.json text from the scanned one: the same bytes around the manifests list, its
 * entries kept as they are but for the retagged ones, the batch's entries appended. Copying spans
 * costs a memcpy of the file where parsing and printing it with jansson cost 0.2 s at 10,000
 * packages. */
static int splice_tags(kb_buf *out, kb_registry *r, const char *repo, const kb_tag_put *puts,
                       const char *const *digests, size_t n)
{
    const index_memo *m = &L(r)->memo;
    bool first = true, oom = kbi_buf_append(out, m->text.data, m->list_open + 1) != 0;
    for (size_t i = 0; !oom && i < m->count; i++) {
        const memo_entry *e = &m->entries[i];
        if (entry_retagged(m, e, repo, puts, n))
            continue;
        oom = (!first && kbi_buf_append(out, ",", 1)) ||
              kbi_buf_append(out, m->text.data + e->whole.start, e->whole.end - e->whole.start);
        first = false;
    }
    for (size_t i = 0; !oom && i < n; i++) {
        json_t *entry = tag_entry(repo, &puts[i], digests[i]);
        char *text = entry ? json_dumps(entry, JSON_COMPACT) : NULL;
        oom = !text || (!first && kbi_buf_append(out, ",", 1)) ||
              kbi_buf_append(out, text, strlen(text));
        first = false;
        free(text);
        json_decref(entry);
    }
    if (!oom)
        oom = kbi_buf_append(out, m->text.data + m->list_close, m->text.len - m->list_close) != 0;
    return oom ? kbi_error_oom(r->ctx) : 0;
}

/* The same through jansson, for a text the scanner gave up on or a layout without index.json. */
static int rewrite_tags(kb_buf *out, kb_registry *r, const char *repo, const kb_tag_put *puts,
                        const char *const *digests, size_t n)
{
    json_t *index = NULL;
    int rc = load_index(&index, r);
    json_t *manifests = json_object_get(index, "manifests");
    for (size_t i = 0; !rc && i < n; i++)
        remove_tag(manifests, repo, puts[i].tag);
    for (size_t i = 0; !rc && i < n; i++) {
        json_t *entry = tag_entry(repo, &puts[i], digests[i]);
        if (!entry || json_array_append_new(manifests, entry) != 0)
            rc = kbi_error_oom(r->ctx);
    }
    char *text = rc ? NULL : json_dumps(index, JSON_COMPACT);
    if (!rc && (!text || kbi_buf_append(out, text, strlen(text))))
        rc = kbi_error_oom(r->ctx);
    free(text);
    json_decref(index);
    return rc;
}

/* Point each "<repo>:<tag>" of the batch at its manifest, replacing any entry of that name, in
 * one read-modify-write of index.json under the layout's lock. */
static int layout_tags_put(kb_registry *r, const char *repo, const kb_tag_put *puts,
                           const char *const *digests, size_t n)
{
    int rc = ensure_layout(r);
    kb_lock lock;
    if (!rc)
        rc = kbi_lock_acquire(r->ctx, &lock, L(r)->lock_path);
    if (rc)
        return rc;
    /* Publishes killed mid-write left temp files: the first tag write of a handle, under the
     * lock every publish takes, removes those of writers that are gone (once per handle: a
     * readdir of the blobs, measured at 46-57 ms per 10,000 blobs on the 2-core VM under load). */
    if (!L(r)->swept) {
        L(r)->swept = true;
        kbi_sweep_stale_tmp(r->ctx, L(r)->root, NULL);
        kbi_sweep_stale_tmp(r->ctx, L(r)->blob_dir, NULL);
    }
    bool absent = false;
    kb_buf text = KB_BUF_INIT;
    rc = memo_refresh(r, &absent);
    if (!rc && !absent && L(r)->memo.scanned)
        rc = splice_tags(&text, r, repo, puts, digests, n);
    else if (!rc)
        rc = rewrite_tags(&text, r, repo, puts, digests, n);
    if (!rc)
        rc = kbi_write_file_atomic(r->ctx, L(r)->index_path, text.data, text.len, 0644);
    memo_clear(&L(r)->memo); /* replaced; the next lookup reads it again anyway */
    kbi_buf_free(&text);
    kbi_lock_release(&lock);
    return rc;
}

static int layout_manifest_put(kb_registry *r, const char *repo, const char *reference,
                               const char *media_type, const void *data, size_t len,
                               const char *digest)
{
    int rc = layout_blob_put(r, repo, digest, len, NULL, data, NULL);
    if (rc || kbi_str_starts(reference, "sha256:"))
        return rc;
    kb_tag_put put = {reference, media_type, data, len};
    return layout_tags_put(r, repo, &put, &digest, 1);
}

static int layout_tags(kb_strv *out, kb_registry *r, const char *repo)
{
    char *prefix = kbi_asprintf("%s:", repo);
    entry_key key = {prefix, false};
    tags_query q = {repo, out};
    int rc = prefix ? each_entry(r, &key, collect_tag, &q) : kbi_error_oom(r->ctx);
    free(prefix);
    if (!rc && out->len == 0)
        rc = kbi_error_set_path(r->ctx, KB_ERR_NOT_FOUND, L(r)->index_path, 0, 0,
                                "repository %s not found in %s", repo, L(r)->root);
    return rc;
}

/* Keep "<repo>" of a ref name "<repo>:<tag>" when it is a repository name. */
static int catalog_add(kb_registry *r, kb_strv *out, const char *name, size_t len)
{
    const char *colon = NULL;
    for (size_t i = len; i-- > 0 && !colon;)
        if (name[i] == ':')
            colon = name + i;
    if (!colon)
        return 0; /* other tools' untagged or oddly named entries */
    char *repo = kbi_strndup(name, (size_t)(colon - name));
    if (!repo)
        return kbi_error_oom(r->ctx);
    if (!kbi_repo_valid(repo)) {
        free(repo);
        return 0;
    }
    return kbi_strv_push_owned(out, repo) ? kbi_error_oom(r->ctx) : 0;
}

/* Sorted, then duplicates dropped in one pass: a check per name against the list so far made
 * `kbpkg search` on a 10,000-package layout quadratic. */
static void strv_sort_unique(kb_strv *v)
{
    kbi_strv_sort(v);
    size_t kept = 0;
    for (size_t i = 0; i < v->len; i++) {
        if (kept && strcmp(v->items[kept - 1], v->items[i]) == 0)
            free(v->items[i]);
        else
            v->items[kept++] = v->items[i];
    }
    v->len = kept;
}

static int layout_catalog(kb_strv *out, kb_registry *r)
{
    bool absent = false;
    int rc = memo_refresh(r, &absent);
    const index_memo *m = &L(r)->memo;
    if (!rc && !absent && m->scanned) {
        for (size_t i = 0; !rc && i < m->count; i++)
            if (m->entries[i].ref.start != SCAN_NONE)
                rc = catalog_add(r, out, m->text.data + m->entries[i].ref.start,
                                 m->entries[i].ref.end - m->entries[i].ref.start);
    } else if (!rc && !absent) {
        json_t *index = NULL;
        rc = parse_index(&index, r, m->text.data, m->text.len);
        size_t i;
        json_t *entry;
        json_array_foreach(json_object_get(index, "manifests"), i, entry)
        {
            const char *name = entry_ref_name(entry);
            if (!rc && name)
                rc = catalog_add(r, out, name, strlen(name));
        }
        json_decref(index);
    }
    if (!rc)
        strv_sort_unique(out);
    return rc;
}

static void layout_free(kb_registry *r)
{
    layout *l = L(r);
    if (!l)
        return;
    free(l->root);
    free(l->index_path);
    free(l->lock_path);
    free(l->blob_dir);
    memo_clear(&l->memo);
    free(l);
    r->impl = NULL;
}

static const kb_registry_ops layout_ops = {
    .kind = "layout",
    .blob_exists = layout_blob_exists,
    .blob_get = layout_blob_get,
    .blob_put = layout_blob_put,
    .manifest_get = layout_manifest_get,
    .manifest_put = layout_manifest_put,
    .tags_put = layout_tags_put,
    .tags = layout_tags,
    .catalog = layout_catalog,
    .ping = layout_ping,
    .free = layout_free,
};

int kbi_layout_init(kb_registry *r)
{
    layout *l = calloc(1, sizeof(*l));
    if (!l)
        return kbi_error_oom(r->ctx);
    l->memo.fd = -1;
    r->impl = l;
    r->ops = &layout_ops;
    l->root = kbi_strdup(r->url.path);
    l->index_path = kbi_path_join(r->url.path, "index.json");
    l->lock_path = kbi_path_join(r->url.path, "index.json.lock");
    l->blob_dir = kbi_path_join(r->url.path, "blobs/sha256");
    if (!l->root || !l->index_path || !l->lock_path || !l->blob_dir)
        return kbi_error_oom(r->ctx);
    return 0;
}
