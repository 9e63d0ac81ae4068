/* kbpkg probe: text and --json on this machine, with overrides, and with a fake CUDA driver. */
#include "kbtest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool machine_has_gpu_driver(void)
{
    return access("/dev/kfd", F_OK) == 0 || access("/dev/nvidiactl", F_OK) == 0;
}

static char *env_entry(const char *name, const char *var)
{
    const char *v = getenv(var);
    cr_assert(v && *v, "%s is not set (run the tests through ctest)", var);
    return kbi_asprintf("%s=%s", name, v);
}

Test(cli_probe, this_machine_says_no_gpu_with_reasons)
{
    if (machine_has_gpu_driver())
        cr_skip("this machine has a GPU driver: the no-GPU output cannot be checked here");
    const char *args[] = {"probe", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 0, "stderr: %s", r.err);
    cr_expect(kbi_str_starts(r.out, "host: x86_64_v") || kbi_str_starts(r.out, "host: aarch64"),
              "got: %s", r.out);
    cr_expect(strstr(r.out, "\nno GPU found\n"), "got: %s", r.out);
    cr_expect(strstr(r.out, "  cuda: libcuda.so.1 not found (dlopen: "), "got: %s", r.out);
    cr_expect(strstr(r.out, "  kfd: no KFD topology at /sys/class/kfd"), "got: %s", r.out);
    kbt_run_free(&r);
}

Test(cli_probe, json_on_this_machine_follows_the_schema)
{
    if (machine_has_gpu_driver())
        cr_skip("this machine has a GPU driver: the no-GPU output cannot be checked here");
    const char *args[] = {"probe", "--json", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 0, "stderr: %s", r.err);
    json_error_t jerr;
    json_t *doc = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(doc, "not JSON (%s): %s", jerr.text, r.out);
    json_t *host = json_object_get(doc, "host");
    cr_assert(json_is_object(host));
    const char *level = json_string_value(json_object_get(host, "level"));
    cr_assert_not_null(level);
    cr_expect(kbi_str_starts(level, "x86_64_v") || strcmp(level, "aarch64") == 0, "%s", level);
    cr_expect(json_is_string(json_object_get(host, "cpu")));
    cr_expect_str_eq(json_string_value(json_object_get(host, "os")), "linux");
    cr_expect(json_is_string(json_object_get(host, "glibc")));
    cr_expect_eq(json_array_size(json_object_get(doc, "devices")), 0);
    cr_expect(json_is_false(json_object_get(doc, "overridden")));
    json_t *notes = json_object_get(doc, "notes");
    cr_assert_geq(json_array_size(notes), 2);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(notes, 0), "source")),
                     "cuda");
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(notes, 1), "source")), "kfd");
    json_decref(doc);
    kbt_run_free(&r);
}

Test(cli_probe, devices_from_the_environment)
{
    const char *env[] = {"KBPKG_DEVICES=sm_86,gfx1030@rocm5.2", NULL};
    const char *args[] = {"probe", NULL};
    kbt_run r = kbt_kbpkg(env, args);
    cr_expect_eq(r.exit_code, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "GPUs (overridden):\n"), "got: %s", r.out);
    cr_expect(strstr(r.out, "sm_86"), "got: %s", r.out);
    cr_expect(strstr(r.out, "gfx1030"), "got: %s", r.out);
    cr_expect(strstr(r.out, "hip 5.2"), "got: %s", r.out);
    kbt_run_free(&r);

    const char *jargs[] = {"probe", "--json", NULL};
    r = kbt_kbpkg(env, jargs);
    json_t *doc = json_loads(r.out, 0, NULL);
    cr_assert_not_null(doc, "got: %s", r.out);
    cr_expect(json_is_true(json_object_get(doc, "overridden")));
    json_t *devices = json_object_get(doc, "devices");
    cr_assert_eq(json_array_size(devices), 2);
    json_t *d0 = json_array_get(devices, 0), *d1 = json_array_get(devices, 1);
    cr_expect_str_eq(json_string_value(json_object_get(d0, "backend")), "cuda");
    cr_expect_str_eq(json_string_value(json_object_get(d0, "arch")), "sm_86");
    cr_expect_str_eq(json_string_value(json_object_get(d0, "runtime")), "any");
    cr_expect_str_eq(json_string_value(json_object_get(d1, "backend")), "rocm");
    cr_expect_str_eq(json_string_value(json_object_get(d1, "runtime")), "5.2");
    json_decref(doc);
    kbt_run_free(&r);
}

