/* Build plans: the targets a manifest declares, each paired with its toolchain or a skip reason. */
#include "builder/builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "rocm" or "cuda" alone names the backend whatever its runtime version ("rocm5-gfx1030-...",
 * "rocm6-..."): users name backends, target ids carry the runtime major. */
static bool backend_filter_matches(const char *target, const char *filter)
{
    size_t n = strlen(filter);
    if (strncmp(target, filter, n) != 0 || target[n] < '0' || target[n] > '9')
        return false;
    for (unsigned b = KB_BACKEND_CUDA; b <= KB_BACKEND_CPU; b++)
        if (strcmp(filter, kbi_backend_name((kb_backend)b)) == 0)
            return true;
    return false;
}

bool kbi_target_matches(const char *target, const char *filter)
{
    size_t n = strlen(filter);
    return (strncmp(target, filter, n) == 0 && (target[n] == '\0' || target[n] == '-')) ||
           backend_filter_matches(target, filter);
}

static bool wanted(const char *target, const char *const *filters, size_t count)
{
    if (count == 0)
        return true;
    for (size_t i = 0; i < count; i++)
        if (kbi_target_matches(target, filters[i]))
            return true;
    return false;
}

/* The runtime part of a target id: cuda13 (the toolchain's major version), rocm5/rocm6 (the
 * HIP runtime the toolchain links against: hipcc 5.2 -> 5, hip-clang -> 6). */
static void runtime_prefix(char *out, size_t size, kb_backend b, const kb_toolchain *tc)
{
    unsigned major = tc && tc->found && tc->version ? (unsigned)strtoul(tc->version, NULL, 10) : 0;
    if (b == KB_BACKEND_CUDA)
        snprintf(out, size, "cuda%u", major ? major : 13);
    else if (b == KB_BACKEND_ROCM)
        snprintf(out, size, "rocm%u", tc && tc->hip_major ? tc->hip_major : 5);
    else if (b == KB_BACKEND_METAL)
        snprintf(out, size, "metal3");
    else
        snprintf(out, size, "cpu");
}

/* requires: {cuda: {min: "12.4"}}: a toolchain older than the package needs is a skip with
 * the reason, not a build that fails on a missing intrinsic. */
static char *requirement_unmet(const kb_requirement *req, const kb_toolchain *tc)
{
    /* hip-clang's ROCm is that of the HIP headers and device libraries it compiles with
     * (Debian 12's: 5.2), not its clang version */
    const char *have = tc->hip_headers ? tc->hip_headers : tc->version;
    if (!req || !req->min || !have || kbi_version_compare(have, req->min) >= 0)
        return NULL;
    if (tc->hip_headers)
        return kbi_asprintf("the package requires rocm >= %s; %s here compiles with HIP %s headers",
                            req->min, tc->name, have);
    return kbi_asprintf("the package requires %s >= %s; %s here is %s",
                        kbi_backend_name(tc->backend), req->min, tc->name, tc->version);
}

static int add_item(kb_plan *p, const kb_plan_host *host, kb_backend b, const char *arch,
                    const kb_toolchain *tc, const kb_requirement *req)
{
    if (kbi_array_grow((void **)&p->items, &p->cap, p->count + 1, sizeof(*p->items)))
        return KB_ERR_NOMEM;
    kb_plan_item *it = &p->items[p->count];
    memset(it, 0, sizeof(*it));
    char runtime[16];
    runtime_prefix(runtime, sizeof(runtime), b, tc);
    it->backend = b;
    snprintf(it->arch, sizeof(it->arch), "%s", arch);
    if (b == KB_BACKEND_METAL)
        snprintf(it->target, sizeof(it->target), "metal3-apple-arm64-darwin");
    else
        snprintf(it->target, sizeof(it->target), "%s-%s-%s-%s", runtime, arch, host->arch,
                 host->os);
    for (size_t i = 0; i < p->count; i++)
        if (strcmp(p->items[i].target, it->target) == 0)
            return 0; /* declared twice (cpu host level == v2 fallback): keep one */
    p->count++;
    if (!tc)
        it->skip = kbi_strdup("no toolchain for this backend");
    else if (!kbi_toolchain_can_build(tc, arch))
        it->skip = kbi_toolchain_cannot_build(tc, arch);
    else if (!(it->skip = requirement_unmet(req, tc)))
        it->tc = tc;
    return (it->skip || it->tc) ? 0 : KB_ERR_NOMEM;
}

/* "sm_80" or "compute_80" -> "compute_80". */
static void ptx_arch(char *out, size_t size, const char *ptx)
{
    if (kbi_str_starts(ptx, "sm_"))
        snprintf(out, size, "compute_%s", ptx + 3);
    else
        snprintf(out, size, "%s", ptx);
}

/* CPU: the declared levels, or the host's level plus x86_64_v2 as the portable fallback
 * (a v3-only artifact would leave pre-Haswell and many VM hosts with nothing). */
