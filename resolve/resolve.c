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

const char *kbi_fit_name(kb_fit fit)
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

int kbi_resolve_candidate_push(kb_install_result *res, const char *target, const kb_compat *c,
                               bool local_build)
{
    if (kbi_array_grow((void **)&res->candidates, &res->candidates_cap, res->candidate_count + 1,
                       sizeof(*res->candidates)))
        return KB_ERR_NOMEM;
    kb_candidate *slot = &res->candidates[res->candidate_count++];
    memset(slot, 0, sizeof(*slot));
    slot->target = kbi_strdup(target);
    slot->compat = *c;
    slot->local_build = local_build;
    return slot->target ? 0 : KB_ERR_NOMEM;
}

static int cmp_candidates(const void *a, const void *b)
{
    const kb_candidate *x = a, *y = b;
    return kbi_target_rank_cmp(x->target, &x->compat, y->target, &y->compat);
}

/* Weigh every artifact of the index, plus a local build when a source exists. */
int kbi_resolve_weigh(kb_install_result *res, kb_ctx *ctx, const kb_pkg_index *idx,
                      const kb_host *host, const kb_install_options *o)
{
    kb_compat_opts copts;
    kbi_host_compat_opts(&copts, ctx);
    const kb_pkg_entry *source = NULL;
    for (size_t i = 0; i < idx->count; i++) {
        const kb_pkg_entry *e = &idx->entries[i];
        if (e->is_source) {
            source = e;
            continue;
        }
        kb_compat c = {0};
        kb_target t;
        if (kbi_target_parse(NULL, &t, e->target) != 0)
            snprintf(c.reason, sizeof(c.reason), "unknown target id '%s'", e->target);
        else if (o->target && strcmp(o->target, e->target) != 0)
            snprintf(c.reason, sizeof(c.reason), "not the requested target %s", o->target);
        else if (o->target) {
            c.fit = KB_FIT_EXACT;
            c.score = KB_FIT_EXACT * 100;
            snprintf(c.reason, sizeof(c.reason), "requested with --target");
        } else
            kbi_compat_check_host(&c, &t, host, &copts);
        if (kbi_resolve_candidate_push(res, e->target, &c, false))
            return kbi_error_oom(ctx);
    }
    int best_score = 0;
    for (size_t i = 0; i < res->candidate_count; i++)
        if (res->candidates[i].compat.score > best_score)
            best_score = res->candidates[i].compat.score;
    if (source && !o->target) {
        kb_compat c = {0};
        char *target = NULL;
        char why[240] = "";
        /* Not weighed further when a build cannot win: discovering toolchains runs nvcc --version,
         * hipcc (perl), rocm_agent_enumerator (python) ..., about 0.3-0.4 s, which was half of a
         * cold install of a 50 MiB CPU artifact (docs/perf.md). */
        if (best_score > KB_FIT_LOCAL_BUILD * 100)
            snprintf(c.reason, sizeof(c.reason), "not needed: a prebuilt artifact fits");
        else if (host->device_count == 0 && best_score >= KB_FIT_CPU * 100)
            /* With no GPU a local build is a CPU build, ranked under any fitting CPU artifact. */
            snprintf(c.reason, sizeof(c.reason),
                     "not needed: a CPU artifact fits and there is no GPU to build for");
        else if (!o->allow_build || !kbi_config_bool(ctx, "build.allow"))
            snprintf(c.reason, sizeof(c.reason), "building from source is turned off");
        else if (kbi_local_build_target(&target, why, sizeof(why), ctx, host, idx->declared) != 0)
            snprintf(c.reason, sizeof(c.reason), "cannot build here: %.*s",
                     (int)(sizeof(c.reason) - sizeof("cannot build here: ")), why);
        else {
            kb_target t;
            kbi_target_parse(NULL, &t, target);
            c.fit = t.backend == KB_BACKEND_CPU ? KB_FIT_CPU : KB_FIT_LOCAL_BUILD;
            /* A CPU build from source still ranks under a CPU artifact. */
            c.score = c.fit * 100 - (t.backend == KB_BACKEND_CPU ? 50 : 0);
            snprintf(c.reason, sizeof(c.reason), "build %s from source on this machine", target);
        }
        int rc = kbi_resolve_candidate_push(res, target ? target : "source", &c, true);
        free(target);
        if (rc)
            return kbi_error_oom(ctx);
    }
    if (res->candidate_count > 1)
        qsort(res->candidates, res->candidate_count, sizeof(*res->candidates), cmp_candidates);
    return 0;
}

