/* Semantic versions (semver 2.0; pure libc, in model/ with the other rules) and
 * constraints: 1.2.3, ^1.2, ~1.2, >=1.0,<2, *. */
#ifndef KB_MODEL_SEMVER_H
#define KB_MODEL_SEMVER_H

#include "core/internal.h"

typedef struct kb_semver {
    uint64_t major, minor, patch;
    char pre[64];   /* pre-release without '-', "" when none */
    char build[64]; /* build metadata without '+', ignored in ordering */
} kb_semver;

int kbi_semver_parse(kb_ctx *ctx, kb_semver *out, const char *text);
void kbi_semver_format(const kb_semver *v, char *buf, size_t size);
/* "1.2.3" or "1.2.3-rc.1": no build metadata, which must not reach tags or file names. */
void kbi_pkg_version(const kb_semver *v, char *out, size_t size);
/* <0, 0, >0 per semver 2.0 precedence (pre-releases ordered by identifiers). */
int kbi_semver_cmp(const kb_semver *a, const kb_semver *b);

typedef struct kb_constraint kb_constraint;
int kbi_constraint_parse(kb_ctx *ctx, kb_constraint **out, const char *text);
/* Pre-releases match only when the constraint names a pre-release of the same x.y.z. */
bool kbi_constraint_match(const kb_constraint *c, const kb_semver *v);
void kbi_constraint_free(kb_constraint *c);

#endif
