/* kbi_probe_run: overrides first, then the CUDA driver, the KFD topology, HIP and the CPU. */
#include "probe/cpu.h"
#include "probe/probe_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kbi_probe_note_add(kb_ctx *ctx, kb_probe_report *r, const char *source, const char *fmt, ...)
{
    if (kbi_array_grow((void **)&r->notes, &r->notes_cap, r->note_count + 1, sizeof(*r->notes)))
        return kbi_error_oom(ctx);
    kb_probe_note *n = &r->notes[r->note_count++];
    snprintf(n->source, sizeof(n->source), "%s", source);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->message, sizeof(n->message), fmt, ap);
    va_end(ap);
    kbi_log(ctx, KB_LOG_DEBUG, "probe: %s: %s", n->source, n->message);
    return 0;
}

const char *kbi_probe_load_symbols(void *api, void *lib, const kbi_dl_symbol *table, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *sym = dlsym(lib, table[i].name);
        if (!sym && !table[i].optional)
            return table[i].name;
        /* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
        memcpy((char *)api + table[i].offset, &sym, sizeof(sym));
    }
    return NULL;
}

int kbi_probe_device_add(kb_ctx *ctx, kb_probe_report *r, const kb_device *d)
{
    kb_host *h = &r->host;
    if (kbi_array_grow((void **)&h->devices, &h->devices_cap, h->device_count + 1,
                       sizeof(*h->devices)))
        return kbi_error_oom(ctx);
    h->devices[h->device_count++] = *d;
    return 0;
}

/* A CPU named in the device list ("sm_86,x86_64_v3") is the host's CPU level, as in
 * kb_target_check; it wins over cpuid and probe.cpu. host.devices keeps only the GPUs. */
static void take_cpu_from_devices(kb_host *h)
{
    size_t kept = 0;
    for (size_t i = 0; i < h->device_count; i++) {
        const kb_device *d = &h->devices[i];
        if (d->backend != KB_BACKEND_CPU) {
            h->devices[kept++] = *d;
            continue;
        }
        snprintf(h->cpu_level, sizeof(h->cpu_level), "%.15s", d->arch);
        snprintf(h->cpu_arch, sizeof(h->cpu_arch), "%s", kbi_cpu_level_arch(d->arch));
    }
    h->device_count = kept;
}

/* probe.devices replaces the GPU probe entirely: no driver is touched. */
static int apply_device_override(kb_ctx *ctx, kb_probe_report *r, const char *spec)
{
    kb_device *devices = NULL;
    size_t count = 0;
    int rc = kbi_devices_parse(ctx, &devices, &count, spec);
    if (rc) {
        kbi_error_prefix(ctx, "probe.devices");
        return rc;
    }
    r->host.devices = devices;
    r->host.device_count = r->host.devices_cap = count;
    take_cpu_from_devices(&r->host);
    r->overridden = true;
    return kbi_probe_note_add(ctx, r, "override", "devices from probe.devices: %s", spec);
}

static unsigned probe_timeout_ms(const kb_ctx *ctx)
{
    long ms = kbi_config_long(ctx, "probe.timeout_ms");
    return ms > 0 ? (unsigned)ms : 1; /* 0 would mean "wait forever": never block on a driver */
}

static int probe_gpus(kb_ctx *ctx, kb_probe_report *r)
{
    unsigned timeout_ms = probe_timeout_ms(ctx);
    int rc = kbi_probe_cuda(ctx, r, kbi_config_str(ctx, "probe.cuda_lib"), timeout_ms);
    size_t amd_found = 0;
    if (!rc)
        rc = kbi_probe_kfd(ctx, r, kbi_config_str(ctx, "probe.sysfs_root"), &amd_found);
    /* HIP only refines what KFD found; loading it on a machine without AMD GPUs is waste. */
    if (!rc && amd_found)
        rc = kbi_probe_hip(ctx, r, kbi_config_str(ctx, "probe.hip_lib"), timeout_ms);
    return rc;
}

int kbi_probe_run(kb_ctx *ctx, kb_probe_report *out)
{
    memset(out, 0, sizeof(*out));
    int rc = kbi_probe_cpu(ctx, out, kbi_config_str(ctx, "probe.cpu"));
    const char *spec = kbi_config_str(ctx, "probe.devices");
    if (!rc)
        rc = *spec ? apply_device_override(ctx, out, spec) : probe_gpus(ctx, out);
    if (rc)
        kbi_probe_report_free(out);
    return rc;
}

void kbi_probe_report_free(kb_probe_report *r)
{
    if (!r)
        return;
    kbi_host_free(&r->host);
    free(r->notes);
    memset(r, 0, sizeof(*r));
}
