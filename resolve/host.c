/* The per-ctx probe cache: GPU drivers are initialised once per ctx, not once per open. */
#include "resolve/host.h"

#include <stdlib.h>

static void free_report(void *p)
{
    kbi_probe_report_free(p);
    free(p);
}

int kbi_host_get(const kb_probe_report **out, kb_ctx *ctx)
{
    if (!ctx->probe_cache) {
        kb_probe_report *r = calloc(1, sizeof(*r));
        if (!r)
            return kbi_error_oom(ctx);
        int rc = kbi_probe_run(ctx, r);
        if (rc) {
            free(r);
            return rc;
        }
        ctx->probe_cache = r;
        ctx->probe_cache_free = free_report;
    }
    *out = ctx->probe_cache;
    return 0;
}

void kbi_host_compat_opts(kb_compat_opts *out, const kb_ctx *ctx)
{
    const char *aliases = kbi_config_str(ctx, "rocm.aliases");
    out->rocm_aliases = aliases && *aliases ? aliases : NULL;
    out->allow_cpu_with_gpu = false;
}
