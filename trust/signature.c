/* Signatures over package indexes: sign, verify into a verdict, and the require_signatures policy.
 */
#include "registry/oci.h"
#include "registry/referrers.h"
#include "registry/registry.h"
#include "trust/admission.h"
#include "trust/trust_internal.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ED25519_SIG_LEN 64
#define SIGNATURE_DAYS_MAX 36500

static const char *const status_names[] = {
    "signed-trusted", "unsigned", "untrusted-key", "revoked-key",
    "bad-signature",  "expired",  "mismatch",      "unknown-type",
};

KB_EXTERN const char *kb_trust_status_name(kb_trust_status status)
{
    if ((unsigned)status >= KB_ARRAY_LEN(status_names))
        return "unknown";
    return status_names[status];
}

static int check_subject(kb_ctx *ctx, const char *package, const char *version,
                         const char *index_digest)
{
    if (kbi_pkg_name_check(ctx, package))
        return KB_ERR_INVALID;
    if (!kbi_tag_valid(version))
        return kbi_error_set(ctx, KB_ERR_INVALID, "invalid version '%s' for %s",
                             version ? version : "", package);
    if (!kbi_digest_valid(index_digest))
        return kbi_error_set(ctx, KB_ERR_INVALID,
                             "invalid index digest '%s' for %s@%s (expected sha256:<64 hex>)",
                             index_digest ? index_digest : "", package, version);
    return 0;
}

/* "sha256-<hex>.sig": distribution 2.8 has no referrers API, so the tag finds the signature. */
static char *signature_tag(const char *index_digest)
{
    return kbi_asprintf("sha256-%s.sig", kbi_digest_hex(index_digest));
}

/* trust.signature_days: a signed integer (negative only makes sense in tests of expiry). */
static int signature_days(kb_ctx *ctx, long *out)
{
    const char *text = kbi_config_str(ctx, "trust.signature_days");
    char *end = NULL;
    errno = 0;
    long days = strtol(text, &end, 10);
    if (!*text || *end || errno || days < -SIGNATURE_DAYS_MAX || days > SIGNATURE_DAYS_MAX)
        return kbi_error_set(ctx, KB_ERR_CONFIG,
                             "trust.signature_days: '%s' is not a whole number of days (-%d..%d)",
                             text, SIGNATURE_DAYS_MAX, SIGNATURE_DAYS_MAX);
    *out = days;
    return 0;
}

/* The exact bytes that are signed: compact JSON with sorted keys. Owned. */
static char *canonical_json(const json_t *value)
{
    return json_dumps(value, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
}

static char *base64_encode(const unsigned char *data, size_t len)
{
    char *out = malloc(4 * ((len + 2) / 3) + 1);
    if (out)
        EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    return out;
}

/* Strict: only an exact-length standard base64 string decodes. Returns the byte count or -1. */
static int base64_decode(unsigned char *out, size_t cap, const char *text)
{
    size_t n = strlen(text);
    if (n == 0 || n % 4 || (n / 4) * 3 > cap + 2)
        return -1;
    unsigned char tmp[ED25519_SIG_LEN + 3];
    if ((n / 4) * 3 > sizeof(tmp))
        return -1;
    int got = EVP_DecodeBlock(tmp, (const unsigned char *)text, (int)n);
    if (got < 0)
        return -1;
    size_t pad = (text[n - 1] == '=') + (text[n - 2] == '=');
    size_t len = (size_t)got - pad;
    if (len > cap)
        return -1;
    memcpy(out, tmp, len);
    return (int)len;
}

static int ed25519_sign(kb_ctx *ctx, EVP_PKEY *key, const char *msg, unsigned char *sig)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    size_t len = ED25519_SIG_LEN;
    int ok = md && EVP_DigestSignInit(md, NULL, NULL, NULL, key) == 1 &&
             EVP_DigestSign(md, sig, &len, (const unsigned char *)msg, strlen(msg)) == 1 &&
             len == ED25519_SIG_LEN;
    EVP_MD_CTX_free(md);
    ERR_clear_error();
    return ok ? 0 : kbi_error_set(ctx, KB_ERR_SIGNATURE, "OpenSSL could not sign with ed25519");
}

