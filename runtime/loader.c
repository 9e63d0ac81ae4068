/* kb_kernel_open: pick the best installed target for this host, check that its library is the one
 * install verified, dlopen it by descriptor, check its ABI; a per-ctx memo of what each ref
 * resolved to makes a warm open a lookup, one stat and one open + fstat. */
#define _GNU_SOURCE
#include "resolve/host.h"
#include "install/install.h"
#include "model/ref.h"
#include "cache/store.h"
#include "kbpkg/kernel.h"
#include "kbpkg/kernel_abi.h"
#include "trust/admission.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct kb_kernel {
    void *handle;
    struct link_map *map; /* the library's own object: kb_kernel_sym hands out only its symbols */
    kb_installed install;
    char *reason;
};

typedef struct candidate {
    const kb_installed *p;
    kb_semver version;
    kb_compat compat;
} candidate;

/* Highest version first, then the target ranking install and sync use. */
static bool better(const candidate *a, const candidate *b)
{
    int v = kbi_semver_cmp(&a->version, &b->version);
    if (v != 0)
        return v > 0;
    return kbi_target_rank_cmp(a->p->target, &a->compat, b->p->target, &b->compat) < 0;
}

static int pick_installed(candidate *best, kb_ctx *ctx, const kb_installed *list, size_t n,
                          const kb_pkgref *ref, const kb_host *host)
{
    kb_compat_opts opts;
    kbi_host_compat_opts(&opts, ctx);
    best->p = NULL;
    for (size_t i = 0; i < n; i++) {
        candidate c = {&list[i], {0}, {0}};
        kb_target t;
        if (kbi_semver_parse(NULL, &c.version, list[i].version) != 0 ||
            !kbi_constraint_match(ref->constraint, &c.version) ||
            kbi_target_parse(NULL, &t, list[i].target) != 0)
            continue;
        kbi_compat_check_host(&c.compat, &t, host, &opts);
        if (c.compat.fit == KB_FIT_NONE)
            continue;
        if (!best->p || better(&c, best))
            *best = c;
    }
    return best->p ? 0 : KB_ERR_NOT_FOUND;
}

/* symbol as the library itself defines it: dlsym on a handle also searches the library's
 * dependencies (libc's "system" for a record that lists it), which kb_kernel_sym never hands out.
 */
static void *own_symbol(const kb_kernel *k, const char *symbol)
{
    void *sym = dlsym(k->handle, symbol);
    Dl_info info;
    struct link_map *map = NULL;
    if (!sym || !dladdr1(sym, &info, (void **)&map, RTLD_DL_LINKMAP) || map != k->map)
        return NULL;
    return sym;
}

/* ---- dlopen by descriptor ---- */

typedef struct phdr_find {
    uintptr_t base;
    const char *name;
    const ElfW(Phdr) * phdr;
    size_t count;
} phdr_find;

static int find_phdr(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    phdr_find *f = arg;
    if (info->dlpi_addr != f->base || !info->dlpi_name || strcmp(info->dlpi_name, f->name) != 0)
        return 0;
    f->phdr = info->dlpi_phdr;
    f->count = info->dlpi_phnum;
    return 1;
}

/* Is the object behind h the file fd? Its first loaded page (ELF header, program headers, the
 * build-id note), never written by relocation, against the file's. */
static bool handle_is_file(void *h, int fd)
{
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
        return false;
    phdr_find f = {(uintptr_t)lm->l_addr, lm->l_name, NULL, 0};
    dl_iterate_phdr(find_phdr, &f);
    for (size_t i = 0; i < f.count; i++) {
        if (f.phdr[i].p_type != PT_LOAD || f.phdr[i].p_offset != 0)
            continue;
        char page[4096];
        size_t len = f.phdr[i].p_filesz < sizeof(page) ? f.phdr[i].p_filesz : sizeof(page);
        const char *mem = (const char *)(lm->l_addr + f.phdr[i].p_vaddr);
        return pread(fd, page, len, 0) == (ssize_t)len && memcmp(page, mem, len) == 0;
    }
    return false;
}

/*
 * dlopen the file behind fd (checked by the caller) through /proc/self/fd/N, so a file swapped
 * under the path after the check is never the one loaded. glibc first matches a dlopen name
 * against the names of loaded objects: a library once opened as /proc/self/fd/N keeps that name
 * after fd N is closed and reused. So a name that answers (RTLD_NOLOAD) is taken only when the
 * object behind it is this file (first page compared); else the fd is duplicated to another
 * number and tried again.
 */
