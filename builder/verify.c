/* Verification of a built library with the inspector: exports, no STB_GNU_UNIQUE, glibc needs,
 * GPU code exactly for the declared arch (AMD: bundle entries, ELF e_flags, the HIP runtime
 * soname, and a disassembly for the arch). */
#include "builder/builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EM_AMDGPU_MACHINE 224
#define ELFOSABI_AMDGPU_HSA 64
#define EF_AMDGPU_MACH 0xffu
#define EF_AMDGPU_GENERIC_VERSION_SHIFT 24
#define ELFABIVERSION_AMDGPU_HSA_V6 4

static int inspect(kb_ctx *ctx, kb_inspect **out, const char *lib)
{
    int rc = kb_inspect_file(out, ctx, lib);
    if (rc)
        kbi_error_prefix(ctx, "verifying %s", lib);
    return rc;
}

static int check_exports(kb_ctx *ctx, const kb_inspect *ins, const char *lib,
                         const kb_strv *required)
{
    if (kb_inspect_unique_count(ins))
        return kbi_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                  "%s has the STB_GNU_UNIQUE symbol %s (it would pin the library "
                                  "in memory; build with -fno-gnu-unique)",
                                  lib, kb_inspect_unique(ins, 0));
    kb_buf missing = KB_BUF_INIT;
    for (size_t i = 0; i < required->len; i++) {
        bool found = false;
        for (size_t j = 0; j < kb_inspect_export_count(ins) && !found; j++)
            found = strcmp(kb_inspect_export(ins, j), required->items[i]) == 0;
        if (!found)
            kbi_buf_printf(&missing, "%s%s", missing.len ? ", " : "", required->items[i]);
    }
    int rc = 0;
    if (missing.len)
        rc = kbi_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                "%s does not export %s (declared in exports)", lib, missing.data);
    kbi_buf_free(&missing);
    return rc;
}

int kbi_verify_exports(kb_ctx *ctx, const char *lib, const kb_strv *required)
{
    kb_inspect *ins = NULL;
    int rc = inspect(ctx, &ins, lib);
    if (!rc)
        rc = check_exports(ctx, ins, lib, required);
    kb_inspect_free(ins);
    return rc;
}

int kbi_verify_glibc_needs(kb_ctx *ctx, const char *lib, char glibc[16], char glibcxx[16])
{
    kb_inspect *ins = NULL;
    int rc = inspect(ctx, &ins, lib);
    if (!rc) {
        snprintf(glibc, 16, "%s", kb_inspect_glibc_needed(ins));
        snprintf(glibcxx, 16, "%s", kb_inspect_glibcxx_needed(ins));
    }
    kb_inspect_free(ins);
    return rc;
}

/* What the target must hold: SASS sm_XY, PTX compute_XY, AMDGCN gfx..., or nothing (CPU). */
static kb_gpu_code_kind expected_kind(const kb_plan_item *item)
{
    if (item->backend == KB_BACKEND_CUDA)
        return kbi_str_starts(item->arch, "compute_") ? KB_GPU_CODE_PTX : KB_GPU_CODE_SASS;
    if (item->backend == KB_BACKEND_ROCM)
        return KB_GPU_CODE_AMDGCN;
    return KB_GPU_CODE_UNKNOWN;
}

static bool code_matches(const kb_gpu_code *code, kb_gpu_code_kind kind, const char *arch)
{
    if (code->kind != kind)
        return false;
    /* gfx90a:xnack+ is gfx90a code with a feature pinned; the plan names the bare arch. */
    size_t n = strcspn(code->arch, ":");
    return strlen(arch) == n && strncmp(code->arch, arch, n) == 0;
}

/* "gfx90a:xnack+" -> "gfx90a". */
static void gfx_base(char *out, size_t size, const char *arch)
{
    snprintf(out, size, "%.*s", (int)strcspn(arch, ":"), arch);
}

