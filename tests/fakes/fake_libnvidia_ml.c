/* A fake NVML (libnvidia-ml) for the bench clock tests; its behaviour comes from FAKE_NVML_* env
 * vars.
 *
 *   FAKE_NVML_MODE     ok (default) | init_fails | no_util (utilization not supported)
 *   FAKE_NVML_DEVICES  devices in NVML's order, ";"-separated, each "BUSID SM MEM MAX":
 *                      PCI bus id, the SM clocks the samples return in turn ("/"-separated,
 *                      cycling), the memory clock and the maximum SM clock (MHz), e.g.
 *                      "0000:02:00.0 700 1593 1980;0000:01:00.0 1980/1410/1755 3201 1980"
 *   FAKE_NVML_BUSY     the first N utilization reads say busy (100%), later ones idle (0%);
 *                      unset: always busy
 *   FAKE_NVML_DRIVER   nvmlSystemGetDriverVersion's answer, default "580.159.04"
 *
 * The counters live in the process: the sampler in kbpkg is the only caller.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum {
    FAKE_SUCCESS = 0,
    FAKE_ERROR_INVALID_ARGUMENT = 2,
    FAKE_ERROR_NOT_SUPPORTED = 3,
    FAKE_ERROR_NOT_FOUND = 6,
    FAKE_ERROR_DRIVER_NOT_LOADED = 9,
};
enum { CLOCK_GRAPHICS = 0, CLOCK_SM = 1, CLOCK_MEM = 2 };
#define FAKE_MAX 8
#define FAKE_SEQ 16

typedef struct fake_device {
    unsigned domain, bus, slot;
    unsigned sm[FAKE_SEQ];
    int sm_count;
    unsigned mem, max_sm;
} fake_device;

typedef struct fake_util {
    unsigned gpu, memory;
} fake_util;

EXPORT int nvmlInit_v2(void);
EXPORT int nvmlShutdown(void);
EXPORT const char *nvmlErrorString(int result);
EXPORT int nvmlSystemGetDriverVersion(char *version, unsigned length);
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device);
EXPORT int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, void **device);
EXPORT int nvmlDeviceGetClockInfo(void *device, int type, unsigned *clock);
EXPORT int nvmlDeviceGetMaxClockInfo(void *device, int type, unsigned *clock);
EXPORT int nvmlDeviceGetUtilizationRates(void *device, fake_util *util);

static fake_device devices[FAKE_MAX];
static int device_count = -1;
static unsigned sm_reads[FAKE_MAX], util_reads;

static const char *mode(void)
{
    const char *m = getenv("FAKE_NVML_MODE");
    return m && *m ? m : "ok";
}

/* "0000:01:00.0" or "00000000:01:00.0": domain, bus, device; false when it does not parse. */
static int parse_bus_id(const char *s, unsigned *domain, unsigned *bus, unsigned *slot)
{
    return sscanf(s, "%x:%x:%x", domain, bus, slot) == 3;
}

static void parse_device(fake_device *d, const char *spec)
{
    char bus[64] = "", sm[256] = "";
    memset(d, 0, sizeof(*d));
    if (sscanf(spec, "%63s %255s %u %u", bus, sm, &d->mem, &d->max_sm) != 4 ||
        !parse_bus_id(bus, &d->domain, &d->bus, &d->slot))
        return;
    for (char *p = sm; *p && d->sm_count < FAKE_SEQ;) {
        d->sm[d->sm_count++] = (unsigned)strtoul(p, &p, 10);
        if (*p == '/')
            p++;
    }
}

static void load_devices(void)
{
    const char *spec = getenv("FAKE_NVML_DEVICES");
    device_count = 0;
    while (spec && *spec && device_count < FAKE_MAX) {
        char one[512];
        size_t len = strcspn(spec, ";");
        snprintf(one, sizeof(one), "%.*s", (int)len, spec);
        parse_device(&devices[device_count++], one);
        spec = spec[len] ? spec + len + 1 : NULL;
    }
}

EXPORT int nvmlInit_v2(void)
{
    if (strcmp(mode(), "init_fails") == 0)
        return FAKE_ERROR_DRIVER_NOT_LOADED;
    load_devices();
    return FAKE_SUCCESS;
}

EXPORT int nvmlShutdown(void)
{
    return FAKE_SUCCESS;
}

EXPORT const char *nvmlErrorString(int result)
{
    switch (result) {
    case FAKE_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case FAKE_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case FAKE_ERROR_NOT_FOUND:
        return "Not Found";
    default:
        return "Unknown Error";
    }
}

EXPORT int nvmlSystemGetDriverVersion(char *version, unsigned length)
{
    const char *v = getenv("FAKE_NVML_DRIVER");
    snprintf(version, length, "%s", v && *v ? v : "580.159.04");
    return FAKE_SUCCESS;
}

EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device)
{
    if (device_count < 0 || index >= (unsigned)device_count)
        return FAKE_ERROR_INVALID_ARGUMENT;
    *device = &devices[index];
    return FAKE_SUCCESS;
}

EXPORT int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, void **device)
{
    unsigned domain, bus, slot;
    if (!parse_bus_id(bus_id, &domain, &bus, &slot))
        return FAKE_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < device_count; i++)
        if (devices[i].domain == domain && devices[i].bus == bus && devices[i].slot == slot) {
            *device = &devices[i];
            return FAKE_SUCCESS;
        }
    return FAKE_ERROR_NOT_FOUND;
}

EXPORT int nvmlDeviceGetClockInfo(void *device, int type, unsigned *clock)
{
    fake_device *d = device;
    int i = (int)(d - devices);
    if (type == CLOCK_MEM) {
        *clock = d->mem;
        return FAKE_SUCCESS;
    }
    if (type != CLOCK_SM || d->sm_count == 0)
        return FAKE_ERROR_NOT_SUPPORTED;
    *clock = d->sm[sm_reads[i]++ % (unsigned)d->sm_count];
    return FAKE_SUCCESS;
}

EXPORT int nvmlDeviceGetMaxClockInfo(void *device, int type, unsigned *clock)
{
    fake_device *d = device;
    if (type != CLOCK_SM)
        return FAKE_ERROR_NOT_SUPPORTED;
    *clock = d->max_sm;
    return FAKE_SUCCESS;
}

EXPORT int nvmlDeviceGetUtilizationRates(void *device, fake_util *util)
{
    (void)device;
    if (strcmp(mode(), "no_util") == 0)
        return FAKE_ERROR_NOT_SUPPORTED;
    const char *busy = getenv("FAKE_NVML_BUSY");
    unsigned n = util_reads++;
    util->gpu = !busy || n < strtoul(busy, NULL, 10) ? 100 : 0;
    util->memory = util->gpu / 2;
    return FAKE_SUCCESS;
}
