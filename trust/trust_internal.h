/* Internal trust API shared by keys, signatures and credentials (trust/). */
#ifndef KB_TRUST_INTERNAL_H
#define KB_TRUST_INTERNAL_H

#include "core/internal.h"
#include "kbpkg/trust.h"

#include <openssl/evp.h>

#define KB_SIG_ARTIFACT_TYPE "application/vnd.kbpkg.signature.v1"
#define KB_SIG_LAYER_TYPE "application/vnd.kbpkg.signature.v1+json"
#define KB_SIG_PAYLOAD_TYPE "kbpkg-signature-v1"
#define KB_SIG_LAYER_MAX ((size_t)64 * 1024)

/* <config.dir>/keys, and a file in it; owned. */
char *kbi_trust_keys_dir(const kb_ctx *ctx);
char *kbi_trust_key_file(const kb_ctx *ctx, const char *id, const char *suffix);
/* 16 lowercase hex characters. */
bool kbi_trust_key_id_valid(const char *id);
/* The id of an ed25519 key (public half). */
int kbi_trust_key_id_of(kb_ctx *ctx, EVP_PKEY *key, char id[KB_TRUST_KEY_ID_LEN + 1]);
/* Load <id>.pub (trusted) or <id>.key (private); KB_ERR_NOT_FOUND when absent. */
int kbi_trust_load_public(EVP_PKEY **out, kb_ctx *ctx, const char *id);
int kbi_trust_load_private(EVP_PKEY **out, kb_ctx *ctx, const char *id);
/* The default key id from keys/default; KB_ERR_NOT_FOUND when none. */
int kbi_trust_default_id(kb_ctx *ctx, char id[KB_TRUST_KEY_ID_LEN + 1]);
/* Is id in keys/revoked? *reason_out (may be NULL) gets the reason, owned. */
bool kbi_trust_is_revoked(kb_ctx *ctx, const char *id, char **reason_out);
/* One key's description from the files in keys/. */
int kbi_trust_key_get_one(kb_trust_key **out, kb_ctx *ctx, const char *id);

#endif
