/* CUDA probe: the driver library through dlopen, in a child process bounded in time. */
#include "probe/probe_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The few driver API types we need, declared here so no CUDA headers are required. */
typedef int cu_result;
typedef int cu_device;
enum {
    CU_SUCCESS = 0,
    CU_ATTR_PCI_BUS_ID = 33,
    CU_ATTR_PCI_DEVICE_ID = 34,
    CU_ATTR_PCI_DOMAIN_ID = 50,
    CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
};

typedef struct cuda_api {
    cu_result (*init)(unsigned flags);
    cu_result (*driver_get_version)(int *version);
    cu_result (*device_get_count)(int *count);
    cu_result (*device_get)(cu_device *dev, int ordinal);
    cu_result (*device_get_name)(char *name, int len, cu_device dev);
    cu_result (*device_get_attribute)(int *value, int attribute, cu_device dev);
    cu_result (*device_total_mem)(size_t *bytes, cu_device dev);
    cu_result (*get_error_string)(cu_result error, const char **text); /* optional */
} cuda_api;

/* The most devices we report; more than any host has today. */
#define CUDA_MAX_DEVICES 64

typedef struct cuda_wire_device {
    char name[128];
    char arch[16];
    char pci_id[32];
    uint64_t memory_bytes;
} cuda_wire_device;

/* What the child sends back: either a failure (problem set) or the devices. */
typedef struct cuda_wire {
    char problem[256]; /* a note; "" on success */
    int driver_version;
    int device_count; /* as the driver reports it */
    int reported;     /* entries filled in devices[] */
    cuda_wire_device devices[CUDA_MAX_DEVICES];
} cuda_wire;

/* Stage markers: how far the child got before it hung. */
enum { STAGE_DLOPEN = 'o', STAGE_INIT = 'i', STAGE_QUERY = 'q' };

static const kbi_dl_symbol cuda_symbols[] = {
    {"cuInit", offsetof(cuda_api, init), false},
    {"cuDriverGetVersion", offsetof(cuda_api, driver_get_version), false},
    {"cuDeviceGetCount", offsetof(cuda_api, device_get_count), false},
    {"cuDeviceGet", offsetof(cuda_api, device_get), false},
    {"cuDeviceGetName", offsetof(cuda_api, device_get_name), false},
    {"cuDeviceGetAttribute", offsetof(cuda_api, device_get_attribute), false},
    {"cuDeviceTotalMem_v2", offsetof(cuda_api, device_total_mem), false},
    {"cuGetErrorString", offsetof(cuda_api, get_error_string), true},
};

static bool load_symbols(cuda_api *api, void *lib, const char *lib_name, cuda_wire *w)
{
    const char *missing =
        kbi_probe_load_symbols(api, lib, cuda_symbols, KB_ARRAY_LEN(cuda_symbols));
    if (missing)
        snprintf(w->problem, sizeof(w->problem), "%s has no symbol %s (not a CUDA driver?)",
                 lib_name, missing);
    return !missing;
}

static void describe_error(const cuda_api *api, cu_result rc, char *buf, size_t size)
{
    const char *text = NULL;
    if (api->get_error_string && api->get_error_string(rc, &text) != CU_SUCCESS)
        text = NULL;
    if (text)
        snprintf(buf, size, "error %d: %s", rc, text);
    else
        snprintf(buf, size, "error %d", rc);
}