/* The code object's ELF header says what the bundle entry claims: an AMDGPU HSA object whose
 * EF_AMDGPU_MACH is the arch's; a generic target is code object v6 with a generic version. */
static int check_amd_elf(kb_ctx *ctx, const kb_gpu_entry *e, const char *lib,
                         const kb_plan_item *item)
{
    char gfx[48];
    gfx_base(gfx, sizeof(gfx), item->arch);
    unsigned want = 0;
    if (!kbi_amdgpu_mach(gfx, &want))
        return kbi_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                  "%s for %s: kbpkg does not know the EF_AMDGPU_MACH of %s", lib,
                                  item->target, gfx);
    if (!e->elf || e->e_machine != EM_AMDGPU_MACHINE || e->os_abi != ELFOSABI_AMDGPU_HSA)
        return kbi_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                  "%s for %s: the %s bundle entry is not an AMDGPU HSA code object "
                                  "(e_machine %u, OS ABI %u)",
                                  lib, item->target, e->arch, e->e_machine, e->os_abi);
    unsigned mach = e->e_flags & EF_AMDGPU_MACH;
    if (mach != want)
        return kbi_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                  "%s for %s: the code object's e_flags 0x%x name machine 0x%02x, "
                                  "%s is 0x%02x",
                                  lib, item->target, e->e_flags, mach, gfx, want);
    bool generic = strstr(gfx, "-generic") != NULL;
    if (generic && (e->abi_version < ELFABIVERSION_AMDGPU_HSA_V6 ||
                    (e->e_flags >> EF_AMDGPU_GENERIC_VERSION_SHIFT) == 0))
        return kbi_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                  "%s for %s: a generic code object must be code object v6 with a "
                                  "generic version (ABI version %u, e_flags 0x%x)",
                                  lib, item->target, e->abi_version, e->e_flags);
    return 0;
}

static int check_gpu_code(kb_ctx *ctx, const kb_inspect *ins, const char *lib,
                          const kb_plan_item *item)
{
    kb_gpu_code_kind want = expected_kind(item);
    size_t n = kb_inspect_gpu_code_count(ins);
    bool ok = want == KB_GPU_CODE_UNKNOWN ? n == 0 : n > 0;
    kb_buf found = KB_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        const kb_gpu_code *c = kb_inspect_gpu_code(ins, i);
        ok = ok && code_matches(c, want, item->arch);
        kbi_buf_printf(&found, "%s%s %s", i ? ", " : "", kb_gpu_code_kind_name(c->kind), c->arch);
    }
    int rc = 0;
    if (!ok && want == KB_GPU_CODE_UNKNOWN)
        rc = kbi_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                "%s for %s holds GPU code (%s); a CPU target must hold none", lib,
                                item->target, found.data);
    else if (!ok)
        rc = kbi_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                "%s for %s holds %s, expected only %s %s", lib, item->target,
                                found.len ? found.data : "no GPU code", kb_gpu_code_kind_name(want),
                                item->arch);
    kbi_buf_free(&found);
    for (size_t i = 0; !rc && want == KB_GPU_CODE_AMDGCN && i < n; i++)
        rc = check_amd_elf(ctx, kbi_inspect_gpu_entry(ins, i), lib, item);
    return rc;
}

int kbi_verify_gpu_code(kb_ctx *ctx, const char *lib, const kb_plan_item *item)
{
    kb_inspect *ins = NULL;
    int rc = inspect(ctx, &ins, lib);
    if (!rc)
        rc = check_gpu_code(ctx, ins, lib, item);
    kb_inspect_free(ins);
    return rc;
}

/* "rocm6-gfx1030-..." -> 6. */
static unsigned target_runtime_major(const char *target)
{
    const char *p = target;
    while (*p && (*p < '0' || *p > '9'))
        p++;
    return (unsigned)strtoul(p, NULL, 10);
}

