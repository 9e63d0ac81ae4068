/* kbpkg public API: signing keys, signatures over package indexes, registry credentials. */
#ifndef KBPKG_TRUST_H
#define KBPKG_TRUST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kbpkg/common.h"
#include "kbpkg/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Keys live in <config.dir>/keys/: <id>.key (ed25519 private key, PEM, 0600),
 * <id>.pub (trusted public keys, PEM), `default` (the default signing key id)
 * and `revoked` ("<id> <reason>" per line). A key id is the first 16 hex
 * characters of the sha256 of the raw 32-byte public key.
 */
#define KB_TRUST_KEY_ID_LEN 16

typedef struct kb_trust_key {
    char *id;             /* KB_TRUST_KEY_ID_LEN hex characters */
    bool has_private;     /* <id>.key is here: this machine can sign with it */
    bool has_public;      /* <id>.pub is here: signatures by it are trusted */
    bool is_default;      /* named by keys/default */
    bool revoked;         /* listed in keys/revoked */
    char *name;           /* the --name given at generation, or NULL */
    char *revoked_reason; /* NULL unless revoked */
} kb_trust_key;

/* A new key pair; becomes the default when there is none. name may be NULL. */
KB_EXTERN int kb_trust_key_generate(kb_trust_key **out, kb_ctx *ctx, const char *name);
/* Trust the ed25519 public key in a PEM file (adds <id>.pub). KB_ERR_PARSE for bad PEM,
 * KB_ERR_UNSUPPORTED for another key type, KB_ERR_SIGNATURE for a revoked id. */
KB_EXTERN int kb_trust_key_import(kb_trust_key **out, kb_ctx *ctx, const char *pem_path);
/* Every key known here (private, trusted or revoked), sorted by id. */
KB_EXTERN int kb_trust_key_list(kb_trust_key **out, size_t *count_out, kb_ctx *ctx);
/* Add id to the revoked list (it need not be known here). reason may be NULL. */
KB_EXTERN int kb_trust_key_revoke(kb_ctx *ctx, const char *key_id, const char *reason);
/* The public key PEM of id, to share; free with kb_string_free. */
KB_EXTERN int kb_trust_key_export(char **pem_out, kb_ctx *ctx, const char *key_id);
KB_EXTERN void kb_trust_key_free(kb_trust_key *key);
KB_EXTERN void kb_trust_key_list_free(kb_trust_key *keys, size_t count);

/* What a signature check found. Numbers are stable. */
typedef enum kb_trust_status {
    KB_TRUST_SIGNED_TRUSTED = 0, /* valid, by a trusted key, for this package/version/index */
    KB_TRUST_UNSIGNED = 1,       /* no signature manifest for this index */
    KB_TRUST_UNTRUSTED_KEY = 2,  /* signed by a key that is not in keys/<id>.pub */
    KB_TRUST_REVOKED_KEY = 3,    /* signed by a key listed in keys/revoked */
    KB_TRUST_BAD_SIGNATURE = 4,  /* the signature does not verify, or is malformed */
    KB_TRUST_EXPIRED = 5,        /* valid but past its expiry (freeze attack) */
    KB_TRUST_MISMATCH = 6,       /* signed payload names another package/version/index */
    KB_TRUST_UNKNOWN_TYPE = 7,   /* a signature kbpkg does not understand: fails closed */
} kb_trust_status;

typedef struct kb_trust_verdict {
    kb_trust_status status;
    char *key_id;           /* NULL when unknown */
    char *signature_digest; /* the signature manifest's digest, NULL when none */
    int64_t signed_at;      /* unix seconds, 0 when unknown */
    int64_t expires;
    char *detail; /* one sentence: why this status */
} kb_trust_verdict;

/* Free the strings a verdict owns and zero it (kb_trust_verify_index fills one). */
KB_EXTERN void kb_trust_verdict_clear(kb_trust_verdict *verdict);

/* "signed-trusted", "unsigned", ... */
KB_EXTERN const char *kb_trust_status_name(kb_trust_status status);

/*
 * Sign the index of package@version: pushes a manifest tagged
 * "sha256-<index hex>.sig" into the package's repository. key_id NULL: the
 * default key. KB_ERR_NOT_FOUND when there is no such private key.
 * *sig_digest_out (may be NULL) is the signature manifest's digest; free with
 * kb_string_free. Reads trust.signature_days.
 */
KB_EXTERN int kb_trust_sign_index(char **sig_digest_out, kb_ctx *ctx, kb_registry *registry,
                                  const char *package, const char *version,
                                  const char *index_digest, const char *key_id);
/* Returns 0 with *out filled whatever the verdict (free its strings with kb_trust_verdict_clear);
 * negative only when the check could not run (network, registry errors). */
KB_EXTERN int kb_trust_verify_index(kb_trust_verdict *out, kb_ctx *ctx, kb_registry *registry,
                                    const char *package, const char *version,
                                    const char *index_digest);
/*
 * The policy of trust.require_signatures (never | remote | always; remote =
 * required for registries that are not layout folders). 0, or
 * KB_ERR_SIGNATURE naming package, version, index digest and key id.
 * allow_unsigned admits an unsigned package with a KB_EVENT_WARNING; it never
 * admits a bad, revoked, expired or mismatched signature.
 */
KB_EXTERN int kb_trust_check(kb_ctx *ctx, kb_registry *registry, const char *package,
                             const char *version, const char *index_digest, bool allow_unsigned);

/*
 * Credentials in <config.dir>/credentials.json ({host: {user, password}},
 * 0600). registry_ref is anything kb_registry_open takes. The environment's
 * KBPKG_REGISTRY_USER / KBPKG_REGISTRY_PASSWORD win over the file. 0 with
 * *user and *password NULL when none is known; free both with
 * kb_trust_credentials_free (it wipes the password).
 */
KB_EXTERN int kb_trust_credentials_for(char **user, char **password, kb_ctx *ctx,
                                       const char *registry_ref);
KB_EXTERN int kb_trust_credentials_store(kb_ctx *ctx, const char *registry_ref, const char *user,
                                         const char *password);
/* KB_ERR_NOT_FOUND when nothing was stored for that host. */
KB_EXTERN int kb_trust_credentials_remove(kb_ctx *ctx, const char *registry_ref);
KB_EXTERN void kb_trust_credentials_free(char *user, char *password);
/*
 * kb_registry_open on registry_ref (NULL: the "registry" setting) with the credentials
 * kb_trust_credentials_for finds: how install, search, doctor and the hub reach a registry,
 * so a `kbpkg login` counts for all of them.
 */
KB_EXTERN int kb_trust_registry_open(kb_registry **out, kb_ctx *ctx, const char *registry_ref);

#ifdef __cplusplus
}
#endif
#endif