Test(cli_probe, device_flag_none)
{
    const char *args[] = {"--device", "none", "probe", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "no GPU found (overridden: none)\n"), "got: %s", r.out);
    cr_expect(strstr(r.out, "override: devices from probe.devices: none"), "got: %s", r.out);
    kbt_run_free(&r);
}

Test(cli_probe, fake_cuda_driver_devices_are_listed)
{
    char *lib = env_entry("KBPKG_CUDA_LIB", "KB_FAKE_CUDA");
    const char *env[] = {lib,
                         "KBPKG_SYSFS_ROOT=/nonexistent-kbpkg-sysfs",
                         "FAKE_CUDA_DEVICES=sm_86:NVIDIA RTX A6000:51539607552,"
                         "sm_90:NVIDIA H200:150000000000",
                         "FAKE_CUDA_DRIVER=12040",
                         "FAKE_CUDA_MODE=ok",
                         NULL};
    const char *args[] = {"probe", NULL};
    kbt_run r = kbt_kbpkg(env, args);
    cr_expect_eq(r.exit_code, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "  cuda:0  sm_86     NVIDIA RTX A6000  48.0 GiB  pci 0000:01:00.0  "
                            "cuda 12.4\n"),
              "got: %s", r.out);
    cr_expect(strstr(r.out, "  cuda:1  sm_90     NVIDIA H200  139.7 GiB  pci 0000:02:00.0  "
                            "cuda 12.4\n"),
              "got: %s", r.out);
    cr_expect(strstr(r.out, "CUDA driver: 12.4\n"), "got: %s", r.out);
    kbt_run_free(&r);
    free(lib);
}

Test(cli_probe, hanging_driver_is_reported_not_waited_for)
{
    char *lib = env_entry("KBPKG_CUDA_LIB", "KB_FAKE_CUDA");
    const char *env[] = {lib, "KBPKG_SYSFS_ROOT=/nonexistent-kbpkg-sysfs", "FAKE_CUDA_MODE=hang",
                         "KBPKG_PROBE_TIMEOUT_MS=200", NULL};
    const char *args[] = {"probe", NULL};
    kbt_run r = kbt_kbpkg(env, args);
    cr_expect_eq(r.exit_code, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "no GPU found\n"), "got: %s", r.out);
    cr_expect(strstr(r.out, "  cuda: cuInit did not return within 200 ms\n"), "got: %s", r.out);
    kbt_run_free(&r);
    free(lib);
}

Test(cli_probe, bad_cpu_override_fails_with_the_reason)
{
    const char *env[] = {"KBPKG_CPU=pentium", NULL};
    const char *args[] = {"probe", NULL};
    kbt_run r = kbt_kbpkg(env, args);
    cr_expect_eq(r.exit_code, 5);
    cr_expect_str_eq(r.err, "kbpkg: probe.cpu: 'pentium' is not a CPU level (x86_64_v1, "
                            "x86_64_v2, x86_64_v3, x86_64_v4 or aarch64)\n");
    kbt_run_free(&r);
}

Test(cli_probe, extra_argument_is_a_usage_error)
{
    const char *args[] = {"probe", "gpu0", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(
        strstr(r.err,
               "kbpkg: unexpected argument 'gpu0'\nusage: kbpkg probe [--json] [--device D]...\n"),
        "got: %s", r.err);
    kbt_run_free(&r);
}
