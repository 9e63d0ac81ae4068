/* kbpkg verify as an operation: the cache's file checks, plus the recorded admission judged again.
 */
#include "cache/store.h"
#include "kbpkg/cache.h"
#include "trust/admission.h"

/* The signature state recorded at install, under the policy in force, offline: a stored
 * signature must still verify over the record's index digest with a key trusted and not
 * revoked here (an edited index digest or signature layer fails here); an install admitted
 * without any check is reported where signatures are now required. An unsigned admission is
 * not reported: allowing it was the user's choice at install, and the loader asks again
 * (KB_OPEN_ALLOW_UNSIGNED). What verify reports here is what the loader refuses even with
 * KB_OPEN_ALLOW_UNSIGNED. Expiry is not judged (docs/trust.md). */
static int check_admission(kb_strv *issues, kb_ctx *ctx, const kb_installed *p)
{
    int rc =
        kbi_trust_check_installed(ctx, &p->admission, p->name, p->version, p->index_digest, true);
    if (rc != KB_ERR_SIGNATURE)
        return rc;
    char *issue = kbi_asprintf("signature: %s", kb_ctx_last_error(ctx)->message);
    kb_ctx_clear_error(ctx);
    return issue ? kbi_strv_push_owned(issues, issue) : kbi_error_oom(ctx);
}

KB_EXTERN int kb_cache_verify(kb_package_list **out, kb_ctx *ctx, const char *name)
{
    if (!out || !ctx)
        return KB_ERR_INVALID;
    return kbi_cache_verify_with(out, ctx, name, check_admission);
}
