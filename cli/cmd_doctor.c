/* kbpkg doctor: check toolchains, GPUs, registry, cache and trust, and say how to fix each. */
#include "cli.h"
#include "kbpkg/cache.h"
#include "kbpkg/trust.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum doctor_status { DOCTOR_PASS = 0, DOCTOR_WARN = 1, DOCTOR_FAIL = 2 } doctor_status;

static const char *const status_names[] = {"pass", "warn", "fail"};

/* The checks so far; printed as they come (text) or at the end (--json). */
typedef struct doctor {
    cli *c;
    json_t *checks;
    size_t counts[3];
} doctor;

static void report(doctor *d, doctor_status st, const char *area, const char *fix, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));

static void report(doctor *d, doctor_status st, const char *area, const char *fix, const char *fmt,
                   ...)
{
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    d->counts[st]++;
    json_array_append_new(d->checks,
                          json_pack("{s:s,s:s,s:s,s:s?}", "check", area, "status", status_names[st],
                                    "message", message, "fix", st == DOCTOR_PASS ? NULL : fix));
    if (d->c->json || (d->c->quiet && st != DOCTOR_FAIL))
        return;
    static const char *colors[] = {"32", "33", "31"};
    printf("%s%-4s%s  %-10s %s\n", cli_color_out(d->c, colors[st]), status_names[st],
           cli_color_out(d->c, "0"), area, message);
    if (st != DOCTOR_PASS && fix)
        printf("            fix: %s\n", fix);
}

static const char *toolchain_fix(const char *name, const char *backend)
{
    if (strcmp(name, "hip-clang") == 0)
        return "install clang-19 clang-tools-19 lld-19 llvm-19 (Debian 12) or set "
               "build.hip_clang; only needed to build rocm6 targets";
    if (strcmp(backend, "cuda") == 0)
        return "install the CUDA toolkit (nvcc) or set build.nvcc; only needed to build CUDA "
               "targets";
    if (strcmp(backend, "rocm") == 0)
        return "install hipcc (ROCm) or set build.hipcc; only needed to build ROCm targets";
    if (strcmp(backend, "cpu") == 0)
        return "install a C compiler (apt-get install build-essential) or set build.cc";
    return "install it to build this backend's targets";
}

static void check_toolchains(doctor *d)
{
    kb_toolchain_list *list = NULL;
    int rc = kb_toolchains_list(&list, d->c->ctx);
    if (rc) {
        report(d, DOCTOR_FAIL, "toolchain", "run 'kbpkg -v toolchains' to see why",
               "cannot look for compilers: %s", kb_ctx_last_error(d->c->ctx)->message);
        return;
    }
    for (size_t i = 0; i < list->count; i++) {
        const kb_toolchain_info *t = &list->items[i];
#ifndef __APPLE__
        if (!t->found && strcmp(t->backend, "metal") == 0)
            continue; /* Metal builds only on macOS: nothing to fix here */
#endif
        if (t->found)
            report(d, DOCTOR_PASS, "toolchain", NULL, "%s %s (%s)", t->name, t->version, t->path);
        else /* a missing C compiler means nothing at all can be built */
            report(d, strcmp(t->backend, "cpu") == 0 ? DOCTOR_FAIL : DOCTOR_WARN, "toolchain",
                   toolchain_fix(t->name, t->backend), "%s not found%s%s", t->name,
                   t->note ? ": " : "", t->note ? t->note : "");
    }
    kb_toolchain_list_free(list);
}

/* Why no GPU shows, as far as the probe can tell: telling someone whose driver is loaded to
 * install it sends them the wrong way. */
static const char *no_gpu_fix(const kb_probe *p)
{
    if (kb_probe_overridden(p))
        return "the device list is set to none (probe.devices, KBPKG_DEVICES or --device): "
               "unset it to look for real GPUs; CPU targets still work";
    if (*kb_probe_cuda_driver(p))
        return "the NVIDIA driver is loaded but shows no devices: check CUDA_VISIBLE_DEVICES (an "
               "empty or wrong list hides them), that you may open /dev/nvidia* (permissions, "
               "container device flags), and what nvidia-smi says; CPU targets still work";
    if (*kb_probe_hip_runtime(p))
        return "the ROCm runtime is loaded but shows no devices: check HIP_VISIBLE_DEVICES / "
               "ROCR_VISIBLE_DEVICES, that you may open /dev/kfd (the render and video groups), "
               "and what rocm-smi says; CPU targets still work";
    return "install the NVIDIA driver (libcuda) or ROCm (libamdhip64) to use a GPU; CPU targets "
           "still work";
}

