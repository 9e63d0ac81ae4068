/* Opening the registry for cache operations: the configured one, with stored credentials. */
#include "cache/install.h"
#include "kbpkg/trust.h"

int kb_cache_open_registry(kb_registry **out, kb_ctx *ctx, const char *ref)
{
    return kb_trust_registry_open(out, ctx, ref);
}
