/* An export signature's one-line text from its JSON form; kb_signature_text (public). */
#include "model/signature_text.h"
#include "core/internal.h"
#include "kbpkg/manifest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static int text_arg(kb_buf *b, json_t *arg)
{
    const char *name = json_string_value(json_object_get(arg, "name"));
    const char *type = json_string_value(json_object_get(arg, "type"));
    const char *dir = json_string_value(json_object_get(arg, "dir"));
    if (!name || !type)
        return -1;
    if (strcmp(type, "stream") == 0)
        return kbi_buf_puts(b, name);
    int rc = kbi_buf_printf(b, "%s: %s%s%s", name, dir ? dir : "", dir ? " " : "", type);
    json_t *shape = json_object_get(arg, "shape");
    size_t i;
    json_t *e;
    json_array_foreach(shape, i, e)
    {
        if (!json_is_string(e))
            return -1;
        rc = rc ? rc : kbi_buf_printf(b, "%s%s", i ? ", " : "[", json_string_value(e));
    }
    return rc ? rc : json_array_size(shape) ? kbi_buf_puts(b, "]") : 0;
}

char *kbi_export_sig_text_json(const char *name, const void *json_sig)
{
    json_t *sig = (json_t *)json_sig;
    const char *returns = json_string_value(json_object_get(sig, "returns"));
    json_t *args = json_object_get(sig, "args");
    if (!returns || !json_is_array(args))
        return NULL;
    kb_buf b = KB_BUF_INIT;
    int rc = kbi_buf_printf(&b, "%s(", name);
    size_t i;
    json_t *arg;
    json_array_foreach(args, i, arg)
    {
        rc = rc ? rc : i ? kbi_buf_puts(&b, ", ") : 0;
        rc = rc ? rc : text_arg(&b, arg);
    }
    rc = rc ? rc : kbi_buf_printf(&b, ") -> %s", returns);
    if (rc) {
        kbi_buf_free(&b);
        return NULL;
    }
    return b.data;
}

KB_EXTERN int kb_signature_text(char **out, kb_ctx *ctx, const char *signatures_json,
                                const char *export_name)
{
    *out = NULL;
    json_error_t err;
    json_t *root = json_loads(signatures_json ? signatures_json : "", 0, &err);
    json_t *sig = json_object_get(root, export_name);
    int rc = 0;
    if (!root)
        rc = kbi_error_set(ctx, KB_ERR_PARSE, "signatures JSON, line %d: %s", err.line, err.text);
    else if (!sig)
        rc = kbi_error_set(ctx, KB_ERR_NOT_FOUND, "no signature for export '%s'", export_name);
    else if (!(*out = kbi_export_sig_text_json(export_name, sig)))
        rc = kbi_error_set(ctx, KB_ERR_PARSE, "the signature of export '%s' is malformed",
                           export_name);
    json_decref(root);
    return rc;
}