static void check_gpus(doctor *d)
{
    kb_probe *p = NULL;
    if (kb_probe_new(&p, d->c->ctx)) {
        report(d, DOCTOR_FAIL, "gpu", "run 'kbpkg -v probe' to see which driver call failed",
               "probe failed: %s", kb_ctx_last_error(d->c->ctx)->message);
        return;
    }
    size_t n = kb_probe_device_count(p);
    for (size_t i = 0; i < n; i++)
        report(d, DOCTOR_PASS, "gpu", NULL, "%s:%d %s %s (runtime %s)",
               kb_probe_device_backend(p, i), kb_probe_device_index(p, i),
               kb_probe_device_arch(p, i), kb_probe_device_name(p, i),
               kb_probe_device_runtime(p, i));
    if (*kb_probe_cuda_driver(p))
        report(d, DOCTOR_PASS, "driver", NULL, "CUDA driver %s", kb_probe_cuda_driver(p));
    if (*kb_probe_hip_runtime(p))
        report(d, DOCTOR_PASS, "driver", NULL, "HIP runtime %s", kb_probe_hip_runtime(p));
    if (n == 0) {
        char why[768] = "";
        size_t used = 0;
        for (size_t i = 0; i < kb_probe_note_count(p) && used < sizeof(why); i++)
            used += (size_t)snprintf(why + used, sizeof(why) - used, "%s%s: %s", i ? "; " : "",
                                     kb_probe_note_source(p, i), kb_probe_note_message(p, i));
        report(d, DOCTOR_WARN, "gpu", no_gpu_fix(p), "no GPU found%s%s", *why ? ": " : "", why);
    }
    report(d, DOCTOR_PASS, "host", NULL, "%s (%s), %s", kb_probe_cpu_level(p), kb_probe_cpu_arch(p),
           kb_probe_os(p));
    kb_probe_free(p);
}

/* A registry reference names a layout folder unless it has a network scheme. */
static bool is_layout_ref(const char *ref)
{
    return !strstr(ref, "://") || strncmp(ref, "file://", 7) == 0;
}

static void check_registry(doctor *d)
{
    const char *ref = NULL;
    kb_ctx_get(&ref, d->c->ctx, "registry");
    if (!ref || !*ref) {
        report(d, DOCTOR_WARN, "registry", "kbpkg config set registry oci://HOST/NAMESPACE",
               "no registry configured");
        return;
    }
    kb_registry *r = NULL;
    int rc = kb_trust_registry_open(&r, d->c->ctx, ref); /* as install does: logins count */
    if (!rc)
        rc = kb_registry_check(r);
    const char *msg = rc ? kb_ctx_last_error(d->c->ctx)->message : "";
    if (!rc)
        report(d, DOCTOR_PASS, "registry", NULL, "%s answers", ref);
    else if (rc == KB_ERR_NOT_FOUND && is_layout_ref(ref))
        report(d, DOCTOR_WARN, "registry",
               "publish something first (kbpkg publish), or point --registry at another one", "%s",
               msg);
    else if (rc == KB_ERR_OFFLINE)
        report(d, DOCTOR_WARN, "registry", "drop --offline / the offline setting to check it", "%s",
               msg);
    else if (rc == KB_ERR_AUTH) {
        char fix[1024]; /* the same advice as the registry error itself */
        snprintf(fix, sizeof(fix),
                 "log in with: kbpkg login %s (or set KBPKG_REGISTRY_USER and "
                 "KBPKG_REGISTRY_PASSWORD)",
                 ref);
        report(d, DOCTOR_FAIL, "registry", fix, "%s", msg);
    } else
        report(d, DOCTOR_FAIL, "registry",
               "check the address and the network, or set --registry / the registry setting", "%s",
               msg);
    kb_registry_free(r);
}