static void query_device(const cuda_api *api, int ordinal, cuda_wire_device *d, cuda_wire *w)
{
    cu_device dev = 0;
    int major = 0, minor = 0, bus = 0, slot = 0, domain = 0;
    size_t mem = 0;
    char why[160];
    cu_result rc = api->device_get(&dev, ordinal);
    if (rc == CU_SUCCESS)
        rc = api->device_get_attribute(&major, CU_ATTR_COMPUTE_CAPABILITY_MAJOR, dev);
    if (rc == CU_SUCCESS)
        rc = api->device_get_attribute(&minor, CU_ATTR_COMPUTE_CAPABILITY_MINOR, dev);
    if (rc != CU_SUCCESS) {
        describe_error(api, rc, why, sizeof(why));
        snprintf(w->problem, sizeof(w->problem), "device %d: no compute capability (%s)", ordinal,
                 why);
        return;
    }
    snprintf(d->arch, sizeof(d->arch), "sm_%d%d", major, minor);
    /* Name, memory and PCI location are descriptive: a failure leaves them empty. */
    if (api->device_get_name(d->name, (int)sizeof(d->name), dev) != CU_SUCCESS)
        d->name[0] = '\0';
    d->name[sizeof(d->name) - 1] = '\0';
    if (api->device_total_mem(&mem, dev) == CU_SUCCESS)
        d->memory_bytes = mem;
    if (api->device_get_attribute(&bus, CU_ATTR_PCI_BUS_ID, dev) == CU_SUCCESS &&
        api->device_get_attribute(&slot, CU_ATTR_PCI_DEVICE_ID, dev) == CU_SUCCESS &&
        api->device_get_attribute(&domain, CU_ATTR_PCI_DOMAIN_ID, dev) == CU_SUCCESS)
        snprintf(d->pci_id, sizeof(d->pci_id), "%04x:%02x:%02x.0", (unsigned)domain & 0xffffu,
                 (unsigned)bus & 0xffu, (unsigned)slot & 0x1fu);
    w->reported = ordinal + 1;
}

static void query_driver(const cuda_api *api, kb_probe_child_io *io, cuda_wire *w)
{
    char why[200];
    /* cuDriverGetVersion needs no cuInit, so the version is known even when init fails. */
    if (api->driver_get_version(&w->driver_version) != CU_SUCCESS)
        w->driver_version = 0;
    kbi_probe_child_stage(io, STAGE_INIT);
    cu_result rc = api->init(0);
    if (rc != CU_SUCCESS) {
        describe_error(api, rc, why, sizeof(why));
        const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
        snprintf(w->problem, sizeof(w->problem), "cuInit failed (%s)%s%s%s", why,
                 cvd ? "; CUDA_VISIBLE_DEVICES='" : "", cvd ? cvd : "", cvd ? "'" : "");
        return;
    }
    kbi_probe_child_stage(io, STAGE_QUERY);
    if ((rc = api->device_get_count(&w->device_count)) != CU_SUCCESS) {
        describe_error(api, rc, why, sizeof(why));
        snprintf(w->problem, sizeof(w->problem), "driver query failed (%s)", why);
        return;
    }
    int n = w->device_count < CUDA_MAX_DEVICES ? w->device_count : CUDA_MAX_DEVICES;
    for (int i = 0; i < n && !w->problem[0]; i++)
        query_device(api, i, &w->devices[i], w);
}

/* Runs in the child: everything that touches the driver. */
static void cuda_child(kb_probe_child_io *io, void *result, const void *arg)
{
    const char *lib_name = arg;
    cuda_wire *w = result;
    kbi_probe_child_stage(io, STAGE_DLOPEN);
    void *lib = dlopen(lib_name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *err = dlerror();
        snprintf(w->problem, sizeof(w->problem), "%s not found (dlopen: %s)", lib_name,
                 err ? err : "unknown error");
        return;
    }
    cuda_api api;
    memset(&api, 0, sizeof(api));
    if (load_symbols(&api, lib, lib_name, w))
        query_driver(&api, io, w);
    /* No dlclose: a child exits right away and some drivers crash on unload; in-process the
     * application keeps the driver loaded anyway. */
}

static const char *stage_call(char stage, const char *lib)
{
    switch (stage) {
    case STAGE_DLOPEN:
        return lib;
    case STAGE_INIT:
        return "cuInit";
    case STAGE_QUERY:
        return "the CUDA driver";
    default:
        return "the CUDA probe";
    }
}

