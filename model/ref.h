/* Package references: "org/name", "org/name@^1.2", "org/name@1.0.0". */
#ifndef KB_MODEL_REF_H
#define KB_MODEL_REF_H

#include "core/internal.h"
#include "model/semver.h"

typedef struct kb_pkgref {
    char *name;            /* org/name */
    char *constraint_text; /* "*" when none was given */
    kb_constraint *constraint;
} kb_pkgref;

int kbi_pkgref_parse(kb_ctx *ctx, kb_pkgref *out, const char *text);
void kbi_pkgref_clear(kb_pkgref *r);
/* Names (model/name.c), the one grammar every module checks with. A repository is the OCI
 * spec's: '/'-separated components [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*, 255 bytes at most. */
#define KB_REPO_NAME_MAX 255
#define KB_PKG_NAME_RULE                                                                           \
    "org/name: two lowercase parts of letters and digits, joined inside a part by '.', '_', "      \
    "'__' or dashes"
bool kbi_repo_valid(const char *repo);
/* A package: a repository of exactly two components (org/name). */
bool kbi_pkg_name_valid(const char *name);
/* 0, or KB_ERR_INVALID naming name and the rule. */
int kbi_pkg_name_check(kb_ctx *ctx, const char *name);

#endif
