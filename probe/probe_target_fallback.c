/* Stand-ins for core/target.c until the targets module lands on main; compiled only without it. */
#if !__has_include("core/target.c")
#include "core/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A minimal reading of the override list ("sm_86,gfx1031@rocm5.2,none"): enough for the probe
 * and its tests. The real parser in core/target.c replaces this file's definitions; this file
 * compiles to nothing once core/target.c exists, and is to be deleted then.
 */
const char *kb_backend_name(kb_backend b)
{
    static const char *const names[] = {"none", "cuda", "rocm", "metal", "cpu"};
    return (unsigned)b < KB_ARRAY_LEN(names) ? names[b] : "none";
}

void kb_host_free(kb_host *host)
{
    if (!host)
        return;
    free(host->devices);
    host->devices = NULL;
    host->device_count = 0;
}

static int parse_one(kb_ctx *ctx, kb_device *d, const char *item)
{
    char arch[48], runtime[32] = "";
    const char *at = strchr(item, '@');
    size_t n = at ? (size_t)(at - item) : strlen(item);
    if (n == 0 || n >= sizeof(arch) || (at && strlen(at + 1) >= sizeof(runtime)))
        return kb_error_set(ctx, KB_ERR_TARGET, "bad device '%s'", item);
    memcpy(arch, item, n);
    arch[n] = '\0';
    if (at)
        snprintf(runtime, sizeof(runtime), "%s", at + 1);
    memset(d, 0, sizeof(*d));
    d->backend = kb_str_starts(arch, "sm_")   ? KB_BACKEND_CUDA
                 : kb_str_starts(arch, "gfx") ? KB_BACKEND_ROCM
                                              : KB_BACKEND_NONE;
    if (d->backend == KB_BACKEND_NONE)
        return kb_error_set(ctx, KB_ERR_TARGET, "bad device '%s': unknown arch '%s'", item, arch);
    snprintf(d->arch, sizeof(d->arch), "%s", arch);
    d->runtime_any = !*runtime;
    if (*runtime && sscanf(runtime, "%*[a-z]%u.%u", &d->runtime_major, &d->runtime_minor) < 1)
        return kb_error_set(ctx, KB_ERR_TARGET, "bad device '%s': bad runtime '%s'", item, runtime);
    return 0;
}

int kb_devices_parse(kb_ctx *ctx, kb_device **out, size_t *count, const char *spec)
{
    *out = NULL;
    *count = 0;
    if (strcmp(spec, "none") == 0)
        return 0;
    char *copy = kb_strdup(spec);
    kb_device *devs = calloc(strlen(spec) / 2 + 1, sizeof(*devs));
    int rc = copy && devs ? 0 : kb_error_oom(ctx);
    char *save = NULL;
    size_t n = 0;
    for (char *item = rc ? NULL : strtok_r(copy, ",", &save); item && !rc;
         item = strtok_r(NULL, ",", &save)) {
        rc = parse_one(ctx, &devs[n], item);
        if (!rc)
            devs[n].index = (int)n, n++;
    }
    free(copy);
    if (rc) {
        free(devs);
        return rc;
    }
    *out = devs;
    *count = n;
    return 0;
}
#endif
