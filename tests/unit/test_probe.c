/* Probe: KFD fixture trees, the fake CUDA driver in each mode, HIP, overrides, the public handle.
 */
#include "kbtest.h"

#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>
#include "probe/probe_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const TWO_CUDA = "sm_86:NVIDIA RTX A6000:51539607552,"
                                    "sm_90:NVIDIA H200:150000000000";

static char *fake_path(const char *var)
{
    const char *p = getenv(var);
    cr_assert(p && *p, "%s is not set (run the tests through ctest)", var);
    return kbi_strdup(p);
}

/* A ctx whose probe looks at a sysfs fixture (NULL: a folder with no KFD) and a CUDA library. */
static kb_ctx *probe_ctx(const char *fixture, const char *cuda_lib)
{
    kb_ctx *ctx = kbt_ctx();
    char *root = fixture ? kbt_data(fixture) : kbi_strdup("/nonexistent-kbpkg-sysfs");
    char *hip = fake_path("KB_FAKE_HIP");
    cr_assert_eq(kb_ctx_set(ctx, "probe.sysfs_root", root), 0);
    cr_assert_eq(
        kb_ctx_set(ctx, "probe.cuda_lib", cuda_lib ? cuda_lib : "/nonexistent/libcuda.so.1"), 0);
    cr_assert_eq(kb_ctx_set(ctx, "probe.hip_lib", hip), 0);
    free(root);
    free(hip);
    return ctx;
}

static kb_ctx *fake_cuda_ctx(const char *fixture)
{
    char *lib = fake_path("KB_FAKE_CUDA");
    kb_ctx *ctx = probe_ctx(fixture, lib);
    free(lib);
    return ctx;
}

static const kb_probe_note *find_note(const kb_probe_report *r, const char *source)
{
    for (size_t i = 0; i < r->note_count; i++)
        if (strcmp(r->notes[i].source, source) == 0)
            return &r->notes[i];
    return NULL;
}

static long elapsed_ms_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - start->tv_sec) * 1000L + (now.tv_nsec - start->tv_nsec) / 1000000L;
}

/* ---- KFD sysfs ---- */

Test(probe, kfd_gfx1030_skips_the_cpu_node)
{
    kb_ctx *ctx = probe_ctx("sysfs/gfx1030", NULL);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_assert_eq(r.host.device_count, 1);
    const kb_device *d = &r.host.devices[0];
    cr_expect_eq(d->backend, KB_BACKEND_ROCM);
    cr_expect_str_eq(d->arch, "gfx1030");
    cr_expect_str_eq(d->name, "navi21");
    cr_expect_eq(d->memory_bytes, 17163091968ULL);
    cr_expect_str_eq(d->pci_id, "0000:03:00.0");
    cr_expect_eq(d->index, 0);
    /* the fake HIP runtime says 50221601: ROCm 5.2 */
    cr_expect_eq(d->runtime_major, 5);
    cr_expect_eq(d->runtime_minor, 2);
    cr_expect_str_eq(r.hip_runtime, "5.2");
    cr_expect_str_eq(r.hip_driver, "5.2");
    cr_expect_not(r.overridden);
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, kfd_gfx90a_reports_no_xnack_it_cannot_know)
{
    setenv("FAKE_HIP_RUNTIME", "60140091", 1);
    kb_ctx *ctx = probe_ctx("sysfs/gfx90a", NULL);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_assert_eq(r.host.device_count, 1);
    /* capability bits are set in the fixture, but KFD has no XNACK bit: no :xnack± suffix */
    cr_expect_str_eq(r.host.devices[0].arch, "gfx90a");
    cr_expect_str_eq(r.host.devices[0].name, "aldebaran");
    cr_expect_eq(r.host.devices[0].memory_bytes, 68702699520ULL);
    cr_expect_str_eq(r.host.devices[0].pci_id, "0000:c1:00.0");
    cr_expect_str_eq(r.hip_runtime, "6.1");
    cr_expect_eq(r.host.devices[0].runtime_major, 6);
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, kfd_two_gpus_in_node_order)
{
    kb_ctx *ctx = probe_ctx("sysfs/two_gpus", NULL);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_assert_eq(r.host.device_count, 2);
    cr_expect_str_eq(r.host.devices[0].arch, "gfx1100");
    cr_expect_eq(r.host.devices[0].index, 0);
    cr_expect_str_eq(r.host.devices[0].pci_id, "0000:0b:00.0");
    cr_expect_str_eq(r.host.devices[1].arch, "gfx940");
    cr_expect_eq(r.host.devices[1].index, 1);
    cr_expect_str_eq(r.host.devices[1].pci_id, "0001:19:00.0");
    cr_expect_eq(r.host.devices[1].memory_bytes, 206141652992ULL);
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, kfd_without_gpu_nodes_is_a_note_and_skips_hip)
{
    static const char *const fixtures[] = {"sysfs/empty", "sysfs/cpu_only"};
    for (size_t i = 0; i < KB_ARRAY_LEN(fixtures); i++) {
        kb_ctx *ctx = probe_ctx(fixtures[i], NULL);
        kb_probe_report r;
        cr_assert_eq(kbi_probe_run(ctx, &r), 0);
        cr_expect_eq(r.host.device_count, 0);
        const kb_probe_note *n = find_note(&r, "kfd");
        cr_assert_not_null(n, "%s: no kfd note", fixtures[i]);
        cr_expect(strstr(n->message, "lists no GPU"), "got: %s", n->message);
        cr_expect_null(find_note(&r, "hip"), "HIP must not be loaded without an AMD GPU");
        cr_expect_str_eq(r.hip_runtime, "");
        kbi_probe_report_free(&r);
        kb_ctx_free(ctx);
    }
}

