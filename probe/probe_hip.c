/* HIP probe: runtime and driver versions from libamdhip64, for GPUs that KFD already found. */
#include "probe/probe_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/*
 * gcnArchName is not read through hipGetDeviceProperties: in ROCm >= 6 the entry point is
 * hipGetDevicePropertiesR0600 with a new struct layout, and the legacy layout moved between
 * 5.x releases too, so no offset is safe without the matching headers. KFD's
 * gfx_target_version is authoritative for the arch; HIP only gives the runtime version.
 */

typedef struct hip_wire {
    char problem[256];
    char loaded[64]; /* the library name that loaded */
    int runtime_version;
    int driver_version;
} hip_wire;

enum { STAGE_DLOPEN = 'o', STAGE_VERSION = 'v' };

typedef int (*hip_version_fn)(int *version);

void kbi_probe_hip_version_split(int v, unsigned *major, unsigned *minor)
{
    /* HIP_VERSION = major * 10000000 + minor * 100000 + patch. */
    *major = v > 0 ? (unsigned)v / 10000000u : 0;
    *minor = v > 0 ? ((unsigned)v / 100000u) % 100u : 0;
}

static void *open_hip(const char *lib, hip_wire *w)
{
    /* The unversioned name exists only with the -dev package; fall back to the sonames. */
    static const char *const fallbacks[] = {"libamdhip64.so.6", "libamdhip64.so.5"};
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    const char *err = h ? NULL : dlerror();
    snprintf(w->loaded, sizeof(w->loaded), "%s", lib);
    if (!h && strcmp(lib, "libamdhip64.so") == 0)
        for (size_t i = 0; i < KB_ARRAY_LEN(fallbacks) && !h; i++)
            if ((h = dlopen(fallbacks[i], RTLD_NOW | RTLD_LOCAL)))
                snprintf(w->loaded, sizeof(w->loaded), "%s", fallbacks[i]);
    if (!h)
        snprintf(w->problem, sizeof(w->problem),
                 "%s not found (dlopen: %s); ROCm GPUs reported from KFD with runtime unknown", lib,
                 err ? err : "unknown error");
    return h;
}

static void hip_child(kb_probe_child_io *io, void *result, const void *arg)
{
    hip_wire *w = result;
    kbi_probe_child_stage(io, STAGE_DLOPEN);
    void *h = open_hip(arg, w);
    if (!h)
        return;
    void *rt = dlsym(h, "hipRuntimeGetVersion"), *drv = dlsym(h, "hipDriverGetVersion");
    if (!rt) {
        snprintf(w->problem, sizeof(w->problem), "%s has no symbol hipRuntimeGetVersion",
                 w->loaded);
        return;
    }
    hip_version_fn runtime_fn, driver_fn;
    memcpy(&runtime_fn, &rt, sizeof(rt));
    kbi_probe_child_stage(io, STAGE_VERSION);
    int rc = runtime_fn(&w->runtime_version);
    if (rc != 0) {
        snprintf(w->problem, sizeof(w->problem), "hipRuntimeGetVersion failed (error %d)", rc);
        w->runtime_version = 0;
        return;
    }
    /* The driver version needs the HSA runtime up; a failure there is not worth a note. */
    if (drv) {
        memcpy(&driver_fn, &drv, sizeof(drv));
        if (driver_fn(&w->driver_version) != 0)
            w->driver_version = 0;
    }
}

static void set_rocm_runtime(kb_probe_report *r, unsigned major, unsigned minor)
{
    for (size_t i = 0; i < r->host.device_count; i++)
        if (r->host.devices[i].backend == KB_BACKEND_ROCM) {
            r->host.devices[i].runtime_major = major;
            r->host.devices[i].runtime_minor = minor;
        }
}

int kbi_probe_hip(kb_ctx *ctx, kb_probe_report *r, const char *lib, unsigned timeout_ms)
{
    hip_wire w;
    memset(&w, 0, sizeof(w));
    kb_probe_child_outcome o;
    kbi_probe_in_child(&o, hip_child, lib, &w, sizeof(w), timeout_ms);
    w.problem[sizeof(w.problem) - 1] = '\0';
    w.loaded[sizeof(w.loaded) - 1] = '\0';
    switch (o.status) {
    case KB_PROBE_CHILD_TIMEOUT:
        return kbi_probe_note_add(ctx, r, "hip", "%s did not return within %u ms",
                                  o.stage == STAGE_VERSION ? "hipRuntimeGetVersion" : "dlopen",
                                  timeout_ms);
    case KB_PROBE_CHILD_CRASHED:
        return kbi_probe_note_add(ctx, r, "hip", "the HIP probe of %s crashed (signal %d)", lib,
                                  o.signal);
    case KB_PROBE_CHILD_NO_FORK:
        return kbi_probe_note_add(ctx, r, "hip", "cannot start the probe process: %s",
                                  strerror(o.errno_out));
    case KB_PROBE_CHILD_OK:
        break;
    }
    if (w.problem[0])
        return kbi_probe_note_add(ctx, r, "hip", "%s", w.problem);
    unsigned major, minor;
    kbi_probe_hip_version_split(w.runtime_version, &major, &minor);
    snprintf(r->hip_runtime, sizeof(r->hip_runtime), "%u.%u", major, minor);
    set_rocm_runtime(r, major, minor);
    if (w.driver_version > 0) {
        unsigned dmajor, dminor;
        kbi_probe_hip_version_split(w.driver_version, &dmajor, &dminor);
        snprintf(r->hip_driver, sizeof(r->hip_driver), "%u.%u", dmajor, dminor);
    }
    kbi_log(ctx, KB_LOG_DEBUG, "HIP runtime %s from %s", r->hip_runtime, w.loaded);
    return 0;
}
