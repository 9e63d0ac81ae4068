/* Parsing of package references (org/name@constraint). */
#include "model/ref.h"

#include <stdlib.h>
#include <string.h>

int kb_pkgref_parse(kb_ctx *ctx, kb_pkgref *out, const char *text)
{
    memset(out, 0, sizeof(*out));
    const char *at = strchr(text, '@');
    out->name = at ? kb_strndup(text, (size_t)(at - text)) : kb_strdup(text);
    out->constraint_text = kb_strdup(at && at[1] ? at + 1 : "*");
    if (!out->name || !out->constraint_text) {
        kb_pkgref_clear(out);
        return kb_error_oom(ctx);
    }
    int rc = kb_pkg_name_check(ctx, out->name);
    if (rc) {
        kb_pkgref_clear(out);
        return rc;
    }
    rc = kb_constraint_parse(ctx, &out->constraint, out->constraint_text);
    if (rc) {
        kb_error_prefix(ctx, "%s", text);
        kb_pkgref_clear(out);
    }
    return rc;
}

void kb_pkgref_clear(kb_pkgref *r)
{
    free(r->name);
    free(r->constraint_text);
    kb_constraint_free(r->constraint);
    memset(r, 0, sizeof(*r));
}
