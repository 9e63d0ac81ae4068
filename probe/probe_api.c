/* The public probe handle: a kb_probe_report behind accessors the CLI and embedders use. */
#include "kbpkg/probe.h"
#include "probe/probe_internal.h"

#include <stdio.h>
#include <stdlib.h>

struct kb_probe {
    kb_probe_report report;
    char (*runtimes)[24]; /* per device: "12.4", "any", "" */
};

static void format_runtime(char *buf, size_t size, const kb_device *d)
{
    if (d->runtime_any)
        snprintf(buf, size, "any");
    else if (d->runtime_major)
        snprintf(buf, size, "%u.%u", d->runtime_major, d->runtime_minor);
    else
        buf[0] = '\0';
}

KB_EXTERN int kb_probe_new(kb_probe **out, kb_ctx *ctx)
{
    *out = NULL;
    kb_probe *p = calloc(1, sizeof(*p));
    if (!p)
        return kbi_error_oom(ctx);
    int rc = kbi_probe_run(ctx, &p->report);
    size_t n = p->report.host.device_count;
    if (!rc && n && !(p->runtimes = calloc(n, sizeof(*p->runtimes))))
        rc = kbi_error_oom(ctx);
    if (rc) {
        kb_probe_free(p);
        return rc;
    }
    for (size_t i = 0; i < n; i++)
        format_runtime(p->runtimes[i], sizeof(p->runtimes[i]), &p->report.host.devices[i]);
    *out = p;
    return 0;
}

KB_EXTERN void kb_probe_free(kb_probe *probe)
{
    if (!probe)
        return;
    kbi_probe_report_free(&probe->report);
    free(probe->runtimes);
    free(probe);
}

static const kb_device *device_at(const kb_probe *p, size_t i)
{
    return p && i < p->report.host.device_count ? &p->report.host.devices[i] : NULL;
}

KB_EXTERN size_t kb_probe_device_count(const kb_probe *probe)
{
    return probe ? probe->report.host.device_count : 0;
}

KB_EXTERN const char *kb_probe_device_backend(const kb_probe *probe, size_t i)
{
    const kb_device *d = device_at(probe, i);
    return d ? kbi_backend_name(d->backend) : NULL;
}

KB_EXTERN const char *kb_probe_device_arch(const kb_probe *probe, size_t i)
{
    const kb_device *d = device_at(probe, i);
    return d ? d->arch : NULL;
}

KB_EXTERN const char *kb_probe_device_name(const kb_probe *probe, size_t i)
{
    const kb_device *d = device_at(probe, i);
    return d ? d->name : NULL;
}

KB_EXTERN uint64_t kb_probe_device_memory(const kb_probe *probe, size_t i)
{
    const kb_device *d = device_at(probe, i);
    return d ? d->memory_bytes : 0;
}

KB_EXTERN const char *kb_probe_device_pci_id(const kb_probe *probe, size_t i)
{
    const kb_device *d = device_at(probe, i);
    return d ? d->pci_id : NULL;
}

KB_EXTERN const char *kb_probe_device_runtime(const kb_probe *probe, size_t i)
{
    return device_at(probe, i) ? probe->runtimes[i] : NULL;
}

KB_EXTERN int kb_probe_device_index(const kb_probe *probe, size_t i)
{
    const kb_device *d = device_at(probe, i);
    return d ? d->index : -1;
}

KB_EXTERN const char *kb_probe_cpu_arch(const kb_probe *probe)
{
    return probe->report.host.cpu_arch;
}

KB_EXTERN const char *kb_probe_cpu_level(const kb_probe *probe)
{
    return probe->report.host.cpu_level;
}

KB_EXTERN const char *kb_probe_os(const kb_probe *probe)
{
    return probe->report.host.os;
}

KB_EXTERN const char *kb_probe_glibc(const kb_probe *probe)
{
    return probe->report.host.glibc;
}

KB_EXTERN const char *kb_probe_cuda_driver(const kb_probe *probe)
{
    return probe->report.cuda_driver;
}

KB_EXTERN const char *kb_probe_hip_runtime(const kb_probe *probe)
{
    return probe->report.hip_runtime;
}

KB_EXTERN const char *kb_probe_hip_driver(const kb_probe *probe)
{
    return probe->report.hip_driver;
}

KB_EXTERN int kb_probe_overridden(const kb_probe *probe)
{
    return probe->report.overridden ? 1 : 0;
}

KB_EXTERN size_t kb_probe_note_count(const kb_probe *probe)
{
    return probe ? probe->report.note_count : 0;
}

KB_EXTERN const char *kb_probe_note_source(const kb_probe *probe, size_t i)
{
    return probe && i < probe->report.note_count ? probe->report.notes[i].source : NULL;
}

KB_EXTERN const char *kb_probe_note_message(const kb_probe *probe, size_t i)
{
    return probe && i < probe->report.note_count ? probe->report.notes[i].message : NULL;
}