int kbi_resolve_no_fit_error(kb_ctx *ctx, const kb_install_result *res, const kb_host *host)
{
    kb_buf b = KB_BUF_INIT;
    kbi_buf_printf(&b, "nothing in %s@%s fits this machine (", res->name, res->version);
    if (host->device_count == 0)
        kbi_buf_printf(&b, "no GPU, CPU %s", host->cpu_level);
    for (size_t i = 0; i < host->device_count; i++)
        kbi_buf_printf(&b, "%s%s", i ? ", " : "", host->devices[i].arch);
    kbi_buf_puts(&b, "); the registry has:");
    for (size_t i = 0; i < res->candidate_count; i++)
        kbi_buf_printf(&b, "\n  %s: %s", res->candidates[i].target,
                       res->candidates[i].compat.reason);
    if (res->candidate_count == 0)
        kbi_buf_puts(&b, " no artifacts");
    int rc = kbi_error_set(ctx, KB_ERR_INCOMPATIBLE, "%s", b.data ? b.data : "no fit");
    kbi_buf_free(&b);
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
    kbi_parse_u64(buf, &major);
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
    return kbi_toolchain_can_build(hipcc, d->arch) || !kbi_toolchain_can_build(clang, d->arch)
               ? hipcc
               : clang;
}

/* The declared arch of d's backend that ranks best on d by the compatibility rules (its own
 * arch, sm_90a on an sm_90 device, sm_80 on an sm_86 one, a compute_XY PTX below it), as a
 * target built with runtime major `runtime`. A bare backend entry stands for d's own arch. */
static bool declared_arch(char *arch, size_t size, const char *declared, const kb_device *d,
                          unsigned runtime, const char *host_arch, const char *os,
                          const kb_compat_opts *copts)
{
    kb_backend b;
    char a[48];
    size_t pos = 0;
    int best = 0;
    while (kbi_declared_next(&b, a, sizeof(a), declared, &pos)) {
        if (b != d->backend)
            continue;
        char id[160];
        kb_target t;
        kb_compat c;
        char rt[16] = ""; /* cpu ids have no runtime number */
        if (b != KB_BACKEND_CPU)
            snprintf(rt, sizeof(rt), "%u", runtime);
        snprintf(id, sizeof(id), "%s%s-%s-%s-%s", kbi_backend_name(b), rt, *a ? a : d->arch,
                 host_arch, os);
        if (kbi_target_parse(NULL, &t, id) != 0)
            continue;
        kbi_compat_check(&c, &t, d, copts);
        if (c.fit != KB_FIT_NONE && c.score > best) {
            best = c.score;
            snprintf(arch, size, "%s", t.arch);
        }
    }
    return best > 0;
}

/* "the package declares a, b; " for messages: what a build could have made. */
static void declared_list(char *out, size_t size, const char *declared)
{
    kb_buf b = KB_BUF_INIT;
    kb_backend be;
    char a[48], entry[96];
    size_t pos = 0;
    while (kbi_declared_next(&be, a, sizeof(a), declared, &pos))
        if (kbi_declared_format(entry, sizeof(entry), be, a))
            kbi_buf_printf(&b, "%s%s", b.len ? ", " : "", entry);
    snprintf(out, size, "%s", b.len ? b.data : "nothing");
    kbi_buf_free(&b);
}

/* The target a device would be built for with the toolchain found here, or why not. declared
 * (NULL: not recorded) limits the build to an arch the package declares. */
