/* A fake CUDA driver library for the probe tests; its behaviour comes from FAKE_CUDA_* env vars.
 *
 *   FAKE_CUDA_MODE     ok (default) | init_fails | hang | no_devices
 *   FAKE_CUDA_DEVICES  "sm_86:NVIDIA RTX A6000:51539607552,sm_90:NVIDIA H200:150000000000"
 *                      (arch:name:memory bytes; device i sits at PCI 0000:<i+1>:00.0)
 *   FAKE_CUDA_DRIVER   cuDriverGetVersion's answer, default 12040
 *
 * Built twice: once whole, once with FAKE_CUDA_OMIT_ATTRIBUTE (no cuDeviceGetAttribute).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum {
    FAKE_SUCCESS = 0,
    FAKE_ERROR_INVALID_VALUE = 1,
    FAKE_ERROR_NOT_INITIALIZED = 3,
    FAKE_ERROR_NO_DEVICE = 100,
    FAKE_ERROR_INVALID_DEVICE = 101,
};
#define FAKE_MAX 8

typedef struct fake_device {
    int major, minor;
    char name[128];
    size_t memory;
} fake_device;

EXPORT int cuInit(unsigned flags);
EXPORT int cuDriverGetVersion(int *version);
EXPORT int cuDeviceGetCount(int *count);
EXPORT int cuDeviceGet(int *dev, int ordinal);
EXPORT int cuDeviceGetName(char *name, int len, int dev);
EXPORT int cuDeviceGetAttribute(int *value, int attribute, int dev);
EXPORT int cuDeviceTotalMem_v2(size_t *bytes, int dev);
EXPORT int cuGetErrorString(int error, const char **text);

static const char *mode(void)
{
    const char *m = getenv("FAKE_CUDA_MODE");
    return m && *m ? m : "ok";
}

/* Parse FAKE_CUDA_DEVICES on every call: the library keeps no state. */
static int fake_devices(fake_device *out)
{
    if (strcmp(mode(), "no_devices") == 0)
        return 0;
    const char *spec = getenv("FAKE_CUDA_DEVICES");
    int n = 0;
    while (spec && *spec && n < FAKE_MAX) {
        fake_device *d = &out[n];
        memset(d, 0, sizeof(*d));
        unsigned long long mem = 0;
        int cc = 0;
        if (sscanf(spec, "sm_%d:%127[^:]:%llu", &cc, d->name, &mem) != 3)
            break;
        d->major = cc / 10;
        d->minor = cc % 10;
        d->memory = (size_t)mem;
        n++;
        spec = strchr(spec, ',');
        spec = spec ? spec + 1 : NULL;
    }
    return n;
}

EXPORT int cuInit(unsigned flags)
{
    (void)flags;
    if (strcmp(mode(), "hang") == 0)
        for (;;)
            pause();
    if (strcmp(mode(), "init_fails") == 0)
        return FAKE_ERROR_NO_DEVICE;
    /* "no_fork": like the real driver in a child forked after the parent initialised CUDA,
     * cuInit fails (CUDA_ERROR_NOT_INITIALIZED) outside the process named by FAKE_CUDA_PID. */
    if (strcmp(mode(), "no_fork") == 0) {
        const char *pid = getenv("FAKE_CUDA_PID");
        if (!pid || strtol(pid, NULL, 10) != (long)getpid())
            return 3;
    }
    return FAKE_SUCCESS;
}

EXPORT int cuDriverGetVersion(int *version)
{
    const char *v = getenv("FAKE_CUDA_DRIVER");
    *version = v && *v ? (int)strtol(v, NULL, 10) : 12040;
    return FAKE_SUCCESS;
}

EXPORT int cuDeviceGetCount(int *count)
{
    fake_device devs[FAKE_MAX];
    *count = fake_devices(devs);
    return FAKE_SUCCESS;
}

static const fake_device *device(int ordinal, fake_device *devs)
{
    int n = fake_devices(devs);
    return ordinal >= 0 && ordinal < n ? &devs[ordinal] : NULL;
}

EXPORT int cuDeviceGet(int *dev, int ordinal)
{
    fake_device devs[FAKE_MAX];
    if (!device(ordinal, devs))
        return FAKE_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return FAKE_SUCCESS;
}

EXPORT int cuDeviceGetName(char *name, int len, int dev)
{
    fake_device devs[FAKE_MAX];
    const fake_device *d = device(dev, devs);
    if (!d || len <= 0)
        return FAKE_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "%s", d->name);
    return FAKE_SUCCESS;
}

#ifndef FAKE_CUDA_OMIT_ATTRIBUTE
EXPORT int cuDeviceGetAttribute(int *value, int attribute, int dev)
{
    fake_device devs[FAKE_MAX];
    const fake_device *d = device(dev, devs);
    if (!d)
        return FAKE_ERROR_INVALID_DEVICE;
    switch (attribute) {
    case 75:
        *value = d->major;
        return FAKE_SUCCESS;
    case 76:
        *value = d->minor;
        return FAKE_SUCCESS;
    case 33: /* PCI bus */
        *value = dev + 1;
        return FAKE_SUCCESS;
    case 34: /* PCI device */
    case 50: /* PCI domain */
        *value = 0;
        return FAKE_SUCCESS;
    default:
        return FAKE_ERROR_INVALID_VALUE;
    }
}
#endif

EXPORT int cuDeviceTotalMem_v2(size_t *bytes, int dev)
{
    fake_device devs[FAKE_MAX];
    const fake_device *d = device(dev, devs);
    if (!d)
        return FAKE_ERROR_INVALID_DEVICE;
    *bytes = d->memory;
    return FAKE_SUCCESS;
}

EXPORT int cuGetErrorString(int error, const char **text)
{
    switch (error) {
    case FAKE_ERROR_NO_DEVICE:
        *text = "no CUDA-capable device is detected";
        return FAKE_SUCCESS;
    case FAKE_ERROR_INVALID_DEVICE:
        *text = "invalid device ordinal";
        return FAKE_SUCCESS;
    default:
        *text = NULL;
        return FAKE_ERROR_INVALID_VALUE;
    }
}