int kbi_verify_hip_runtime(kb_ctx *ctx, const char *lib, const kb_plan_item *item)
{
    kb_inspect *ins = NULL;
    int rc = inspect(ctx, &ins, lib);
    if (rc)
        return rc;
    char want[32];
    snprintf(want, sizeof(want), "libamdhip64.so.%u", target_runtime_major(item->target));
    const kb_strv *needed = kbi_inspect_needed(ins);
    kb_buf hip = KB_BUF_INIT;
    for (size_t i = 0; i < needed->len; i++)
        if (kbi_str_starts(needed->items[i], "libamdhip64"))
            kbi_buf_printf(&hip, "%s%s", hip.len ? ", " : "", needed->items[i]);
    if (!hip.len || strcmp(hip.data, want) != 0)
        rc = kbi_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                "%s for %s needs %s (DT_NEEDED), expected only %s", lib,
                                item->target, hip.len ? hip.data : "no HIP runtime", want);
    kbi_buf_free(&hip);
    kb_inspect_free(ins);
    return rc;
}

/* Copy one code object out of the library into path. */
static int extract_code_object(kb_ctx *ctx, const char *lib, const kb_gpu_entry *e,
                               const char *path)
{
    kb_buf data = KB_BUF_INIT;
    int rc = kbi_read_file(ctx, lib, &data);
    if (!rc && (e->file_offset > data.len || e->size > data.len - e->file_offset))
        rc = kbi_error_set_path(ctx, KB_ERR_PARSE, lib, 0, 0,
                                "%s: the %s code object lies outside the file", lib, e->arch);
    if (!rc)
        rc = kbi_write_file_atomic(ctx, path, data.data + e->file_offset, (size_t)e->size, 0644);
    kbi_buf_free(&data);
    return rc;
}

/* objdump's verdict on one code object: exit 0, no <unknown> word, an s_endpgm. */
static int disassemble(kb_ctx *ctx, const char *objdump, const char *co, const char *gfx,
                       const char *lib, const char *target)
{
    char mcpu[64];
    snprintf(mcpu, sizeof(mcpu), "--mcpu=%s", gfx);
    const char *argv[] = {objdump, "-d", mcpu, co, NULL};
    kb_proc_result r;
    int rc = kbi_proc_run(ctx, &r, argv, NULL, 120000);
    if (rc)
        return rc;
    const char *out = r.output.data ? r.output.data : "";
    const char *unknown = strstr(out, "<unknown>");
    if (r.exit_code != 0 || unknown || !strstr(out, "s_endpgm"))
        rc = kbi_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                "%s for %s does not disassemble for %s (%s -d %s: %s)", lib, target,
                                gfx, objdump, mcpu,
                                r.exit_code != 0 ? "failed"
                                : unknown        ? "an <unknown> instruction"
                                                 : "no s_endpgm");
    kbi_proc_result_free(&r);
    return rc;
}

int kbi_verify_disassembly(kb_ctx *ctx, const char *lib, const kb_plan_item *item,
                           const char *objdump)
{
    kb_inspect *ins = NULL;
    int rc = inspect(ctx, &ins, lib);
    for (size_t i = 0; !rc && i < kb_inspect_gpu_code_count(ins); i++) {
        const kb_gpu_entry *e = kbi_inspect_gpu_entry(ins, i);
        if (e->code.kind != KB_GPU_CODE_AMDGCN)
            continue;
        char gfx[48];
        gfx_base(gfx, sizeof(gfx), e->arch);
        char *co = kbi_asprintf("%s.%s.co", lib, gfx);
        rc = co ? extract_code_object(ctx, lib, e, co) : kbi_error_oom(ctx);
        if (!rc)
            rc = disassemble(ctx, objdump, co, gfx, lib, item->target);
        if (co)
            unlink(co);
        free(co);
    }
    kb_inspect_free(ins);
    return rc;
}