static int add_cpu_items(kb_plan *p, const kb_backend_spec *spec, const kb_toolchains *tcs,
                         const kb_plan_host *host, const kb_requirement *req)
{
    const kb_toolchain *cc = &tcs->tc[KB_BACKEND_CPU];
    int rc = 0;
    for (size_t i = 0; !rc && i < spec->archs.len; i++)
        rc = add_item(p, host, KB_BACKEND_CPU, spec->archs.items[i], cc, req);
    if (spec->archs.len)
        return rc;
    if (strcmp(host->arch, "x86_64") == 0) {
        const char *level =
            kbi_str_starts(host->cpu_level, "x86_64_v") && strcmp(host->cpu_level, "x86_64_v1") != 0
                ? host->cpu_level
                : "x86_64_v2";
        rc = add_item(p, host, KB_BACKEND_CPU, level, cc, req);
        if (!rc)
            rc = add_item(p, host, KB_BACKEND_CPU, "x86_64_v2", cc, req);
        return rc;
    }
    return add_item(p, host, KB_BACKEND_CPU, host->arch, cc, req);
}

/* ROCm: per arch a rocm5 target from hipcc (ROCm 5.2's ABI, libamdhip64.so.5) for the archs
 * ROCm 5 knew, and a rocm6 target from hip-clang (libamdhip64.so.6) for every arch, so ROCm 6
 * hosts get code linked against their runtime. Each one it cannot build says why. */
static int add_rocm_items(kb_plan *p, const kb_backend_spec *spec, const kb_toolchains *tcs,
                          const kb_plan_host *host, const kb_requirement *req)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < spec->archs.len; i++) {
        const char *arch = spec->archs.items[i];
        if (kbi_rocm5_era_arch(arch))
            rc = add_item(p, host, KB_BACKEND_ROCM, arch, &tcs->tc[KB_BACKEND_ROCM], req);
        if (!rc)
            rc = add_item(p, host, KB_BACKEND_ROCM, arch, &tcs->hip_clang, req);
    }
    return rc;
}

static int add_backend_items(kb_plan *p, const kb_manifest *m, kb_backend b,
                             const kb_toolchains *tcs, const kb_plan_host *host)
{
    const kb_backend_spec *spec = &m->backends[b];
    if (!spec->present)
        return 0;
    const kb_toolchain *tc = &tcs->tc[b];
    const kb_requirement *req = &m->requires[b];
    int rc = 0;
    switch (b) {
    case KB_BACKEND_ROCM:
        return add_rocm_items(p, spec, tcs, host, req);
    case KB_BACKEND_CUDA:
        for (size_t i = 0; !rc && i < spec->archs.len; i++)
            rc = add_item(p, host, b, spec->archs.items[i], tc, req);
        if (!rc && spec->ptx) {
            char arch[48];
            ptx_arch(arch, sizeof(arch), spec->ptx);
            rc = add_item(p, host, b, arch, tc, req);
        }
        return rc;
    case KB_BACKEND_METAL:
        return add_item(p, host, b, "apple", tc, req);
    case KB_BACKEND_CPU:
        return add_cpu_items(p, spec, tcs, host, req);
    default:
        return 0;
    }
}

int kbi_plan_make(kb_ctx *ctx, kb_plan *out, const kb_manifest *m, const kb_toolchains *tcs,
                  const kb_plan_host *host, const char *const *filters, size_t filter_count)
{
    memset(out, 0, sizeof(*out));
    kb_plan all = {0};
    static const kb_backend order[] = {KB_BACKEND_CUDA, KB_BACKEND_ROCM, KB_BACKEND_METAL,
                                       KB_BACKEND_CPU};
    for (size_t i = 0; i < KB_ARRAY_LEN(order); i++)
        if (add_backend_items(&all, m, order[i], tcs, host)) {
            kbi_plan_free(&all);
            return kbi_error_oom(ctx);
        }
    for (size_t f = 0; f < filter_count; f++) {
        bool hit = false;
        for (size_t i = 0; i < all.count && !hit; i++)
            hit = kbi_target_matches(all.items[i].target, filters[f]);
        if (!hit) {
            kb_buf declared = KB_BUF_INIT;
            for (size_t i = 0; i < all.count; i++)
                kbi_buf_printf(&declared, "%s%s", i ? ", " : "", all.items[i].target);
            int rc = kbi_error_set(ctx, KB_ERR_TARGET,
                                   "target '%s' is not declared by %s (declared: %s)", filters[f],
                                   m->name, declared.data ? declared.data : "none");
            kbi_buf_free(&declared);
            kbi_plan_free(&all);
            return rc;
        }
    }
    /* Keep the wanted items in place, free the others. */
    size_t kept = 0;
    for (size_t i = 0; i < all.count; i++) {
        if (wanted(all.items[i].target, filters, filter_count))
            all.items[kept++] = all.items[i];
        else
            free(all.items[i].skip);
    }
    all.count = kept;
    *out = all;
    return 0;
}

void kbi_plan_free(kb_plan *p)
{
    for (size_t i = 0; i < p->count; i++)
        free(p->items[i].skip);
    free(p->items);
    p->items = NULL;
    p->count = p->cap = 0;
}