static bool ed25519_verify(EVP_PKEY *key, const char *msg, const unsigned char *sig)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    bool ok =
        md && EVP_DigestVerifyInit(md, NULL, NULL, NULL, key) == 1 &&
        EVP_DigestVerify(md, sig, ED25519_SIG_LEN, (const unsigned char *)msg, strlen(msg)) == 1;
    EVP_MD_CTX_free(md);
    ERR_clear_error();
    return ok;
}

/* The signing key: the named one or the default; refuses a revoked key. */
static int signing_key(EVP_PKEY **out, kb_ctx *ctx, const char *key_id,
                       char id[KB_TRUST_KEY_ID_LEN + 1])
{
    if (key_id && !kbi_trust_key_id_valid(key_id))
        return kbi_error_set(ctx, KB_ERR_INVALID, "invalid key id '%s' (expected %d lowercase hex)",
                             key_id, KB_TRUST_KEY_ID_LEN);
    int rc = 0;
    if (key_id)
        memcpy(id, key_id, KB_TRUST_KEY_ID_LEN + 1);
    else
        rc = kbi_trust_default_id(ctx, id);
    if (rc)
        return rc;
    char *reason = NULL;
    if (kbi_trust_is_revoked(ctx, id, &reason)) {
        rc =
            kbi_error_set(ctx, KB_ERR_SIGNATURE, "key %s is revoked (%s); refusing to sign with it",
                          id, reason && *reason ? reason : "no reason given");
        free(reason);
        return rc;
    }
    return kbi_trust_load_private(out, ctx, id);
}

static json_t *signed_payload(const char *package, const char *version, const char *index_digest,
                              const char *key_id, int64_t signed_at, int64_t expires)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I}", "type", KB_SIG_PAYLOAD_TYPE, "package",
                     package, "version", version, "index_digest", index_digest, "key_id", key_id,
                     "signed_at", (json_int_t)signed_at, "expires", (json_int_t)expires);
}

/* The layer: {"payload": {...}, "signature": base64(ed25519(canonical payload))}. Owned. */
static int signature_layer(char **out, kb_ctx *ctx, EVP_PKEY *key, json_t *payload)
{
    char *msg = canonical_json(payload);
    unsigned char sig[ED25519_SIG_LEN];
    int rc = msg ? ed25519_sign(ctx, key, msg, sig) : kbi_error_oom(ctx);
    char *b64 = rc ? NULL : base64_encode(sig, sizeof(sig));
    json_t *layer = b64 ? json_pack("{s:O,s:s}", "payload", payload, "signature", b64) : NULL;
    *out = layer ? canonical_json(layer) : NULL;
    if (!rc && !*out)
        rc = kbi_error_oom(ctx);
    json_decref(layer);
    free(b64);
    free(msg);
    return rc;
}

/* The signature manifest: empty config, the layer, and the index as subject. */
static int signature_manifest(kb_buf *out, kb_ctx *ctx, const char *layer_digest, size_t layer_len,
                              const kb_registry_manifest *index, const char *key_id)
{
    kb_oci_manifest m = {0};
    kb_oci_descriptor layer = {0};
    int rc = kbi_oci_descriptor_set(&layer, KB_SIG_LAYER_TYPE, layer_digest, layer_len);
    if (rc == KB_ERR_NOMEM)
        kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_oci_referrer_manifest(&m, ctx, KB_SIG_ARTIFACT_TYPE, &layer, index);
    if (!rc)
        rc = kbi_oci_annotate(&m.annotations, "dev.kbpkg.key-id", key_id);
    if (rc == KB_ERR_NOMEM)
        kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_oci_manifest_serialize(out, ctx, &m);
    kbi_oci_descriptor_clear(&layer);
    kbi_oci_manifest_clear(&m);
    return rc;
}

