/* trust.require_signatures: turn a verdict into admit, warn or refuse for one package index. */
#include "registry/registry.h"
#include "trust/trust_internal.h"

#include <string.h>

typedef enum { REQUIRE_NEVER, REQUIRE_REMOTE, REQUIRE_ALWAYS } require_mode;

static int read_mode(kb_ctx *ctx, require_mode *out)
{
    static const char *const names[] = {"never", "remote", "always"};
    const char *value = kb_config_str(ctx, "trust.require_signatures");
    for (size_t i = 0; i < KB_ARRAY_LEN(names); i++)
        if (strcmp(value, names[i]) == 0)
            return *out = (require_mode)i, 0;
    return kb_error_set(ctx, KB_ERR_CONFIG,
                        "trust.require_signatures: '%s' is not one of never, remote, always",
                        value);
}

/* Refuse: "<pkg>@<ver> (index <digest>) <what>". */
KB_PRINTF(5, 6)
static int refuse(kb_ctx *ctx, const char *package, const char *version, const char *index_digest,
                  const char *fmt, ...)
{
    kb_buf what = KB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    int rc = kb_buf_vprintf(&what, fmt, ap);
    va_end(ap);
    if (rc)
        return kb_error_oom(ctx);
    rc = kb_error_set(ctx, KB_ERR_SIGNATURE, "%s@%s (index %s) %s", package, version, index_digest,
                      what.data);
    kb_buf_free(&what);
    return rc;
}

static int refuse_signed(kb_ctx *ctx, const char *package, const char *version,
                         const char *index_digest, const kb_trust_verdict *v)
{
    const char *key = v->key_id[0] ? v->key_id : "(unknown)";
    switch (v->status) {
    case KB_TRUST_REVOKED_KEY:
        return refuse(ctx, package, version, index_digest,
                      "is signed by key %s which is revoked: %s", key, v->detail);
    case KB_TRUST_UNTRUSTED_KEY:
        return refuse(ctx, package, version, index_digest,
                      "is signed by key %s which is not trusted here (add it with 'kbpkg key "
                      "trust FILE')",
                      key);
    case KB_TRUST_EXPIRED:
        return refuse(ctx, package, version, index_digest,
                      "has a signature by key %s that has expired (%s): the registry may be "
                      "serving stale content",
                      key, v->detail);
    case KB_TRUST_MISMATCH:
        return refuse(ctx, package, version, index_digest,
                      "carries a signature by key %s made for something else (%s): possible "
                      "rollback or substitution",
                      key, v->detail);
    case KB_TRUST_UNKNOWN_TYPE:
        return refuse(ctx, package, version, index_digest,
                      "has a signature kbpkg does not understand (%s)", v->detail);
    default:
        return refuse(ctx, package, version, index_digest,
                      "has a bad signature claiming key %s (%s): the content may have been "
                      "tampered with",
                      key, v->detail);
    }
}

KB_EXTERN int kb_trust_check(kb_ctx *ctx, kb_registry *registry, const char *package,
                             const char *version, const char *index_digest, bool allow_unsigned)
{
    require_mode mode = REQUIRE_ALWAYS; /* fail closed if read_mode ever returns early */
    int rc = read_mode(ctx, &mode);
    if (rc)
        return rc;
    if (mode == REQUIRE_NEVER) {
        kb_log(ctx, KB_LOG_DEBUG, "%s@%s: signatures not checked (trust.require_signatures=never)",
               package, version);
        return 0;
    }
    bool required = mode == REQUIRE_ALWAYS || strcmp(kb_registry_kind(registry), "layout") != 0;
    kb_trust_verdict v;
    rc = kb_trust_verify_index(ctx, registry, package, version, index_digest, &v);
    if (rc)
        return rc;
    switch (v.status) {
    case KB_TRUST_SIGNED_TRUSTED:
        kb_log(ctx, KB_LOG_DEBUG, "%s@%s (index %s): signed by trusted key %s", package, version,
               index_digest, v.key_id);
        return 0;
    case KB_TRUST_UNSIGNED:
        if (!required)
            return 0;
        if (allow_unsigned) {
            kb_event_emit(ctx, KB_EVENT_WARNING, package,
                          "%s@%s (index %s) is not signed; admitted because unsigned packages "
                          "are allowed for this operation",
                          package, version, index_digest);
            return 0;
        }
        return refuse(ctx, package, version, index_digest,
                      "is not signed, and trust.require_signatures=%s requires a signature from "
                      "this registry (publishers sign with a key from 'kbpkg key generate'; "
                      "'kbpkg key trust FILE' trusts their public key here; --allow-unsigned "
                      "takes it unsigned)",
                      kb_config_str(ctx, "trust.require_signatures"));
    case KB_TRUST_UNTRUSTED_KEY:
        /* where signatures are optional, a stranger's signature is no worse than none */
        if (!required) {
            kb_event_emit(ctx, KB_EVENT_WARNING, package,
                          "%s@%s (index %s) is signed by key %s, which is not trusted here",
                          package, version, index_digest, v.key_id);
            return 0;
        }
        return refuse_signed(ctx, package, version, index_digest, &v);
    default:
        return refuse_signed(ctx, package, version, index_digest, &v);
    }
}