static int note_outcome(kb_ctx *ctx, kb_probe_report *r, const kb_probe_child_outcome *o,
                        const char *lib, unsigned timeout_ms)
{
    switch (o->status) {
    case KB_PROBE_CHILD_TIMEOUT:
        if (o->stage == STAGE_DLOPEN)
            return kbi_probe_note_add(ctx, r, "cuda", "dlopen(%s) did not return within %u ms", lib,
                                      timeout_ms);
        return kbi_probe_note_add(ctx, r, "cuda", "%s did not return within %u ms",
                                  stage_call(o->stage, lib), timeout_ms);
    case KB_PROBE_CHILD_CRASHED:
        if (o->signal)
            return kbi_probe_note_add(ctx, r, "cuda", "%s crashed the probe (signal %d)",
                                      stage_call(o->stage, lib), o->signal);
        return kbi_probe_note_add(ctx, r, "cuda", "the probe exited early (status %d) in %s",
                                  o->exit_code, stage_call(o->stage, lib));
    case KB_PROBE_CHILD_NO_FORK:
        return kbi_probe_note_add(ctx, r, "cuda", "cannot start the probe process: %s",
                                  strerror(o->errno_out));
    case KB_PROBE_CHILD_OK:
        break;
    }
    return 0;
}

static void split_driver_version(int v, unsigned *major, unsigned *minor)
{
    /* 12040 is CUDA 12.4; 13000 is 13.0. */
    *major = (unsigned)v / 1000;
    *minor = ((unsigned)v % 1000) / 10;
}

static int add_devices(kb_ctx *ctx, kb_probe_report *r, const cuda_wire *w)
{
    unsigned major, minor;
    split_driver_version(w->driver_version, &major, &minor);
    if (w->device_count == 0)
        return kbi_probe_note_add(ctx, r, "cuda", "the CUDA %u.%u driver reports no devices", major,
                                  minor);
    for (int i = 0; i < w->reported; i++) {
        kb_device d;
        memset(&d, 0, sizeof(d));
        d.backend = KB_BACKEND_CUDA;
        d.runtime_major = major;
        d.runtime_minor = minor;
        d.memory_bytes = w->devices[i].memory_bytes;
        d.index = i;
        snprintf(d.arch, sizeof(d.arch), "%s", w->devices[i].arch);
        snprintf(d.name, sizeof(d.name), "%s", w->devices[i].name);
        snprintf(d.pci_id, sizeof(d.pci_id), "%s", w->devices[i].pci_id);
        int rc = kbi_probe_device_add(ctx, r, &d);
        if (rc)
            return rc;
    }
    if (w->device_count > CUDA_MAX_DEVICES)
        return kbi_probe_note_add(ctx, r, "cuda", "%d devices; only the first %d are reported",
                                  w->device_count, CUDA_MAX_DEVICES);
    return 0;
}

int kbi_probe_cuda(kb_ctx *ctx, kb_probe_report *r, const char *lib, unsigned timeout_ms)
{
    cuda_wire *w = calloc(1, sizeof(*w));
    if (!w)
        return kbi_error_oom(ctx);
    kb_probe_child_outcome o;
    memset(&o, 0, sizeof(o));
    /* A process that already uses the driver (PyTorch, a CUDA application) cannot probe it from
     * a forked child: CUDA does not survive fork, and the child's cuInit fails. There the
     * driver has already answered once, so the hang the child guards against is moot: ask it
     * in this process. */
    void *loaded = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (loaded) {
        cuda_child(NULL, w, lib);
        dlclose(loaded);
        kbi_log(ctx, KB_LOG_DEBUG, "%s already loaded in this process: probed in-process", lib);
    } else
        kbi_probe_in_child(&o, cuda_child, lib, w, sizeof(*w), timeout_ms);
    kbi_log(ctx, KB_LOG_DEBUG, "cuda probe of %s took %ld ms", lib, o.elapsed_ms);
    int rc = note_outcome(ctx, r, &o, lib, timeout_ms);
    if (!rc && o.status == KB_PROBE_CHILD_OK) {
        w->problem[sizeof(w->problem) - 1] = '\0';
        if (w->driver_version > 0) {
            unsigned major, minor;
            split_driver_version(w->driver_version, &major, &minor);
            snprintf(r->cuda_driver, sizeof(r->cuda_driver), "%u.%u", major, minor);
        }
        /* Devices found before a later device failed are still worth reporting. */
        if (w->reported > 0 || !w->problem[0])
            rc = add_devices(ctx, r, w);
        if (!rc && w->problem[0])
            rc = kbi_probe_note_add(ctx, r, "cuda", "%s", w->problem);
    }
    free(w);
    return rc;
}