static void *dlopen_fd(kb_ctx *ctx, int fd, const char *path, int *rc)
{
    int use = fd;
    void *h = NULL;
    *rc = 0;
    for (int tries = 0; tries < 16 && !h && !*rc; tries++) {
        char name[48];
        snprintf(name, sizeof(name), "/proc/self/fd/%d", use);
        /* RTLD_LOCAL: two versions of one package can live side by side. */
        h = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (h && !handle_is_file(h, fd)) {
            dlclose(h);
            h = NULL;
            int next = fcntl(fd, F_DUPFD_CLOEXEC, use + 1);
            if (use != fd)
                close(use);
            use = next;
            if (use < 0)
                *rc = kbi_error_set_path(ctx, KB_ERR_LOAD, path, 0, 0, "cannot load %s: dup: %s",
                                         path, strerror(errno));
            continue;
        }
        if (!h && !(h = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
            *rc = kbi_error_set_path(ctx, KB_ERR_LOAD, path, 0, 0, "cannot load %s: %s", path,
                                     dlerror());
    }
    if (use != fd && use >= 0)
        close(use);
    if (!h && !*rc)
        *rc = kbi_error_set_path(ctx, KB_ERR_LOAD, path, 0, 0,
                                 "cannot load %s: every /proc/self/fd name tried is taken by "
                                 "another loaded object",
                                 path);
    return h;
}

static int check_library(kb_ctx *ctx, kb_kernel *k)
{
    const kb_installed *p = &k->install;
    const kbpkg_kernel_info_t *(*info_fn)(void) = NULL;
    *(void **)&info_fn = dlsym(k->handle, "kbpkg_kernel_info");
    if (!info_fn)
        return kbi_error_set_path(ctx, KB_ERR_ABI, p->library, 0, 0,
                                  "%s does not export kbpkg_kernel_info()", p->library);
    const kbpkg_kernel_info_t *info = info_fn();
    if (!info || info->abi != KBPKG_KERNEL_ABI)
        return kbi_error_set_path(ctx, KB_ERR_ABI, p->library, 0, 0,
                                  "%s: kernel ABI %d, this kbpkg loads ABI %d", p->library,
                                  info ? info->abi : -1, KBPKG_KERNEL_ABI);
    const char *fields[][3] = {{"name", info->name, p->name},
                               {"version", info->version, p->version},
                               {"target", info->target, p->target}};
    for (size_t i = 0; i < KB_ARRAY_LEN(fields); i++)
        if (!fields[i][1] || strcmp(fields[i][1], fields[i][2]) != 0)
            return kbi_error_set_path(
                ctx, KB_ERR_ABI, p->library, 0, 0, "%s reports %s '%s', the install says '%s'",
                p->library, fields[i][0], fields[i][1] ? fields[i][1] : "(null)", fields[i][2]);
    for (size_t i = 0; i < p->exports.len; i++)
        if (!own_symbol(k, p->exports.items[i]))
            return kbi_error_set_path(ctx, KB_ERR_ABI, p->library, 0, 0,
                                      "%s does not export %s, which %s@%s declares", p->library,
                                      p->exports.items[i], p->name, p->version);
    return 0;
}

/* Check the install whose record is moved in (*rec is cleared) against the signature policy
 * (check_policy: on a cold open; a memoized one passed it) and its library against what install
 * verified, then dlopen it by descriptor and check its ABI. */
static int load_record(kb_kernel **out, kb_ctx *ctx, kb_installed *rec, const char *reason,
                       bool check_policy, unsigned flags)
{
    kb_kernel *k = calloc(1, sizeof(*k));
    if (!k) {
        kbi_installed_clear(rec);
        return kbi_error_oom(ctx);
    }
    k->install = *rec;
    memset(rec, 0, sizeof(*rec));
    k->reason = kbi_strdup(reason);
    kb_installed *p = &k->install;
    int rc = check_policy
                 ? kbi_trust_check_installed(ctx, &p->admission, p->name, p->version,
                                             p->index_digest, (flags & KB_OPEN_ALLOW_UNSIGNED) != 0)
                 : 0;
    int fd = rc ? -1 : kbi_cache_open_library(p, ctx);
    if (fd < 0 && !rc)
        rc = fd == KB_ERR_LOAD ? kbi_error_set_path(ctx, KB_ERR_LOAD, p->dir, 0, 0,
                                                    "%s holds no lib/lib*.so", p->dir)
                               : fd;
    if (!rc)
        k->handle = dlopen_fd(ctx, fd, p->library, &rc);
    if (fd >= 0)
        close(fd);
    if (!rc && (dlinfo(k->handle, RTLD_DI_LINKMAP, &k->map) != 0 || !k->map))
        rc = kbi_error_set_path(ctx, KB_ERR_LOAD, p->library, 0, 0, "cannot load %s: %s",
                                p->library, dlerror());
    if (!rc)
        rc = check_library(ctx, k);
    if (rc) {
        kb_kernel_close(k);
        return rc;
    }
    *out = k;
    return 0;
}

static int open_installed(kb_kernel **out, kb_ctx *ctx, kb_cache *cache, const kb_pkgref *ref,
                          const kb_host *host, unsigned flags)
{
    kb_installed *list = NULL;
    size_t n = 0;
    int rc = kbi_cache_list(&list, &n, cache, ref->name);
    if (rc)
        return rc;
    candidate best;
    rc = pick_installed(&best, ctx, list, n, ref, host);
    if (rc)
        rc = kbi_error_set(ctx, KB_ERR_NOT_FOUND,
                           n ? "no installed target of %s@%s fits this machine (%zu installed)"
                             : "%s@%s is not installed",
                           ref->name, ref->constraint_text, n);
    else /* the list forgets the record it hands over */
        rc = load_record(out, ctx, (kb_installed *)best.p, best.compat.reason, true, flags);
    kbi_installed_list_free(list, n);
    return rc;
}

/* ---- the per-ctx memo: ref text -> the record it resolved to ---- */

/* Entries are valid while pkgs/.generation is as it was before the scans that made them: every
 * install and uninstall appends to it after its rename (cache/store.h). More refs than this in one
 * ctx start the memo over. */
#define MEMO_MAX_ENTRIES 4096

typedef struct memo_entry {
    char *ref; /* as passed to kb_kernel_open; NULL: empty slot */
    kb_installed chosen;
    char *reason;
    unsigned flags; /* the open's flags: one without KB_OPEN_ALLOW_UNSIGNED is not served an
                       entry admitted with it */
} memo_entry;

typedef struct open_memo {
    char *gen_path;   /* <cache.dir>/pkgs/.generation */
    kb_cache_gen gen; /* as it was before the scans of every entry */
    memo_entry *slots;
    size_t cap, len;
} open_memo;

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void memo_clear(open_memo *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].ref) {
            free(m->slots[i].ref);
            kbi_installed_clear(&m->slots[i].chosen);
            free(m->slots[i].reason);
        }
    free(m->slots);
    m->slots = NULL;
    m->cap = m->len = 0;
}

