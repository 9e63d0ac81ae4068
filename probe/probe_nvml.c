/* NVML through dlopen: the driver version and a device's current clocks, for `kbpkg bench`. */
#include "probe/probe_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The few NVML types we need, declared here so no NVIDIA headers are required (nvml.h). */
typedef int nvml_return;
typedef void *nvml_device;
typedef struct nvml_utilization {
    unsigned gpu, memory; /* percent of the last sample period */
} nvml_utilization;
enum { NVML_SUCCESS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
/* nvml.h's NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE is 80. */
#define NVML_DRIVER_BUF 96

typedef struct nvml_api {
    nvml_return (*init)(void);
    nvml_return (*shutdown)(void);
    nvml_return (*driver_version)(char *version, unsigned length);
    nvml_return (*by_index)(unsigned index, nvml_device *dev);
    nvml_return (*by_pci)(const char *bus_id, nvml_device *dev);
    nvml_return (*clock)(nvml_device dev, int type, unsigned *mhz);
    nvml_return (*max_clock)(nvml_device dev, int type, unsigned *mhz);
    nvml_return (*utilization)(nvml_device dev, nvml_utilization *u);
    const char *(*error_string)(nvml_return rc); /* optional */
} nvml_api;

struct kbi_nvml {
    nvml_api api;
    nvml_device dev;
    char driver[NVML_DRIVER_BUF];
    unsigned max_sm_mhz;
};

static const kbi_dl_symbol nvml_symbols[] = {
    {"nvmlInit_v2", offsetof(nvml_api, init), false},
    {"nvmlShutdown", offsetof(nvml_api, shutdown), false},
    {"nvmlSystemGetDriverVersion", offsetof(nvml_api, driver_version), false},
    {"nvmlDeviceGetHandleByIndex_v2", offsetof(nvml_api, by_index), false},
    {"nvmlDeviceGetHandleByPciBusId_v2", offsetof(nvml_api, by_pci), false},
    {"nvmlDeviceGetClockInfo", offsetof(nvml_api, clock), false},
    {"nvmlDeviceGetMaxClockInfo", offsetof(nvml_api, max_clock), false},
    {"nvmlDeviceGetUtilizationRates", offsetof(nvml_api, utilization), false},
    {"nvmlErrorString", offsetof(nvml_api, error_string), true},
};

static bool load_symbols(nvml_api *api, void *lib, const char *lib_name, char *why, size_t size)
{
    const char *missing =
        kbi_probe_load_symbols(api, lib, nvml_symbols, KB_ARRAY_LEN(nvml_symbols));
    if (missing)
        snprintf(why, size, "%s has no symbol %s (not NVML?)", lib_name, missing);
    return !missing;
}

static const char *error_text(const nvml_api *api, nvml_return rc)
{
    const char *text = api->error_string ? api->error_string(rc) : NULL;
    return text ? text : "unknown error";
}

/* The probe's CUDA device in NVML: by PCI bus id, which both number the same way, else by
 * ordinal (an override names no PCI location; NVML and CUDA may order devices differently). */
static bool find_device(kbi_nvml *n, const kb_device *dev, char *why, size_t size)
{
    nvml_return rc;
    if (dev->pci_id[0]) {
        if ((rc = n->api.by_pci(dev->pci_id, &n->dev)) == NVML_SUCCESS)
            return true;
        snprintf(why, size, "NVML has no device at PCI %s (error %d: %s)", dev->pci_id, rc,
                 error_text(&n->api, rc));
        return false;
    }
    if ((rc = n->api.by_index((unsigned)dev->index, &n->dev)) == NVML_SUCCESS)
        return true;
    snprintf(why, size, "NVML has no device %d (error %d: %s)", dev->index, rc,
             error_text(&n->api, rc));
    return false;
}

/* dlopen, symbols and nvmlInit; false with why set. */
static bool start_nvml(kbi_nvml *n, const char *lib, char *why, size_t size)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *err = dlerror();
        snprintf(why, size, "%s not found (dlopen: %s)", lib, err ? err : "unknown error");
        return false;
    }
    /* No dlclose, here or in kbi_nvml_close: some drivers crash on unload (probe_cuda.c). */
    if (!load_symbols(&n->api, h, lib, why, size))
        return false;
    nvml_return rc = n->api.init();
    if (rc != NVML_SUCCESS) {
        snprintf(why, size, "nvmlInit failed (error %d: %s)", rc, error_text(&n->api, rc));
        return false;
    }
    return true;
}

kbi_nvml *kbi_nvml_open(const char *lib, const kb_device *dev, char *why, size_t why_size)
{
    kbi_nvml *n = calloc(1, sizeof(*n));
    if (!n) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    if (!start_nvml(n, lib, why, why_size)) {
        free(n);
        return NULL;
    }
    if (!find_device(n, dev, why, why_size)) {
        kbi_nvml_close(n);
        return NULL;
    }
    /* Descriptive: a driver that cannot say leaves them unknown. */
    if (n->api.driver_version(n->driver, sizeof(n->driver)) != NVML_SUCCESS)
        n->driver[0] = '\0';
    n->driver[sizeof(n->driver) - 1] = '\0';
    if (n->api.max_clock(n->dev, NVML_CLOCK_SM, &n->max_sm_mhz) != NVML_SUCCESS)
        n->max_sm_mhz = 0;
    return n;
}

bool kbi_nvml_sample(kbi_nvml *n, kbi_clock_sample *s, char *why, size_t why_size)
{
    memset(s, 0, sizeof(*s));
    nvml_return rc = n->api.clock(n->dev, NVML_CLOCK_SM, &s->sm_mhz);
    if (rc != NVML_SUCCESS) {
        snprintf(why, why_size, "nvmlDeviceGetClockInfo failed (error %d: %s)", rc,
                 error_text(&n->api, rc));
        return false;
    }
    if (n->api.clock(n->dev, NVML_CLOCK_MEM, &s->mem_mhz) != NVML_SUCCESS)
        s->mem_mhz = 0;
    nvml_utilization u;
    s->busy = n->api.utilization(n->dev, &u) != NVML_SUCCESS ? -1 : u.gpu > 0;
    return true;
}

const char *kbi_nvml_driver(const kbi_nvml *n)
{
    return n->driver;
}

unsigned kbi_nvml_max_sm_mhz(const kbi_nvml *n)
{
    return n->max_sm_mhz;
}

void kbi_nvml_close(kbi_nvml *n)
{
    if (!n)
        return;
    n->api.shutdown();
    free(n);
}
