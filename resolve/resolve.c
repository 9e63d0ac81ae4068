/* Resolution: weigh every artifact of a package index (and a local build) for this host, best
 * first.
 */
#include "resolve/resolve.h"
#include "builder/builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *kb_fit_name(kb_fit fit)
{
    switch (fit) {
    case KB_FIT_EXACT:
        return "exact";
    case KB_FIT_FAMILY:
        return "family";
    case KB_FIT_GENERIC:
        return "generic";
    case KB_FIT_ALIAS:
        return "alias";
    case KB_FIT_PTX:
        return "ptx-jit";
    case KB_FIT_LOCAL_BUILD:
        return "local-build";
    case KB_FIT_CPU:
        return "cpu";
    default:
        return "refused";
    }
}

int kb_resolve_candidate_push(kb_install_result *res, const char *target, const kb_compat *c,
                              bool local_build)
{
    kb_candidate *n =
        realloc(res->candidates, (res->candidate_count + 1) * sizeof(*res->candidates));
    if (!n)
        return KB_ERR_NOMEM;
    res->candidates = n;
    kb_candidate *slot = &n[res->candidate_count++];
    memset(slot, 0, sizeof(*slot));
    slot->target = kb_strdup(target);
    slot->compat = *c;
    slot->local_build = local_build;
    return slot->target ? 0 : KB_ERR_NOMEM;
}

static int cmp_candidates(const void *a, const void *b)
{
    const kb_candidate *x = a, *y = b;
    return kb_target_rank_cmp(x->target, &x->compat, y->target, &y->compat);
}

/* Weigh every artifact of the index, plus a local build when a source exists. */
int kb_resolve_weigh(kb_install_result *res, kb_ctx *ctx, const kb_pkg_index *idx,
                     const kb_host *host, const kb_install_options *o)
{
    kb_compat_opts copts;
    kb_host_compat_opts(&copts, ctx);
    const kb_pkg_entry *source = NULL;
    for (size_t i = 0; i < idx->count; i++) {
        const kb_pkg_entry *e = &idx->entries[i];
        if (e->is_source) {
            source = e;
            continue;
        }
        kb_compat c = {0};
        kb_target t;
        if (kb_target_parse(NULL, &t, e->target) != 0)
            snprintf(c.reason, sizeof(c.reason), "unknown target id '%s'", e->target);
        else if (o->target && strcmp(o->target, e->target) != 0)
            snprintf(c.reason, sizeof(c.reason), "not the requested target %s", o->target);
        else if (o->target) {
            c.fit = KB_FIT_EXACT;
            c.score = KB_FIT_EXACT * 100;
            snprintf(c.reason, sizeof(c.reason), "requested with --target");
        } else
            kb_compat_check_host(&c, &t, host, &copts);
        if (kb_resolve_candidate_push(res, e->target, &c, false))
            return kb_error_oom(ctx);
    }
    int best_score = 0;
    for (size_t i = 0; i < res->candidate_count; i++)
        if (res->candidates[i].compat.score > best_score)
            best_score = res->candidates[i].compat.score;
    if (source && !o->target) {
        kb_compat c = {0};
        char *target = NULL;
        char why[200] = "";
        /* Not weighed further when a build cannot win: discovering toolchains runs nvcc --version,
         * hipcc (perl), rocm_agent_enumerator (python) ..., about 0.3-0.4 s, which was half of a
         * cold install of a 50 MiB CPU artifact (docs/perf.md). */
        if (best_score > KB_FIT_LOCAL_BUILD * 100)
            snprintf(c.reason, sizeof(c.reason), "not needed: a prebuilt artifact fits");
        else if (host->device_count == 0 && best_score >= KB_FIT_CPU * 100)
            /* With no GPU a local build is a CPU build, ranked under any fitting CPU artifact. */
            snprintf(c.reason, sizeof(c.reason),
                     "not needed: a CPU artifact fits and there is no GPU to build for");
        else if (!o->allow_build || !kb_config_bool(ctx, "build.allow"))
            snprintf(c.reason, sizeof(c.reason), "building from source is turned off");
        else if (kb_local_build_target(&target, why, sizeof(why), ctx, host) != 0)
            snprintf(c.reason, sizeof(c.reason), "cannot build here: %s", why);
        else {
            kb_target t;
            kb_target_parse(NULL, &t, target);
            c.fit = t.backend == KB_BACKEND_CPU ? KB_FIT_CPU : KB_FIT_LOCAL_BUILD;
            /* A CPU build from source still ranks under a CPU artifact. */
            c.score = c.fit * 100 - (t.backend == KB_BACKEND_CPU ? 50 : 0);
            snprintf(c.reason, sizeof(c.reason), "build %s from source on this machine", target);
        }
        int rc = kb_resolve_candidate_push(res, target ? target : "source", &c, true);
        free(target);
        if (rc)
            return kb_error_oom(ctx);
    }
    if (res->candidate_count > 1)
        qsort(res->candidates, res->candidate_count, sizeof(*res->candidates), cmp_candidates);
    return 0;
}

