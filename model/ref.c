/* Parsing of package references (org/name@constraint). */
#include "model/ref.h"

#include <stdlib.h>
#include <string.h>

int kbi_pkgref_parse(kb_ctx *ctx, kb_pkgref *out, const char *text)
{
    memset(out, 0, sizeof(*out));
    const char *at = strchr(text, '@');
    out->name = at ? kbi_strndup(text, (size_t)(at - text)) : kbi_strdup(text);
    out->constraint_text = kbi_strdup(at && at[1] ? at + 1 : "*");
    if (!out->name || !out->constraint_text) {
        kbi_pkgref_clear(out);
        return kbi_error_oom(ctx);
    }
    int rc = kbi_pkg_name_check(ctx, out->name);
    if (rc) {
        kbi_pkgref_clear(out);
        return rc;
    }
    rc = kbi_constraint_parse(ctx, &out->constraint, out->constraint_text);
    if (rc) {
        kbi_error_prefix(ctx, "%s", text);
        kbi_pkgref_clear(out);
    }
    return rc;
}

void kbi_pkgref_clear(kb_pkgref *r)
{
    free(r->name);
    free(r->constraint_text);
    kbi_constraint_free(r->constraint);
    memset(r, 0, sizeof(*r));
}