static bool device_target(char *out, size_t size, char *why, size_t why_size, const kb_device *d,
                          const kb_toolchains *tcs, const char *declared,
                          const kb_compat_opts *copts)
{
    const kb_toolchain *tc =
        d->backend == KB_BACKEND_ROCM ? rocm_toolchain(d, tcs) : &tcs->tc[d->backend];
    char host_arch[16], os[16], arch[48], list[160];
    kbi_host_platform(host_arch, sizeof(host_arch), os, sizeof(os));
    if (d->backend != KB_BACKEND_CUDA && d->backend != KB_BACKEND_ROCM) {
        snprintf(why, why_size, "no local builds for %s devices", kbi_backend_name(d->backend));
        return false;
    }
    unsigned runtime = !tc->found                      ? d->runtime_major
                       : d->backend == KB_BACKEND_ROCM ? tc->hip_major
                                                       : version_major(tc->version);
    snprintf(arch, sizeof(arch), "%s", d->arch);
    if (declared &&
        !declared_arch(arch, sizeof(arch), declared, d, runtime, host_arch, os, copts)) {
        declared_list(list, sizeof(list), declared);
        snprintf(why, why_size, "the package declares %s; none runs on %s", list, d->arch);
        return false;
    }
    if (!tc->found) {
        snprintf(why, why_size, "%s is not installed (%s)", tc->name,
                 tc->note ? tc->note : "not found in PATH");
        return false;
    }
    if (!kbi_toolchain_can_build(tc, arch)) {
        char *reason = kbi_toolchain_cannot_build(tc, arch);
        snprintf(why, why_size, "%s", reason ? reason : "cannot build it");
        free(reason);
        return false;
    }
    snprintf(out, size, "%s%u-%s-%s-%s", kbi_backend_name(d->backend), runtime, arch, host_arch,
             os);
    return true;
}

/* The CPU level to build for: the host's, or the best declared level it runs (NULL declared:
 * the host's). */
static bool cpu_level(char *out, size_t size, char *why, size_t why_size, const kb_host *host,
                      const char *declared, const kb_compat_opts *copts, const char *host_arch,
                      const char *os)
{
    kb_device cpu = {.backend = KB_BACKEND_CPU};
    snprintf(cpu.arch, sizeof(cpu.arch), "%s", host->cpu_level);
    snprintf(out, size, "%s", host->cpu_level);
    if (!declared || declared_arch(out, size, declared, &cpu, 0, host_arch, os, copts))
        return true;
    char list[160];
    declared_list(list, sizeof(list), declared);
    snprintf(why, why_size, "the package declares %s; none runs on this CPU (%s)", list,
             host->cpu_level);
    return false;
}

int kbi_local_build_target(char **target_out, char *why, size_t why_size, kb_ctx *ctx,
                           const kb_host *host, const char *declared)
{
    *target_out = NULL;
    kb_toolchains tcs;
    int rc = kbi_toolchains_discover(ctx, &tcs);
    if (rc) {
        snprintf(why, why_size, "%s", kb_ctx_last_error(ctx)->message);
        return KB_ERR_TOOLCHAIN;
    }
    kb_compat_opts copts;
    kbi_host_compat_opts(&copts, ctx);
    char arch[16], os[16], target[160], level[48];
    kbi_host_platform(arch, sizeof(arch), os, sizeof(os));
    bool ok = false;
    for (size_t i = 0; !ok && i < host->device_count; i++)
        ok = device_target(target, sizeof(target), why, why_size, &host->devices[i], &tcs, declared,
                           &copts);
    if (!ok && host->device_count == 0) {
        const kb_toolchain *cc = &tcs.tc[KB_BACKEND_CPU];
        if (!cc->found || !host->cpu_level[0])
            snprintf(why, why_size, "no C compiler found for a CPU build");
        else if (cpu_level(level, sizeof(level), why, why_size, host, declared, &copts, arch, os)) {
            snprintf(target, sizeof(target), "cpu-%s-%s-%s", level, arch, os);
            ok = true;
        }
    }
    kbi_toolchains_free(&tcs);
    if (!ok)
        return KB_ERR_TOOLCHAIN;
    *target_out = kbi_strdup(target);
    return *target_out ? 0 : KB_ERR_NOMEM;
}