int kb_resolve_no_fit_error(kb_ctx *ctx, const kb_install_result *res, const kb_host *host)
{
    kb_buf b = KB_BUF_INIT;
    kb_buf_printf(&b, "nothing in %s@%s fits this machine (", res->name, res->version);
    if (host->device_count == 0)
        kb_buf_printf(&b, "no GPU, CPU %s", host->cpu_level);
    for (size_t i = 0; i < host->device_count; i++)
        kb_buf_printf(&b, "%s%s", i ? ", " : "", host->devices[i].arch);
    kb_buf_puts(&b, "); the registry has:");
    for (size_t i = 0; i < res->candidate_count; i++)
        kb_buf_printf(&b, "\n  %s: %s", res->candidates[i].target,
                      res->candidates[i].compat.reason);
    if (res->candidate_count == 0)
        kb_buf_puts(&b, " no artifacts");
    int rc = kb_error_set(ctx, KB_ERR_INCOMPATIBLE, "%s", b.data ? b.data : "no fit");
    kb_buf_free(&b);
    return rc;
}

static unsigned version_major(const char *version)
{
    uint64_t major = 0;
    char buf[16];
    snprintf(buf, sizeof(buf), "%s", version ? version : "");
    char *dot = strchr(buf, '.');
    if (dot)
        *dot = '\0';
    kb_parse_u64(buf, &major);
    return (unsigned)major;
}

/* The HIP toolchain for a ROCm device: the one linking against the device's runtime major
 * (hipcc 5.2: libamdhip64.so.5, hip-clang: .so.6); with the runtime unknown, whichever builds
 * the arch, hipcc first. */
static const kb_toolchain *rocm_toolchain(const kb_device *d, const kb_toolchains *tcs)
{
    const kb_toolchain *hipcc = &tcs->tc[KB_BACKEND_ROCM], *clang = &tcs->hip_clang;
    if (d->runtime_major)
        return d->runtime_major == clang->hip_major ? clang : hipcc;
    return kb_toolchain_can_build(hipcc, d->arch) || !kb_toolchain_can_build(clang, d->arch)
               ? hipcc
               : clang;
}

/* The target a device would be built for with the toolchain found here, or why not. */
static bool device_target(char *out, size_t size, char *why, size_t why_size, const kb_device *d,
                          const kb_toolchains *tcs, const char *host_arch, const char *os)
{
    const kb_toolchain *tc =
        d->backend == KB_BACKEND_ROCM ? rocm_toolchain(d, tcs) : &tcs->tc[d->backend];
    if (d->backend != KB_BACKEND_CUDA && d->backend != KB_BACKEND_ROCM) {
        snprintf(why, why_size, "no local builds for %s devices", kb_backend_name(d->backend));
        return false;
    }
    if (!tc->found) {
        snprintf(why, why_size, "%s is not installed (%s)", tc->name,
                 tc->note ? tc->note : "not found in PATH");
        return false;
    }
    if (!kb_toolchain_can_build(tc, d->arch)) {
        char *reason = kb_toolchain_cannot_build(tc, d->arch);
        snprintf(why, why_size, "%s", reason ? reason : "cannot build it");
        free(reason);
        return false;
    }
    unsigned major = d->backend == KB_BACKEND_ROCM ? tc->hip_major : version_major(tc->version);
    snprintf(out, size, "%s%u-%s-%s-%s", kb_backend_name(d->backend), major, d->arch, host_arch,
             os);
    return true;
}

int kb_local_build_target(char **target_out, char *why, size_t why_size, kb_ctx *ctx,
                          const kb_host *host)
{
    *target_out = NULL;
    kb_toolchains tcs;
    int rc = kb_toolchains_discover(ctx, &tcs);
    if (rc) {
        snprintf(why, why_size, "%s", kb_ctx_last_error(ctx)->message);
        return KB_ERR_TOOLCHAIN;
    }
    char arch[16], os[16], target[128];
    kb_host_platform(arch, sizeof(arch), os, sizeof(os));
    bool ok = false;
    for (size_t i = 0; !ok && i < host->device_count; i++)
        ok =
            device_target(target, sizeof(target), why, why_size, &host->devices[i], &tcs, arch, os);
    if (!ok && host->device_count == 0) {
        const kb_toolchain *cc = &tcs.tc[KB_BACKEND_CPU];
        if (cc->found && host->cpu_level[0]) {
            snprintf(target, sizeof(target), "cpu-%s-%s-%s", host->cpu_level, arch, os);
            ok = true;
        } else
            snprintf(why, why_size, "no C compiler found for a CPU build");
    }
    kb_toolchains_free(&tcs);
    if (!ok)
        return KB_ERR_TOOLCHAIN;
    *target_out = kb_strdup(target);
    return *target_out ? 0 : KB_ERR_NOMEM;
}