static void check_cache(doctor *d)
{
    kb_package_list *list = NULL;
    int rc = kb_cache_verify(&list, d->c->ctx, NULL);
    const char *dir = kb_cache_dir(d->c->ctx);
    if (rc && rc != KB_ERR_DIGEST) {
        report(d, DOCTOR_FAIL, "cache", "check the folder's permissions, or set --cache DIR",
               "%s: %s", dir, kb_ctx_last_error(d->c->ctx)->message);
        kb_package_list_free(list);
        return;
    }
    size_t n = list ? kb_package_list_count(list) : 0;
    for (size_t i = 0; i < n; i++) {
        const kb_installed_pkg *p = kb_package_list_at(list, i);
        for (size_t j = 0; j < kb_package_list_issue_count(list, i); j++) {
            char fix[512];
            snprintf(fix, sizeof(fix), "kbpkg uninstall %s@%s && kbpkg install %s@%s", p->name,
                     p->version, p->name, p->version);
            report(d, DOCTOR_FAIL, "cache", fix, "%s@%s %s: %s", p->name, p->version, p->target,
                   kb_package_list_issue(list, i, j));
        }
    }
    if (!rc)
        report(d, DOCTOR_PASS, "cache", NULL, "%s: %zu installed package%s verified", dir, n,
               n == 1 ? "" : "s");
    kb_package_list_free(list);
}

/* Trusted public keys decide whether signed packages verify; a private key lets you sign. */
static void check_trust(doctor *d)
{
    kb_trust_key *keys = NULL;
    size_t count = 0;
    if (kb_trust_key_list(&keys, &count, d->c->ctx)) {
        report(d, DOCTOR_FAIL, "trust", "check <config.dir>/keys (kbpkg config get config.dir)",
               "cannot read the keys: %s", kb_ctx_last_error(d->c->ctx)->message);
        return;
    }
    size_t trusted = 0;
    const char *signing = NULL;
    for (size_t i = 0; i < count; i++) {
        trusted += keys[i].has_public && !keys[i].revoked;
        if (keys[i].is_default && keys[i].has_private && !keys[i].revoked)
            signing = keys[i].id;
    }
    if (trusted)
        report(d, DOCTOR_PASS, "trust", NULL, "%zu trusted key%s%s%s", trusted,
               trusted == 1 ? "" : "s", signing ? ", default signing key " : "",
               signing ? signing : "");
    else
        report(d, DOCTOR_WARN, "trust",
               "kbpkg key trust FILE (a publisher's public key), or kbpkg key generate",
               "no trusted keys: signed packages cannot be verified");
    kb_trust_key_list_free(keys, count);
}

int cmd_doctor(cli *c, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, "doctor", cli_json_options, argc, argv);
    if (!rc && first < argc)
        rc = cli_usage_error(c, "doctor", "unexpected argument '%s'", argv[first]);
    if (rc)
        return rc;
    doctor d = {c, json_array(), {0, 0, 0}};
    check_toolchains(&d);
    check_gpus(&d);
    check_registry(&d);
    check_cache(&d);
    check_trust(&d);
    kb_ctx_clear_error(c->ctx);
    bool ok = d.counts[DOCTOR_FAIL] == 0;
    if (c->json)
        cli_json_print(json_pack("{s:b,s:o,s:{s:I,s:I,s:I}}", "ok", ok, "checks", d.checks,
                                 "summary", "pass", (json_int_t)d.counts[DOCTOR_PASS], "warn",
                                 (json_int_t)d.counts[DOCTOR_WARN], "fail",
                                 (json_int_t)d.counts[DOCTOR_FAIL]));
    else {
        json_decref(d.checks);
        cli_say(c, "\n%zu passed, %zu warning%s, %zu failed", d.counts[DOCTOR_PASS],
                d.counts[DOCTOR_WARN], d.counts[DOCTOR_WARN] == 1 ? "" : "s",
                d.counts[DOCTOR_FAIL]);
    }
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}
