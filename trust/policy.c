/* trust.require_signatures: turn a verdict into admit, warn or refuse for one package index. */
#include "registry/registry.h"
#include "trust/admission.h"
#include "trust/trust_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum { REQUIRE_NEVER, REQUIRE_REMOTE, REQUIRE_ALWAYS } require_mode;

static int read_mode(kb_ctx *ctx, require_mode *out)
{
    static const char *const names[] = {"never", "remote", "always"};
    const char *value = kbi_config_str(ctx, "trust.require_signatures");
    for (size_t i = 0; i < KB_ARRAY_LEN(names); i++)
        if (strcmp(value, names[i]) == 0)
            return *out = (require_mode)i, 0;
    return kbi_error_set(ctx, KB_ERR_CONFIG,
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
    int rc = kbi_buf_vprintf(&what, fmt, ap);
    va_end(ap);
    if (rc)
        return kbi_error_oom(ctx);
    rc = kbi_error_set(ctx, KB_ERR_SIGNATURE, "%s@%s (index %s) %s", package, version, index_digest,
                       what.data);
    kbi_buf_free(&what);
    return rc;
}

static int refuse_signed(kb_ctx *ctx, const char *package, const char *version,
                         const char *index_digest, const kb_trust_verdict *v)
{
    const char *key = v->key_id ? v->key_id : "(unknown)";
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

/* ---- what this cache has seen signed: <cache.dir>/trust/<org>/<name>.json ---- */

static char *seen_path(kb_ctx *ctx, const char *package)
{
    return kbi_asprintf("%s/trust/%s.json", kbi_config_str(ctx, "cache.dir"), package);
}

/* The key id of a signature seen earlier on any version of package, or NULL. */
static char *seen_signer(kb_ctx *ctx, const char *package)
{
    char *path = seen_path(ctx, package);
    json_t *seen = path ? json_load_file(path, 0, NULL) : NULL;
    char *key = kbi_strdup(json_string_value(json_object_get(seen, "key_id")));
    if (seen && !key)
        key = kbi_strdup("(unknown)");
    json_decref(seen);
    free(path);
    return key;
}

/* Remember that package@version carried a signature (good or bad). Best effort: a cache that
 * cannot be written only loses this memory, with a warning. */
static void remember_signature(kb_ctx *ctx, const char *package, const char *version,
                               const char *index_digest, const kb_trust_verdict *v)
{
    char *path = seen_path(ctx, package);
    char *dir = path ? kbi_path_join(path, "..") : NULL;
    json_t *seen = path ? json_load_file(path, 0, NULL) : NULL;
    if (!json_is_object(seen)) {
        json_decref(seen);
        seen = json_object();
    }
    json_t *versions = json_object_get(seen, "versions");
    if (!json_is_object(versions)) {
        versions = json_object();
        json_object_set_new(seen, "versions", versions);
    }
    json_object_set_new(seen, "key_id", json_string(v->key_id ? v->key_id : "(unknown)"));
    json_object_set_new(versions, version,
                        json_pack("{s:s,s:s}", "index_digest", index_digest, "status",
                                  kb_trust_status_name(v->status)));
    char *text = json_dumps(seen, JSON_INDENT(2) | JSON_SORT_KEYS);
    int rc = text && dir ? kbi_mkdir_p(ctx, dir, 0755) : KB_ERR_NOMEM;
    if (!rc)
        rc = kbi_write_file_atomic(ctx, path, text, strlen(text), 0644);
    if (rc) {
        kbi_log(ctx, KB_LOG_WARN, "cannot remember the signature of %s@%s: %s", package, version,
                kb_ctx_last_error(ctx)->message);
        kb_ctx_clear_error(ctx);
    }
    free(text);
    json_decref(seen);
    free(dir);
    free(path);
}

/* Admit, warn or refuse one verdict; allow_unsigned admits only the absence of a signature,
 * and not when this cache has seen the package signed before. */
static int judge(kb_ctx *ctx, const kb_trust_verdict *v, const char *package, const char *version,
                 const char *index_digest, bool required, bool allow_unsigned)
{
    switch (v->status) {
    case KB_TRUST_SIGNED_TRUSTED:
        kbi_log(ctx, KB_LOG_DEBUG, "%s@%s (index %s): signed by trusted key %s", package, version,
                index_digest, v->key_id);
        return 0;
    case KB_TRUST_UNSIGNED: {
        char *signer = seen_signer(ctx, package);
        if (signer) {
            int rc = refuse(
                ctx, package, version, index_digest,
                "is not signed now, but this cache saw %s signed by key %s before: a "
                "removed signature is not an absent one (--allow-unsigned does not "
                "admit it; if the publisher really stopped signing, delete %s/trust/%s.json)",
                package, signer, kbi_config_str(ctx, "cache.dir"), package);
            free(signer);
            return rc;
        }
        if (!required)
            return 0;
        if (allow_unsigned) {
            kbi_event_emit(ctx, KB_EVENT_WARNING, package,
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
                      kbi_config_str(ctx, "trust.require_signatures"));
    }
    case KB_TRUST_UNTRUSTED_KEY:
        /* where signatures are optional, a stranger's signature is no worse than none */
        if (!required) {
            kbi_event_emit(ctx, KB_EVENT_WARNING, package,
                           "%s@%s (index %s) is signed by key %s, which is not trusted here",
                           package, version, index_digest, v->key_id);
            return 0;
        }
        return refuse_signed(ctx, package, version, index_digest, v);
    default:
        return refuse_signed(ctx, package, version, index_digest, v);
    }
}

static int fill_admission(kb_trust_admission *out, kb_ctx *ctx, const char *status,
                          const kb_trust_verdict *v, char **layer, const char *kind)
{
    out->status = kbi_strdup(status);
    out->key_id = v && v->key_id ? kbi_strdup(v->key_id) : NULL;
    out->layer = layer ? *layer : NULL;
    if (layer)
        *layer = NULL;
    out->registry_kind = kbi_strdup(kind);
    if (!out->status || !out->registry_kind || (v && v->key_id && !out->key_id)) {
        kbi_trust_admission_clear(out);
        return kbi_error_oom(ctx);
    }
    return 0;
}

int kbi_trust_admit(kb_trust_admission *out, kb_ctx *ctx, kb_registry *registry,
                    const char *package, const char *version, const char *index_digest,
                    bool allow_unsigned)
{
    kb_trust_admission scratch;
    if (!out)
        out = &scratch;
    memset(out, 0, sizeof(*out));
    require_mode mode = REQUIRE_ALWAYS; /* fail closed if read_mode ever returns early */
    int rc = read_mode(ctx, &mode);
    if (rc)
        return rc;
    const char *kind = kbi_registry_kind(registry);
    if (mode == REQUIRE_NEVER) {
        kbi_log(ctx, KB_LOG_DEBUG, "%s@%s: signatures not checked (trust.require_signatures=never)",
                package, version);
        rc = fill_admission(out, ctx, KB_TRUST_NOT_CHECKED, NULL, NULL, kind);
    } else {
        bool required = mode == REQUIRE_ALWAYS || strcmp(kind, "layout") != 0;
        kb_trust_verdict v = {0};
        char *layer = NULL;
        rc =
            kbi_trust_verify_index_layer(&v, &layer, ctx, registry, package, version, index_digest);
        if (!rc && v.status != KB_TRUST_UNSIGNED)
            remember_signature(ctx, package, version, index_digest, &v);
        if (!rc)
            rc = judge(ctx, &v, package, version, index_digest, required, allow_unsigned);
        if (!rc)
            rc = fill_admission(out, ctx, kb_trust_status_name(v.status), &v, &layer, kind);
        free(layer);
        kb_trust_verdict_clear(&v);
    }
    if (out == &scratch)
        kbi_trust_admission_clear(out);
    return rc;
}

KB_EXTERN int kb_trust_check(kb_ctx *ctx, kb_registry *registry, const char *package,
                             const char *version, const char *index_digest, bool allow_unsigned)
{
    return kbi_trust_admit(NULL, ctx, registry, package, version, index_digest, allow_unsigned);
}

int kbi_trust_check_installed(kb_ctx *ctx, const kb_trust_admission *a, const char *package,
                              const char *version, const char *index_digest, bool allow_unsigned)
{
    require_mode mode = REQUIRE_ALWAYS;
    int rc = read_mode(ctx, &mode);
    if (rc || mode == REQUIRE_NEVER)
        return rc;
    const char *digest = index_digest ? index_digest : "(none recorded)";
    bool required =
        mode == REQUIRE_ALWAYS || !a->registry_kind || strcmp(a->registry_kind, "layout") != 0;
    kb_trust_verdict v = {0};
    if (a->layer) {
        rc = kbi_trust_judge_stored(&v, ctx, a->layer, package, version, digest);
        if (!rc)
            rc = judge(ctx, &v, package, version, digest, required, false);
        /* Expiry guards what a registry serves; these bytes were fetched while the signature
         * was valid. Refusing them at a date would stop working installs on a timer, so it is
         * said (the payload is already parsed: one comparison), not enforced. */
        if (!rc && v.status == KB_TRUST_SIGNED_TRUSTED && (int64_t)time(NULL) > v.expires)
            kbi_event_emit(ctx, KB_EVENT_WARNING, package,
                           "%s@%s (index %s): its signature by key %s expired %lld days ago; the "
                           "installed files are unchanged, but a fresh install would be refused "
                           "until the publisher signs it again",
                           package, version, digest, v.key_id ? v.key_id : "?",
                           (long long)(((int64_t)time(NULL) - v.expires) / 86400));
        kb_trust_verdict_clear(&v);
        return rc;
    }
    if (!required)
        return 0;
    if (a->status && strcmp(a->status, kb_trust_status_name(KB_TRUST_UNSIGNED)) == 0) {
        v.status = KB_TRUST_UNSIGNED;
        return judge(ctx, &v, package, version, digest, required, allow_unsigned);
    }
    return refuse(ctx, package, version, digest,
                  "was installed without a signature check (%s), and "
                  "trust.require_signatures=%s requires one before it is loaded: install it again "
                  "under this policy",
                  a->status ? a->status : "an install record from an older kbpkg",
                  kbi_config_str(ctx, "trust.require_signatures"));
}