/* Push layer, empty config and manifest under the .sig tag. */
static int push_signature(char **digest_out, kb_registry *r, const char *package,
                          const char *index_digest, const char *layer_text,
                          const kb_registry_manifest *index, const char *key_id)
{
    char *layer_digest = NULL, *tag = signature_tag(index_digest);
    kb_buf manifest = KB_BUF_INIT;
    kb_ctx *ctx = r->ctx;
    int rc = tag ? 0 : kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_registry_blob_put_mem(&layer_digest, r, package, layer_text, strlen(layer_text));
    if (!rc)
        rc = kbi_registry_blob_put_mem(NULL, r, package, "{}", 2);
    if (!rc)
        rc = signature_manifest(&manifest, ctx, layer_digest, strlen(layer_text), index, key_id);
    if (!rc)
        rc = kbi_registry_manifest_put(digest_out, r, package, tag, KB_MT_OCI_MANIFEST,
                                       manifest.data, manifest.len);
    kbi_buf_free(&manifest);
    free(layer_digest);
    free(tag);
    return rc;
}

KB_EXTERN int kb_trust_sign_index(char **sig_digest_out, kb_ctx *ctx, kb_registry *registry,
                                  const char *package, const char *version,
                                  const char *index_digest, const char *key_id)
{
    if (sig_digest_out)
        *sig_digest_out = NULL;
    long days = 0;
    char id[KB_TRUST_KEY_ID_LEN + 1];
    EVP_PKEY *key = NULL;
    kb_registry_manifest *index = NULL;
    json_t *payload = NULL;
    char *layer = NULL, *digest = NULL;
    int rc = check_subject(ctx, package, version, index_digest);
    if (!rc)
        rc = signature_days(ctx, &days);
    if (!rc)
        rc = signing_key(&key, ctx, key_id, id);
    /* sign only an index the registry really holds, and describe it as the subject */
    if (!rc)
        rc = kbi_registry_manifest_get(&index, registry, package, index_digest);
    if (!rc) {
        int64_t now = (int64_t)time(NULL);
        payload = signed_payload(package, version, index_digest, id, now, now + days * 86400);
        rc = payload ? signature_layer(&layer, ctx, key, payload) : kbi_error_oom(ctx);
    }
    if (!rc)
        rc = push_signature(&digest, registry, package, index_digest, layer, index, id);
    if (!rc) {
        kbi_log(ctx, KB_LOG_INFO, "signed %s@%s (index %s) with key %s: %s", package, version,
                index_digest, id, digest);
        if (sig_digest_out)
            *sig_digest_out = digest, digest = NULL;
    } else {
        kbi_error_prefix(ctx, "signing %s@%s", package ? package : "", version ? version : "");
    }
    EVP_PKEY_free(key);
    kbi_registry_manifest_free(index);
    json_decref(payload);
    free(layer);
    free(digest);
    return rc;
}

/* ---- verification ---- */

KB_EXTERN void kb_trust_verdict_clear(kb_trust_verdict *v)
{
    if (!v)
        return;
    free(v->key_id);
    free(v->signature_digest);
    free(v->detail);
    memset(v, 0, sizeof(*v));
}

/* Set the status and its one-sentence detail; KB_ERR_NOMEM when the sentence cannot be kept. */
KB_PRINTF(3, 4)
static int verdict(kb_trust_verdict *v, kb_trust_status status, const char *fmt, ...)
{
    v->status = status;
    kb_buf b = KB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    int rc = kbi_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    free(v->detail);
    v->detail = rc ? NULL : kbi_buf_detach(&b);
    kbi_buf_free(&b);
    return v->detail ? 0 : KB_ERR_NOMEM;
}

/* The signature layer's JSON; or *out NULL and a verdict when it is malformed or unknown.
 * *subject_out gets the manifest's subject digest (owned, may stay NULL). */