static void memo_free(void *p)
{
    open_memo *m = p;
    memo_clear(m);
    free(m->gen_path);
    free(m);
}

static open_memo *memo_of(kb_ctx *ctx)
{
    if (ctx->open_memo)
        return ctx->open_memo;
    open_memo *m = calloc(1, sizeof(*m));
    if (!m ||
        !(m->gen_path = kbi_path_join(kbi_config_str(ctx, "cache.dir"), KB_CACHE_GENERATION))) {
        free(m);
        return NULL;
    }
    ctx->open_memo = m;
    ctx->open_memo_free = memo_free;
    return m;
}

static memo_entry *memo_slot(memo_entry *slots, size_t cap, const char *ref)
{
    size_t i = (size_t)fnv1a(ref) & (cap - 1);
    while (slots[i].ref && strcmp(slots[i].ref, ref) != 0)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

/* Remember what ref resolved to; gen is the generation read before the scan that found it. A
 * failure only costs the next open a scan. */
static void memo_put(kb_ctx *ctx, const char *ref, const kb_cache_gen *gen, const kb_kernel *k,
                     unsigned flags)
{
    open_memo *m = memo_of(ctx);
    if (!m)
        return;
    if (!kbi_cache_generation_equal(&m->gen, gen) || m->len >= MEMO_MAX_ENTRIES) {
        memo_clear(m);
        m->gen = *gen;
    }
    if ((m->len + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        memo_entry *slots = calloc(cap, sizeof(*slots));
        if (!slots)
            return;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].ref)
                *memo_slot(slots, cap, m->slots[i].ref) = m->slots[i];
        free(m->slots);
        m->slots = slots;
        m->cap = cap;
    }
    memo_entry *e = memo_slot(m->slots, m->cap, ref);
    if (e->ref)
        return; /* already there (from the same generation) */
    memo_entry n = {kbi_strdup(ref), {0}, kbi_strdup(k->reason), flags};
    if (!n.ref || !n.reason || kbi_installed_copy(&n.chosen, &k->install) != 0) {
        free(n.ref);
        free(n.reason);
        return;
    }
    *e = n;
    m->len++;
}

