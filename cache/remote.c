/* Opening the registry for cache operations: the configured one, with stored credentials. */
#include "cache/install.h"
#include "kbpkg/trust.h"

int kb_cache_open_registry(kb_registry **out, kb_ctx *ctx, const char *ref)
{
    const char *url = ref ? ref : kb_config_str(ctx, "registry");
    int rc = kb_registry_open(out, ctx, url);
    if (rc)
        return rc;
    char *user = NULL, *password = NULL;
    rc = kb_trust_credentials_for(ctx, url, &user, &password);
    if (!rc && user)
        rc = kb_registry_set_credentials(*out, user, password);
    kb_trust_credentials_free(user, password);
    if (rc) {
        kb_registry_free(*out);
        *out = NULL;
    }
    return rc;
}
