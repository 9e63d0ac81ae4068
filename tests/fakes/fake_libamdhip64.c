/* A fake HIP runtime for the probe tests: FAKE_HIP_RUNTIME and FAKE_HIP_DRIVER set the versions. */
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int hipRuntimeGetVersion(int *version);
EXPORT int hipDriverGetVersion(int *version);

static int version_from(const char *var, int fallback)
{
    const char *v = getenv(var);
    return v && *v ? (int)strtol(v, NULL, 10) : fallback;
}

EXPORT int hipRuntimeGetVersion(int *version)
{
    *version = version_from("FAKE_HIP_RUNTIME", 50221601);
    return 0;
}

EXPORT int hipDriverGetVersion(int *version)
{
    *version = version_from("FAKE_HIP_DRIVER", 50221601);
    return 0;
}