/* A C++-mangled export the package defined itself (not a weak std:: template instance that
 * libstdc++'s visibility pragmas export): a function meant to be an export without extern "C",
 * which no C caller can find by its name. */
static bool stray_mangled(const char *name)
{
    static const char *const std_prefixes[] = {
        "_ZNSt", "_ZNKSt", "_ZSt", "_ZNSa", "_ZNSs", "_ZN9__gnu_cxx", "_ZNK9__gnu_cxx",
        "_ZTI",  "_ZTS",   "_ZTV", "_ZGV",  "_ZTH",  "_ZTW"};
    if (!kbi_str_starts(name, "_Z"))
        return false;
    for (size_t i = 0; i < KB_ARRAY_LEN(std_prefixes); i++)
        if (kbi_str_starts(name, std_prefixes[i]))
            return false;
    return true;
}

static int check_mangled(kb_ctx *ctx, const kb_inspect *ins, const char *lib)
{
    for (size_t i = 0; i < ins->strong_exports.len; i++)
        if (stray_mangled(ins->strong_exports.items[i]))
            return kbi_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                      "%s exports the C++-mangled symbol %s: a C caller cannot "
                                      "find it by name (declare the function extern \"C\", or keep "
                                      "it hidden)",
                                      lib, ins->strong_exports.items[i]);
    return 0;
}

/* Imports that end the process: a kernel library that calls exit() takes the Python
 * interpreter (or any host) down with it, an error nobody can catch. A warning, with the
 * name, since an assert() path imports abort too. */
static int note_exit_imports(const kb_inspect *ins, const char *target, kb_strv *warnings)
{
    static const char *const fatal[] = {"exit", "_exit", "_Exit", "abort", "quick_exit"};
    for (size_t i = 0; warnings && i < KB_ARRAY_LEN(fatal); i++)
        if (kbi_strv_contains(&ins->imports, fatal[i]) &&
            kbi_strv_push_owned(
                warnings, kbi_asprintf("%s: the library imports %s(): an error path that calls "
                                       "it ends the caller's process (return a "
                                       "KBPKG_KERNEL_* code instead)",
                                       target, fatal[i])))
            return KB_ERR_NOMEM;
    return 0;
}

/* The host's dynamic loader (glibc's ld.so), found where the ABI puts it. */
static const char *dynamic_loader(void)
{
    static const char *const paths[] = {"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1",
                                        "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
                                        "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1"};
    for (size_t i = 0; i < KB_ARRAY_LEN(paths); i++)
        if (kbi_path_exists(paths[i]))
            return paths[i];
    return NULL;
}

/* The GPU runtime a target may need without the build host having it (a ROCm build farm
 * without a GPU still has libamdhip64; a CUDA one links cudart statically). */
static bool runtime_library(const char *name)
{
    return kbi_str_starts(name, "libamdhip64.so") || kbi_str_starts(name, "libcuda.so") ||
           kbi_str_starts(name, "libcudart.so") || kbi_str_starts(name, "libhsa-runtime64.so");
}

/* Lines of the loader's trace that mean the library cannot load: a NEEDED library the host
 * lacks ("libfoo.so => not found") or a symbol nothing defines ("undefined symbol: tanhf"). */
