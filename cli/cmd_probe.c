/* kbpkg probe: what this machine offers to kernels (GPUs, CPU level, OS) and why not more. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static json_t *host_json(const kb_probe *p)
{
    return json_pack("{s:s,s:s,s:s,s:s}", "cpu", kb_probe_cpu_arch(p), "level",
                     kb_probe_cpu_level(p), "os", kb_probe_os(p), "glibc", kb_probe_glibc(p));
}

static json_t *devices_json(const kb_probe *p)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < kb_probe_device_count(p); i++)
        json_array_append_new(
            arr, json_pack("{s:s,s:i,s:s,s:s,s:I,s:s,s:s}", "backend",
                           kb_probe_device_backend(p, i), "index", kb_probe_device_index(p, i),
                           "arch", kb_probe_device_arch(p, i), "name", kb_probe_device_name(p, i),
                           "memory_bytes", (json_int_t)kb_probe_device_memory(p, i), "pci_id",
                           kb_probe_device_pci_id(p, i), "runtime", kb_probe_device_runtime(p, i)));
    return arr;
}

static json_t *notes_json(const kb_probe *p)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < kb_probe_note_count(p); i++)
        json_array_append_new(arr, json_pack("{s:s,s:s}", "source", kb_probe_note_source(p, i),
                                             "message", kb_probe_note_message(p, i)));
    return arr;
}

static json_t *drivers_json(const kb_probe *p)
{
    return json_pack("{s:s,s:s,s:s}", "cuda", kb_probe_cuda_driver(p), "hip_runtime",
                     kb_probe_hip_runtime(p), "hip_driver", kb_probe_hip_driver(p));
}

static void print_device(const kb_probe *p, size_t i)
{
    const char *backend = kb_probe_device_backend(p, i);
    const char *name = kb_probe_device_name(p, i);
    const char *pci = kb_probe_device_pci_id(p, i);
    const char *runtime = kb_probe_device_runtime(p, i);
    uint64_t mem = kb_probe_device_memory(p, i);
    printf("  %s:%d  %-8s", backend, kb_probe_device_index(p, i), kb_probe_device_arch(p, i));
    if (*name)
        printf("  %s", name);
    if (mem)
        printf("  %.1f GiB", (double)mem / (1024.0 * 1024.0 * 1024.0));
    if (*pci)
        printf("  pci %s", pci);
    if (*runtime)
        printf("  %s %s", strcmp(backend, "rocm") == 0 ? "hip" : backend, runtime);
    putchar('\n');
}

static void print_text(const kb_probe *p)
{
    const char *glibc = kb_probe_glibc(p);
    printf("host: %s (%s), %s%s%s\n", kb_probe_cpu_level(p), kb_probe_cpu_arch(p), kb_probe_os(p),
           *glibc ? ", glibc " : "", glibc);
    size_t n = kb_probe_device_count(p);
    if (n == 0)
        printf("no GPU found%s\n", kb_probe_overridden(p) ? " (overridden: none)" : "");
    else
        printf("GPUs%s:\n", kb_probe_overridden(p) ? " (overridden)" : "");
    for (size_t i = 0; i < n; i++)
        print_device(p, i);
    const char *hip_driver = kb_probe_hip_driver(p);
    if (*kb_probe_cuda_driver(p))
        printf("CUDA driver: %s\n", kb_probe_cuda_driver(p));
    if (*kb_probe_hip_runtime(p))
        printf("HIP runtime: %s%s%s\n", kb_probe_hip_runtime(p), *hip_driver ? ", driver " : "",
               hip_driver);
    /* The notes say why a backend gave nothing: with no GPU they are the answer. */
    if (n && kb_probe_note_count(p))
        printf("notes:\n");
    for (size_t i = 0; i < kb_probe_note_count(p); i++)
        printf("  %s: %s\n", kb_probe_note_source(p, i), kb_probe_note_message(p, i));
}

const cli_option cli_probe_options[] = {
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTION_GROUP(cli_device_options),
    CLI_OPTIONS_END,
};

int cmd_probe(cli *c, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, "probe", cli_probe_options, argc, argv);
    if (!rc && first < argc)
        rc = cli_usage_error(c, "probe", "unexpected argument '%s'", argv[first]);
    if (rc)
        return rc;
    kb_probe *p = NULL;
    rc = kb_probe_new(&p, c->ctx);
    if (rc)
        return cli_fail(c, rc);
    if (c->json)
        cli_json_print(json_pack("{s:o,s:o,s:o,s:o,s:b}", "host", host_json(p), "devices",
                                 devices_json(p), "drivers", drivers_json(p), "notes",
                                 notes_json(p), "overridden", kb_probe_overridden(p)));
    else if (!c->quiet)
        print_text(p);
    kb_probe_free(p);
    return CLI_EXIT_OK;
}