Test(probe, no_kfd_topology_names_the_path)
{
    char *tmp = kbt_mkdtemp();
    kb_ctx *ctx = probe_ctx(NULL, NULL);
    cr_assert_eq(kb_ctx_set(ctx, "probe.sysfs_root", tmp), 0);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_expect_eq(r.host.device_count, 0);
    const kb_probe_note *n = find_note(&r, "kfd");
    cr_assert_not_null(n);
    char *want =
        kbi_asprintf("no KFD topology at %s/sys/class/kfd (amdgpu driver not loaded)", tmp);
    cr_expect_str_eq(n->message, want);
    free(want);
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(tmp);
}

Test(probe, kfd_gpu_without_rocm_has_unknown_runtime)
{
    kb_ctx *ctx = probe_ctx("sysfs/gfx1030", NULL);
    cr_assert_eq(kb_ctx_set(ctx, "probe.hip_lib", "/nonexistent/libamdhip64.so"), 0);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_assert_eq(r.host.device_count, 1);
    cr_expect_str_eq(r.host.devices[0].arch, "gfx1030");
    cr_expect_eq(r.host.devices[0].runtime_major, 0);
    cr_expect_str_eq(r.hip_runtime, "");
    const kb_probe_note *n = find_note(&r, "hip");
    cr_assert_not_null(n);
    cr_expect(kbi_str_starts(n->message, "/nonexistent/libamdhip64.so not found (dlopen: "),
              "got: %s", n->message);
    cr_expect(strstr(n->message, "runtime unknown"), "got: %s", n->message);
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, gfx_target_version_decodes_to_llvm_names)
{
    static const struct {
        uint64_t v;
        const char *name;
    } cases[] = {{90010, "gfx90a"}, {100300, "gfx1030"}, {110000, "gfx1100"}, {90400, "gfx940"},
                 {90006, "gfx906"}, {100102, "gfx1012"}, {120001, "gfx1201"}, {90012, "gfx90c"}};
    char buf[16];
    for (size_t i = 0; i < KB_ARRAY_LEN(cases); i++) {
        cr_expect(kbi_probe_gfx_name(buf, sizeof(buf), cases[i].v), "%llu",
                  (unsigned long long)cases[i].v);
        cr_expect_str_eq(buf, cases[i].name);
    }
    cr_expect_not(kbi_probe_gfx_name(buf, sizeof(buf), 0));
    cr_expect_not(kbi_probe_gfx_name(buf, sizeof(buf), 91600), "minor 16 is not one hex digit");
    cr_expect_not(kbi_probe_gfx_name(buf, 4, 100300), "too small a buffer");
}