static int read_signature_layer(json_t **out, char **subject_out, kb_registry *r,
                                const char *package, const kb_registry_manifest *sig,
                                kb_trust_verdict *v)
{
    *out = NULL;
    kb_ctx *ctx = r->ctx;
    kb_oci_manifest m = {0};
    if (kbi_oci_manifest_parse(&m, ctx, sig->data, sig->len, sig->digest) != 0) {
        kb_ctx_clear_error(ctx);
        return verdict(v, KB_TRUST_UNKNOWN_TYPE, "signature manifest %s is not an OCI manifest",
                       sig->digest);
    }
    int rc = 0;
    if (!m.artifact_type || strcmp(m.artifact_type, KB_SIG_ARTIFACT_TYPE) != 0)
        rc = verdict(v, KB_TRUST_UNKNOWN_TYPE, "signature manifest %s has artifactType '%s'",
                     sig->digest, m.artifact_type ? m.artifact_type : "");
    else if (m.layer_count != 1 || !m.layers[0].media_type ||
             strcmp(m.layers[0].media_type, KB_SIG_LAYER_TYPE) != 0)
        rc = verdict(v, KB_TRUST_UNKNOWN_TYPE,
                     "signature manifest %s does not hold exactly one %s layer", sig->digest,
                     KB_SIG_LAYER_TYPE);
    else if (m.layers[0].size > KB_SIG_LAYER_MAX)
        rc = verdict(v, KB_TRUST_BAD_SIGNATURE, "signature layer of %s is too large", sig->digest);
    else {
        kb_buf layer = KB_BUF_INIT;
        rc = kbi_registry_blob_get_mem(&layer, r, package, m.layers[0].digest, KB_SIG_LAYER_MAX);
        if (rc == KB_ERR_DIGEST || rc == KB_ERR_NOT_FOUND || rc == KB_ERR_LIMIT) {
            rc = verdict(v, KB_TRUST_BAD_SIGNATURE, "signature layer %s: %s", m.layers[0].digest,
                         kb_ctx_last_error(ctx)->message);
            kb_ctx_clear_error(ctx);
        } else if (!rc) {
            *out = json_loadb(layer.data, layer.len, JSON_REJECT_DUPLICATES, NULL);
            if (!*out)
                rc = verdict(v, KB_TRUST_BAD_SIGNATURE, "signature layer %s is not JSON",
                             m.layers[0].digest);
        }
        kbi_buf_free(&layer);
    }
    if (*out && m.subject && m.subject->digest)
        *subject_out = kbi_strdup(m.subject->digest);
    kbi_oci_manifest_clear(&m);
    return rc;
}

static bool get_int(const json_t *o, const char *key, int64_t *out)
{
    json_t *x = json_object_get(o, key);
    if (!json_is_integer(x))
        return false;
    *out = (int64_t)json_integer_value(x);
    return true;
}

/* Check the signature itself, then what it says. layer is the parsed layer JSON. */
static int judge_layer(kb_ctx *ctx, const json_t *layer, const char *package, const char *version,
                       const char *index_digest, bool check_expiry, kb_trust_verdict *v)
{
    json_t *payload = json_object_get(layer, "payload");
    const char *sig_b64 = json_string_value(json_object_get(layer, "signature"));
    const char *type = json_string_value(json_object_get(payload, "type"));
    if (!json_is_object(payload) || !type)
        return verdict(v, KB_TRUST_UNKNOWN_TYPE, "signature layer has no typed payload");
    if (strcmp(type, KB_SIG_PAYLOAD_TYPE) != 0)
        return verdict(v, KB_TRUST_UNKNOWN_TYPE, "unknown signature type '%s' (expected %s)", type,
                       KB_SIG_PAYLOAD_TYPE);
    const char *key_id = json_string_value(json_object_get(payload, "key_id"));
    const char *p_package = json_string_value(json_object_get(payload, "package"));
    const char *p_version = json_string_value(json_object_get(payload, "version"));
    const char *p_digest = json_string_value(json_object_get(payload, "index_digest"));
    if (!kbi_trust_key_id_valid(key_id) || !p_package || !p_version || !p_digest || !sig_b64 ||
        !get_int(payload, "signed_at", &v->signed_at) || !get_int(payload, "expires", &v->expires))
        return verdict(v, KB_TRUST_BAD_SIGNATURE, "signature payload lacks a required field");
    free(v->key_id);
    if (!(v->key_id = kbi_strdup(key_id)))
        return KB_ERR_NOMEM;

    char *reason = NULL;
    if (kbi_trust_is_revoked(ctx, key_id, &reason)) {
        int vr = verdict(v, KB_TRUST_REVOKED_KEY, "key %s is revoked (%s)", key_id,
                         reason && *reason ? reason : "no reason given");
        free(reason);
        return vr;
    }
    EVP_PKEY *pub = NULL;
    int rc = kbi_trust_load_public(&pub, ctx, key_id);
    if (rc == KB_ERR_NOT_FOUND) {
        kb_ctx_clear_error(ctx);
        return verdict(v, KB_TRUST_UNTRUSTED_KEY, "key %s is not trusted here", key_id);
    }
    if (rc)
        return rc;
    unsigned char sig[ED25519_SIG_LEN];
    char *msg = canonical_json(payload);
    bool good = msg && base64_decode(sig, sizeof(sig), sig_b64) == ED25519_SIG_LEN &&
                ed25519_verify(pub, msg, sig);
    free(msg);
    EVP_PKEY_free(pub);
    if (!good)
        return verdict(v, KB_TRUST_BAD_SIGNATURE, "the signature does not verify with key %s",
                       key_id);
    if (strcmp(p_package, package) != 0 || strcmp(p_version, version) != 0 ||
        strcmp(p_digest, index_digest) != 0)
        return verdict(v, KB_TRUST_MISMATCH, "the signature is for %s@%s (index %s)", p_package,
                       p_version, p_digest);
    int64_t now = (int64_t)time(NULL);
    if (check_expiry && now > v->expires)
        return verdict(v, KB_TRUST_EXPIRED, "the signature expired %lld seconds ago",
                       (long long)(now - v->expires));
    return verdict(v, KB_TRUST_SIGNED_TRUSTED, "signed by trusted key %s", key_id);
}

