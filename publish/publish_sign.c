/* The hook where publishing signs a package index: with this machine's default key, if any. */
#include "publish/publish.h"
#include "kbpkg/trust.h"

#include <stdlib.h>

/* Is there a default key whose private half is here? (kb_trust_sign_index would say
 * KB_ERR_NOT_FOUND, but so could a registry: ask the key store, not the error code.) */
static bool have_signing_key(kb_ctx *ctx)
{
    kb_trust_key *keys = NULL;
    size_t n = 0;
    bool found = false;
    if (kb_trust_key_list(&keys, &n, ctx) != 0) {
        kb_ctx_clear_error(ctx);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        found = found || (keys[i].is_default && keys[i].has_private && !keys[i].revoked);
    kb_trust_key_list_free(keys, n);
    return found;
}

int kbi_publish_sign_index(kb_ctx *ctx, kb_registry *r, const char *name, const char *version,
                           const char *index_digest)
{
    if (!have_signing_key(ctx)) {
        /* Not an error: a layout folder for local use needs no signature. Say it loudly,
         * because installs from a remote registry require one by default. */
        kbi_event_emit(ctx, KB_EVENT_WARNING, name,
                       "%s index %s published unsigned: no default signing key here "
                       "(kbpkg key generate)",
                       version, index_digest);
        return 0;
    }
    char *sig = NULL;
    int rc = kb_trust_sign_index(&sig, ctx, r, name, version, index_digest, NULL);
    if (rc) {
        kbi_error_prefix(ctx, "%s@%s: signing index %s", name, version, index_digest);
        return rc;
    }
    kbi_event_emit(ctx, KB_EVENT_NOTICE, name, "%s index %s signed (%s)", version, index_digest,
                   sig);
    kb_string_free(sig);
    return 0;
}