Test(probe, hip_version_numbers_split)
{
    unsigned major, minor;
    kbi_probe_hip_version_split(50422803, &major, &minor);
    cr_expect(major == 5 && minor == 4, "got %u.%u", major, minor);
    kbi_probe_hip_version_split(50221601, &major, &minor);
    cr_expect(major == 5 && minor == 2, "got %u.%u", major, minor);
    kbi_probe_hip_version_split(60140091, &major, &minor);
    cr_expect(major == 6 && minor == 1, "got %u.%u", major, minor);
    kbi_probe_hip_version_split(-1, &major, &minor);
    cr_expect(major == 0 && minor == 0);
}

/* ---- CUDA through the fake driver ---- */

Test(probe, cuda_ok_reports_every_device)
{
    setenv("FAKE_CUDA_MODE", "ok", 1);
    setenv("FAKE_CUDA_DEVICES", TWO_CUDA, 1);
    setenv("FAKE_CUDA_DRIVER", "12040", 1);
    kb_ctx *ctx = fake_cuda_ctx(NULL);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_assert_eq(r.host.device_count, 2);
    cr_expect_str_eq(r.cuda_driver, "12.4");
    const kb_device *a = &r.host.devices[0], *h = &r.host.devices[1];
    cr_expect_eq(a->backend, KB_BACKEND_CUDA);
    cr_expect_str_eq(a->arch, "sm_86");
    cr_expect_str_eq(a->name, "NVIDIA RTX A6000");
    cr_expect_eq(a->memory_bytes, 51539607552ULL);
    cr_expect_str_eq(a->pci_id, "0000:01:00.0");
    cr_expect(a->runtime_major == 12 && a->runtime_minor == 4);
    cr_expect_eq(a->index, 0);
    cr_expect_str_eq(h->arch, "sm_90");
    cr_expect_str_eq(h->name, "NVIDIA H200");
    cr_expect_eq(h->memory_bytes, 150000000000ULL);
    cr_expect_str_eq(h->pci_id, "0000:02:00.0");
    cr_expect_eq(h->index, 1);
    cr_expect_null(find_note(&r, "cuda"));
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, cuda_already_loaded_in_the_process_is_probed_in_process)
{
    /* A PyTorch user has initialised CUDA before opening a kernel: a forked child's cuInit
     * fails there, so the probe must ask the driver in this process. */
    char pid[32];
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    setenv("FAKE_CUDA_MODE", "no_fork", 1);
    setenv("FAKE_CUDA_PID", pid, 1);
    setenv("FAKE_CUDA_DEVICES", "sm_90:NVIDIA H200:150000000000", 1);
    setenv("FAKE_CUDA_DRIVER", "13000", 1);
    kb_ctx *ctx = fake_cuda_ctx(NULL);
    kb_probe_report r;
    /* not loaded yet: the forked child is refused, as the real driver would after fork */
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_expect_eq(r.host.device_count, 0);
    cr_expect_not_null(find_note(&r, "cuda"));
    kbi_probe_report_free(&r);
    char *lib = fake_path("KB_FAKE_CUDA");
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h);
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_assert_eq(r.host.device_count, 1, "the loaded driver answers in-process");
    cr_expect_str_eq(r.host.devices[0].arch, "sm_90");
    cr_expect_str_eq(r.cuda_driver, "13.0");
    kbi_probe_report_free(&r);
    dlclose(h);
    free(lib);
    kb_ctx_free(ctx);
}

