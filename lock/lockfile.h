/* Internal side of the lockfile: the structs behind kb_lockfile, shared by lockfile.c and sync.c.
 */
#ifndef KB_LOCK_LOCKFILE_H
#define KB_LOCK_LOCKFILE_H

#include "core/internal.h"
#include "kbpkg/lock.h"
#include "registry/pkgindex.h"

/* One pinned artifact (or the source, target "source"). */
typedef struct kb_lock_pin {
    char *target;
    char *manifest_digest;
    char *layer_digest;
    uint64_t size;
} kb_lock_pin;

typedef struct kb_lock_package {
    char *name;
    char *constraint;
    char *version;
    char *index_digest;
    kb_lock_pin *pins; /* sorted by target */
    size_t count, cap;
} kb_lock_package;

struct kb_lockfile {
    char *registry;
    kb_lock_package *packages; /* sorted by name */
    size_t count, cap;
};

const kb_lock_pin *kbi_lock_package_pin(const kb_lock_package *p, const char *target);
/* Every pinned layer digest (for gc's keep list), appended to out without duplicates. */
int kbi_lockfile_pinned_blobs(kb_strv *out, const kb_lockfile *lock);

#endif
