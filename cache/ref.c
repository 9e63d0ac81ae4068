/* Parsing of package references (org/name@constraint). */
#include "cache/ref.h"

#include <stdlib.h>
#include <string.h>

static bool name_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
           ch == '-';
}

bool kb_pkg_name_valid(const char *name)
{
    const char *slash = strchr(name, '/');
    if (!slash || slash == name || !slash[1] || strchr(slash + 1, '/'))
        return false;
    for (const char *p = name; *p; p++)
        if (p != slash && !name_char(*p))
            return false;
    return name[0] != '.' && slash[1] != '.';
}

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
    if (!kb_pkg_name_valid(out->name)) {
        int rc = kb_error_set(ctx, KB_ERR_INVALID,
                              "'%s' is not a package name (org/name, lowercase letters, digits, "
                              "'.', '_' or '-')",
                              out->name);
        kb_pkgref_clear(out);
        return rc;
    }
    int rc = kb_constraint_parse(ctx, &out->constraint, out->constraint_text);
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