static void read_generation(kb_cache_gen *out, const kb_cache *cache)
{
    char *path = kbi_path_join(cache->root, KB_CACHE_GENERATION);
    kbi_cache_generation_read(out, path ? path : "");
    free(path);
}

/* A warm open: the memo knows ref and nothing was installed or uninstalled since. Returns false
 * when the caller must resolve (a miss, a changed generation, or a remembered install that no
 * longer loads: then the memo starts over). */
static bool open_memoized(kb_kernel **out, kb_ctx *ctx, const char *ref, unsigned flags)
{
    open_memo *m = ctx->open_memo;
    if (!m || !m->len)
        return false;
    kb_cache_gen now;
    kbi_cache_generation_read(&now, m->gen_path);
    if (!kbi_cache_generation_equal(&now, &m->gen)) {
        memo_clear(m);
        return false;
    }
    memo_entry *e = memo_slot(m->slots, m->cap, ref);
    if (!e->ref || ((e->flags & KB_OPEN_ALLOW_UNSIGNED) && !(flags & KB_OPEN_ALLOW_UNSIGNED)))
        return false;
    kb_installed rec;
    if (kbi_installed_copy(&rec, &e->chosen) == 0 &&
        load_record(out, ctx, &rec, e->reason, false, flags) == 0) {
        /* a re-hash (same bytes, new identity) updated the copy: keep the next check cheap */
        e->chosen.lib_id = (*out)->install.lib_id;
        return true;
    }
    /* removed or changed behind kbpkg's back: resolve from the records again */
    kb_ctx_clear_error(ctx);
    memo_clear(m);
    return false;
}

KB_EXTERN int kb_kernel_open(kb_kernel **out, kb_ctx *ctx, const char *ref_text, unsigned flags)
{
    if (!ctx || !ref_text || !out)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_kernel_open: NULL argument");
    *out = NULL;
    if (open_memoized(out, ctx, ref_text, flags))
        return 0;
    kb_pkgref ref;
    int rc = kbi_pkgref_parse(ctx, &ref, ref_text);
    if (rc)
        return rc;
    const kb_probe_report *probe = NULL;
    kb_cache *cache = NULL;
    kb_cache_gen gen = {0};
    rc = kbi_host_get(&probe, ctx);
    if (!rc)
        rc = kbi_cache_open(&cache, ctx);
    if (!rc) {
        read_generation(&gen, cache); /* before the listing: a later change shows */
        rc = open_installed(out, ctx, cache, &ref, &probe->host, flags);
    }
    if (rc == KB_ERR_NOT_FOUND && (flags & KB_OPEN_INSTALL)) {
        kb_install_options o = KB_INSTALL_OPTIONS_INIT;
        o.allow_build = (flags & KB_OPEN_BUILD) != 0;
        o.allow_unsigned = (flags & KB_OPEN_ALLOW_UNSIGNED) != 0;
        kb_install_result *res = NULL;
        rc = kb_install_package(&res, ctx, ref_text, &o);
        kb_install_result_free(res);
        if (!rc) {
            read_generation(&gen, cache);
            rc = open_installed(out, ctx, cache, &ref, &probe->host, flags);
        }
    }
    if (!rc)
        memo_put(ctx, ref_text, &gen, *out, flags);
    kbi_cache_close(cache);
    kbi_pkgref_clear(&ref);
    return rc;
}

KB_EXTERN void *kb_kernel_sym(const kb_kernel *k, const char *symbol)
{
    if (!k || !symbol || !kbi_strv_contains(&k->install.exports, symbol))
        return NULL;
    return own_symbol(k, symbol);
}

KB_EXTERN const char *kb_kernel_target(const kb_kernel *k)
{
    return k ? k->install.target : NULL;
}

KB_EXTERN const char *kb_kernel_name(const kb_kernel *k)
{
    return k ? k->install.name : NULL;
}

KB_EXTERN const char *kb_kernel_version(const kb_kernel *k)
{
    return k ? k->install.version : NULL;
}

KB_EXTERN const char *kb_kernel_path(const kb_kernel *k)
{
    return k ? k->install.dir : NULL;
}

KB_EXTERN const char *kb_kernel_reason(const kb_kernel *k)
{
    return k ? k->reason : NULL;
}

KB_EXTERN void kb_kernel_close(kb_kernel *k)
{
    if (!k)
        return;
    if (k->handle)
        dlclose(k->handle);
    kbi_installed_clear(&k->install);
    free(k->reason);
    free(k);
}