Test(probe, cuda_13_driver_is_runtime_13_0)
{
    setenv("FAKE_CUDA_DEVICES", "sm_100:NVIDIA B200:190000000000", 1);
    setenv("FAKE_CUDA_DRIVER", "13000", 1);
    kb_ctx *ctx = fake_cuda_ctx(NULL);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_assert_eq(r.host.device_count, 1);
    cr_expect_str_eq(r.cuda_driver, "13.0");
    cr_expect_str_eq(r.host.devices[0].arch, "sm_100");
    cr_expect_eq(r.host.devices[0].runtime_major, 13);
    cr_expect_eq(r.host.devices[0].runtime_minor, 0);
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, cuda_init_failure_is_a_note_with_the_error)
{
    setenv("FAKE_CUDA_MODE", "init_fails", 1);
    setenv("FAKE_CUDA_DEVICES", TWO_CUDA, 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    kb_ctx *ctx = fake_cuda_ctx(NULL);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_expect_eq(r.host.device_count, 0);
    cr_expect_str_eq(r.cuda_driver, "12.4", "the version is known without cuInit");
    const kb_probe_note *n = find_note(&r, "cuda");
    cr_assert_not_null(n);
    cr_expect_str_eq(n->message, "cuInit failed (error 100: no CUDA-capable device is detected)");
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, cuda_init_failure_mentions_cuda_visible_devices)
{
    setenv("FAKE_CUDA_MODE", "init_fails", 1);
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    kb_ctx *ctx = fake_cuda_ctx(NULL);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    const kb_probe_note *n = find_note(&r, "cuda");
    cr_assert_not_null(n);
    cr_expect_str_eq(n->message, "cuInit failed (error 100: no CUDA-capable device is detected); "
                                 "CUDA_VISIBLE_DEVICES=''");
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, cuda_hang_returns_within_the_timeout)
{
    setenv("FAKE_CUDA_MODE", "hang", 1);
    kb_ctx *ctx = fake_cuda_ctx("sysfs/gfx1030");
    cr_assert_eq(kb_ctx_set(ctx, "probe.timeout_ms", "300"), 0);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    long ms = elapsed_ms_since(&start);
    cr_expect(ms >= 300 && ms < 300 + 3000, "took %ld ms", ms);
    const kb_probe_note *n = find_note(&r, "cuda");
    cr_assert_not_null(n);
    cr_expect_str_eq(n->message, "cuInit did not return within 300 ms");
    /* the other backends still answer */
    cr_assert_eq(r.host.device_count, 1);
    cr_expect_str_eq(r.host.devices[0].arch, "gfx1030");
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, cuda_without_devices_is_a_note)
{
    setenv("FAKE_CUDA_MODE", "no_devices", 1);
    setenv("FAKE_CUDA_DEVICES", TWO_CUDA, 1);
    kb_ctx *ctx = fake_cuda_ctx(NULL);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_expect_eq(r.host.device_count, 0);
    cr_expect_str_eq(r.cuda_driver, "12.4");
    const kb_probe_note *n = find_note(&r, "cuda");
    cr_assert_not_null(n);
    cr_expect_str_eq(n->message, "the CUDA 12.4 driver reports no devices");
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, cuda_library_missing_is_a_note)
{
    kb_ctx *ctx = probe_ctx(NULL, "/nonexistent/libcuda.so.1");
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_expect_eq(r.host.device_count, 0);
    cr_expect_str_eq(r.cuda_driver, "");
    const kb_probe_note *n = find_note(&r, "cuda");
    cr_assert_not_null(n);
    cr_expect(kbi_str_starts(n->message, "/nonexistent/libcuda.so.1 not found (dlopen: "),
              "got: %s", n->message);
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, cuda_library_missing_a_symbol_is_a_note)
{
    setenv("FAKE_CUDA_DEVICES", TWO_CUDA, 1);
    char *lib = fake_path("KB_FAKE_CUDA_NOSYM");
    kb_ctx *ctx = probe_ctx(NULL, lib);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_expect_eq(r.host.device_count, 0);
    const kb_probe_note *n = find_note(&r, "cuda");
    cr_assert_not_null(n);
    char *want = kbi_asprintf("%s has no symbol cuDeviceGetAttribute (not a CUDA driver?)", lib);
    cr_expect_str_eq(n->message, want);
    free(want);
    free(lib);
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, cuda_and_kfd_together)
{
    setenv("FAKE_CUDA_DEVICES", TWO_CUDA, 1);
    kb_ctx *ctx = fake_cuda_ctx("sysfs/two_gpus");
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_assert_eq(r.host.device_count, 4);
    cr_expect_eq(r.host.devices[0].backend, KB_BACKEND_CUDA);
    cr_expect_eq(r.host.devices[1].backend, KB_BACKEND_CUDA);
    cr_expect_eq(r.host.devices[2].backend, KB_BACKEND_ROCM);
    cr_expect_eq(r.host.devices[2].index, 0, "indexes count within a backend");
    cr_expect_eq(r.host.devices[0].runtime_major, 12, "HIP must not touch CUDA devices");
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

/* ---- overrides ---- */

Test(probe, device_override_touches_no_driver)
{
    setenv("FAKE_CUDA_MODE", "hang", 1);
    kb_ctx *ctx = fake_cuda_ctx("sysfs/two_gpus");
    cr_assert_eq(kb_ctx_set(ctx, "probe.timeout_ms", "5000"), 0);
    cr_assert_eq(kb_ctx_set(ctx, "probe.devices", "sm_86,gfx1030@rocm5.2"), 0);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_expect_lt(elapsed_ms_since(&start), 2000, "a hanging driver was called");
    cr_expect(r.overridden);
    cr_assert_eq(r.host.device_count, 2);
    cr_expect_eq(r.host.devices[0].backend, KB_BACKEND_CUDA);
    cr_expect_str_eq(r.host.devices[0].arch, "sm_86");
    cr_expect_eq(r.host.devices[1].backend, KB_BACKEND_ROCM);
    cr_expect_str_eq(r.host.devices[1].arch, "gfx1030");
    cr_expect(r.host.devices[1].runtime_major == 5 && r.host.devices[1].runtime_minor == 2);
    cr_expect_null(find_note(&r, "cuda"));
    cr_expect_null(find_note(&r, "kfd"));
    const kb_probe_note *n = find_note(&r, "override");
    cr_assert_not_null(n);
    cr_expect_str_eq(n->message, "devices from probe.devices: sm_86,gfx1030@rocm5.2");
    cr_expect_neq(r.host.cpu_level[0], '\0', "the CPU is still probed");
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, device_override_none_means_no_gpu)
{
    setenv("KBPKG_DEVICES", "none", 1);
    kb_ctx *ctx = fake_cuda_ctx("sysfs/two_gpus");
    unsetenv("KBPKG_DEVICES");
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_expect(r.overridden);
    cr_expect_eq(r.host.device_count, 0);
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, cpu_in_the_device_list_is_the_host_level)
{
    kb_ctx *ctx = probe_ctx(NULL, NULL);
    cr_assert_eq(kb_ctx_set(ctx, "probe.cpu", "x86_64_v4"), 0);
    cr_assert_eq(kb_ctx_set(ctx, "probe.devices", "x86_64_v2,sm_89@cuda12.4"), 0);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_assert_eq(r.host.device_count, 1, "the CPU is not a GPU device");
    cr_expect_str_eq(r.host.devices[0].arch, "sm_89");
    cr_expect_str_eq(r.host.cpu_level, "x86_64_v2");
    cr_expect_str_eq(r.host.cpu_arch, "x86_64");
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, bad_device_override_is_an_error_naming_it)
{
    kb_ctx *ctx = probe_ctx(NULL, NULL);
    cr_assert_eq(kb_ctx_set(ctx, "probe.devices", "sm_86,bogus99"), 0);
    kb_probe_report r;
    int rc = kbi_probe_run(ctx, &r);
    cr_expect_lt(rc, 0);
    cr_expect_eq(kb_ctx_last_error(ctx)->code, rc);
    const char *msg = kb_ctx_last_error(ctx)->message;
    cr_expect(kbi_str_starts(msg, "probe.devices: "), "got: %s", msg);
    cr_expect(strstr(msg, "bogus99"), "got: %s", msg);
    cr_expect_null(r.host.devices);
    cr_expect_null(r.notes);
    kb_ctx_free(ctx);
}

Test(probe, cpu_override_sets_the_level)
{
    kb_ctx *ctx = probe_ctx(NULL, NULL);
    cr_assert_eq(kb_ctx_set(ctx, "probe.cpu", "x86_64_v2"), 0);
    kb_probe_report r;
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_expect_str_eq(r.host.cpu_level, "x86_64_v2");
    cr_expect_str_eq(r.host.cpu_arch, "x86_64");
    kbi_probe_report_free(&r);
    cr_assert_eq(kb_ctx_set(ctx, "probe.cpu", "aarch64"), 0);
    cr_assert_eq(kbi_probe_run(ctx, &r), 0);
    cr_expect_str_eq(r.host.cpu_level, "aarch64");
    cr_expect_str_eq(r.host.cpu_arch, "aarch64");
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}

Test(probe, bad_cpu_override_is_a_config_error)
{
    kb_ctx *ctx = probe_ctx(NULL, NULL);
    cr_assert_eq(kb_ctx_set(ctx, "probe.cpu", "x86_64_v9"), 0);
    kb_probe_report r;
    cr_expect_eq(kbi_probe_run(ctx, &r), KB_ERR_CONFIG);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message,
                     "probe.cpu: 'x86_64_v9' is not a CPU level (x86_64_v1, x86_64_v2, "
                     "x86_64_v3, x86_64_v4 or aarch64)");
    cr_expect_null(r.notes);
    kb_ctx_free(ctx);
}

/* ---- the public handle ---- */

Test(probe, public_handle_exposes_the_report)
{
    setenv("FAKE_CUDA_DEVICES", TWO_CUDA, 1);
    kb_ctx *ctx = fake_cuda_ctx("sysfs/gfx1030");
    cr_assert_eq(kb_ctx_set(ctx, "probe.hip_lib", "/nonexistent/libamdhip64.so"), 0);
    kb_probe *p = NULL;
    cr_assert_eq(kb_probe_new(&p, ctx), 0);
    cr_assert_eq(kb_probe_device_count(p), 3);
    cr_expect_str_eq(kb_probe_device_backend(p, 1), "cuda");
    cr_expect_str_eq(kb_probe_device_arch(p, 1), "sm_90");
    cr_expect_str_eq(kb_probe_device_name(p, 1), "NVIDIA H200");
    cr_expect_eq(kb_probe_device_memory(p, 1), 150000000000ULL);
    cr_expect_str_eq(kb_probe_device_pci_id(p, 1), "0000:02:00.0");
    cr_expect_str_eq(kb_probe_device_runtime(p, 1), "12.4");
    cr_expect_eq(kb_probe_device_index(p, 1), 1);
    cr_expect_str_eq(kb_probe_device_backend(p, 2), "rocm");
    cr_expect_str_eq(kb_probe_device_runtime(p, 2), "", "no HIP: runtime unknown");
    cr_expect_null(kb_probe_device_arch(p, 3));
    cr_expect_eq(kb_probe_device_index(p, 3), -1);
    cr_expect_str_eq(kb_probe_cuda_driver(p), "12.4");
    cr_expect_str_eq(kb_probe_hip_runtime(p), "");
    cr_expect_eq(kb_probe_overridden(p), 0);
    cr_expect_str_eq(kb_probe_os(p), "linux");
    cr_assert_eq(kb_probe_note_count(p), 1);
    cr_expect_str_eq(kb_probe_note_source(p, 0), "hip");
    cr_expect_null(kb_probe_note_message(p, 1));
    kb_probe_free(p);
    kb_ctx_free(ctx);
}

Test(probe, public_handle_override_runtime_any)
{
    kb_ctx *ctx = probe_ctx(NULL, NULL);
    cr_assert_eq(kb_ctx_set(ctx, "probe.devices", "sm_86,sm_90@cuda12.4"), 0);
    kb_probe *p = (kb_probe *)1;
    cr_assert_eq(kb_probe_new(&p, ctx), 0);
    cr_expect_eq(kb_probe_overridden(p), 1);
    cr_expect_str_eq(kb_probe_device_runtime(p, 0), "any");
    cr_expect_str_eq(kb_probe_device_runtime(p, 1), "12.4");
    kb_probe_free(p);
    cr_assert_eq(kb_ctx_set(ctx, "probe.devices", "nonsense!"), 0);
    p = (kb_probe *)1;
    cr_expect_lt(kb_probe_new(&p, ctx), 0);
    cr_expect_null(p, "*out is NULL on failure");
    kb_ctx_free(ctx);
}