static int read_trace(kb_ctx *ctx, const char *out, const char *lib, const kb_plan_item *item,
                      kb_strv *warnings)
{
    bool runtime_missing = false;
    kb_buf missing = KB_BUF_INIT, undefined = KB_BUF_INIT;
    for (const char *p = out; p && *p;) {
        size_t len = strcspn(p, "\n");
        const char *nf = strstr(p, " => not found");
        if (nf && nf < p + len) {
            const char *s = p;
            while (*s == ' ' || *s == '\t')
                s++;
            char *name = kbi_strndup(s, (size_t)(nf - s));
            if (name && runtime_library(name) && item->backend != KB_BACKEND_CPU)
                runtime_missing = true;
            else if (name)
                kbi_buf_printf(&missing, "%s%s", missing.len ? ", " : "", name);
            free(name);
        } else if (strncmp(p, "undefined symbol: ", 18) == 0) {
            size_t n = strcspn(p + 18, "\t \n");
            kbi_buf_printf(&undefined, "%s%.*s", undefined.len ? ", " : "", (int)n, p + 18);
        }
        p += len + (p[len] == '\n');
    }
    int rc = 0;
    if (missing.len)
        rc = kbi_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                "%s for %s needs %s, which this host does not have: it would not "
                                "load",
                                lib, item->target, missing.data);
    else if (undefined.len && !runtime_missing)
        rc = kbi_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                "%s for %s does not load in a clean process: undefined symbol %s "
                                "(a library missing from the link, or listed before the sources)",
                                lib, item->target, undefined.data);
    else if (runtime_missing && warnings &&
             kbi_strv_push_owned(warnings, kbi_asprintf("%s: the GPU runtime library is not on "
                                                        "this host; the load check saw only what "
                                                        "it could resolve",
                                                        item->target)))
        rc = kbi_error_oom(ctx);
    kbi_buf_free(&missing);
    kbi_buf_free(&undefined);
    return rc;
}

int kbi_verify_loads(kb_ctx *ctx, const char *lib, const kb_plan_item *item, kb_strv *warnings)
{
    const char *ldso = dynamic_loader();
    if (!ldso)
        return warnings && kbi_strv_push_owned(warnings, kbi_asprintf("%s: no glibc dynamic loader "
                                                                      "found; the load check did "
                                                                      "not run",
                                                                      item->target))
                   ? kbi_error_oom(ctx)
                   : 0;
    char *abs = realpath(lib, NULL);
    if (!abs)
        return kbi_error_set_path(ctx, KB_ERR_IO, lib, 0, 0, "cannot resolve %s", lib);
    /* env -i: nothing preloaded, no LD_LIBRARY_PATH; the loader resolves every NEEDED entry
     * and, with LD_BIND_NOW, every symbol, as a plain C program's dlopen(RTLD_NOW) would. */
    const char *argv[] = {
        "env", "-i", "LD_TRACE_LOADED_OBJECTS=1", "LD_WARN=yes", "LD_BIND_NOW=yes", ldso,
        abs,   NULL};
    kb_proc_result r;
    int rc = kbi_proc_run(ctx, &r, argv, NULL, 60000);
    if (!rc) {
        rc = read_trace(ctx, r.output.data ? r.output.data : "", lib, item, warnings);
        kbi_proc_result_free(&r);
    }
    free(abs);
    return rc;
}

int kbi_verify_library(kb_ctx *ctx, const char *lib, const kb_manifest *m, const kb_plan_item *item,
                       char glibc[16], char glibcxx[16], kb_strv *warnings)
{
    kb_strv required = KB_STRV_INIT;
    int rc = kbi_strv_push(&required, "kbpkg_kernel_info") ? kbi_error_oom(ctx) : 0;
    if (!rc && kbi_manifest_backend_exports(m, item->backend, &required))
        rc = kbi_error_oom(ctx);
    kb_inspect *ins = NULL;
    if (!rc)
        rc = inspect(ctx, &ins, lib);
    if (!rc)
        rc = check_exports(ctx, ins, lib, &required);
    if (!rc)
        rc = check_mangled(ctx, ins, lib);
    if (!rc)
        rc = check_gpu_code(ctx, ins, lib, item);
    if (!rc && note_exit_imports(ins, item->target, warnings))
        rc = kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_verify_loads(ctx, lib, item, warnings);
    if (!rc) {
        snprintf(glibc, 16, "%s", kb_inspect_glibc_needed(ins));
        snprintf(glibcxx, 16, "%s", kb_inspect_glibcxx_needed(ins));
    }
    kb_inspect_free(ins);
    kbi_strv_free(&required);
    return rc;
}
