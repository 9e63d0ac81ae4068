/* Package references: "org/name", "org/name@^1.2", "org/name@1.0.0". */
#ifndef KB_CACHE_REF_H
#define KB_CACHE_REF_H

#include "core/internal.h"
#include "core/semver.h"

typedef struct kb_pkgref {
    char *name;            /* org/name */
    char *constraint_text; /* "*" when none was given */
    kb_constraint *constraint;
} kb_pkgref;

int kb_pkgref_parse(kb_ctx *ctx, kb_pkgref *out, const char *text);
void kb_pkgref_clear(kb_pkgref *r);
/* org/name: lowercase [a-z0-9._-], exactly one slash, no empty part. */
bool kb_pkg_name_valid(const char *name);

#endif