int kbi_trust_judge_stored(kb_trust_verdict *out, kb_ctx *ctx, const char *layer_json,
                           const char *package, const char *version, const char *index_digest)
{
    memset(out, 0, sizeof(*out));
    json_t *layer = layer_json ? json_loads(layer_json, JSON_REJECT_DUPLICATES, NULL) : NULL;
    if (!layer)
        return verdict(out, KB_TRUST_BAD_SIGNATURE, "the stored signature is not JSON");
    int rc = judge_layer(ctx, layer, package, version, index_digest, false, out);
    json_decref(layer);
    return rc;
}

KB_EXTERN int kb_trust_verify_index(kb_trust_verdict *out, kb_ctx *ctx, kb_registry *registry,
                                    const char *package, const char *version,
                                    const char *index_digest)
{
    return kbi_trust_verify_index_layer(out, NULL, ctx, registry, package, version, index_digest);
}

int kbi_trust_verify_index_layer(kb_trust_verdict *out, char **layer_out, kb_ctx *ctx,
                                 kb_registry *registry, const char *package, const char *version,
                                 const char *index_digest)
{
    if (layer_out)
        *layer_out = NULL;
    memset(out, 0, sizeof(*out));
    int rc = check_subject(ctx, package, version, index_digest);
    char *tag = rc ? NULL : signature_tag(index_digest);
    if (!rc && !tag)
        rc = kbi_error_oom(ctx);
    kb_registry_manifest *sig = NULL;
    if (!rc)
        rc = kbi_registry_manifest_get(&sig, registry, package, tag);
    if (rc == KB_ERR_NOT_FOUND) {
        kb_ctx_clear_error(ctx);
        rc = verdict(out, KB_TRUST_UNSIGNED, "no signature manifest tagged %s", tag);
        free(tag);
        return rc ? kbi_error_oom(ctx) : 0;
    }
    json_t *layer = NULL;
    char *subject = NULL;
    if (!rc) {
        out->signature_digest = kbi_strdup(sig->digest);
        rc = out->signature_digest
                 ? read_signature_layer(&layer, &subject, registry, package, sig, out)
                 : kbi_error_oom(ctx);
    }
    if (!rc && layer)
        rc = judge_layer(ctx, layer, package, version, index_digest, true, out);
    /* a signature manifest copied under another index's tag names its own subject */
    if (!rc && layer && out->status == KB_TRUST_SIGNED_TRUSTED && subject &&
        strcmp(subject, index_digest) != 0)
        rc = verdict(out, KB_TRUST_MISMATCH, "the signature manifest's subject is %s", subject);
    if (!rc && layer && layer_out &&
        !(*layer_out = json_dumps(layer, JSON_COMPACT | JSON_SORT_KEYS)))
        rc = kbi_error_oom(ctx);
    json_decref(layer);
    free(subject);
    kbi_registry_manifest_free(sig);
    free(tag);
    return rc;
}
