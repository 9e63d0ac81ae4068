/* The hook where publishing signs a package index; the trust module fills it in. */
#include "cache/publish.h"

int kb_publish_sign_index(kb_ctx *ctx, kb_registry *r, const char *name, const char *version,
                          const char *index_digest)
{
    /* Unsigned for now: kbpkg has no signing keys yet. Left as one call so that the trust
     * module can sign index_digest (and push sha256-<hex>.sig) without touching publish. */
    kb_log(ctx, KB_LOG_DEBUG, "%s@%s index %s: not signed (no signing configured)", name, version,
           index_digest);
    (void)r;
    return 0;
}
