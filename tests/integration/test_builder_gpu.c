/* Builder on real GPU toolchains: CUDA sm_80 + PTX compute_80, ROCm gfx1030 + gfx1100 (through
 * the generated device-lib overlay), checked with the inspector. Skipped without nvcc/hipcc. */
#include "kbtest.h"

#include "builder/builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The package in folder pkg built for the targets the filters name, into tmp/out<tag> with
 * tmp/work<tag> (no source artifact); a failed kb_build fails the test. */
static kb_build_result *build_package(kb_ctx *ctx, const char *pkg, const char *tmp,
                                      const char *tag, const char **filters, size_t n)
{
    char *out = kbi_asprintf("%s/out%s", tmp, tag), *work = kbi_asprintf("%s/work%s", tmp, tag);
    kb_build_options o = KB_BUILD_OPTIONS_INIT;
    o.targets = filters;
    o.target_count = n;
    o.jobs = 2;
    o.out_dir = out;
    o.work_dir = work;
    o.no_source_artifact = 1;
    kb_build_result *r = NULL;
    cr_assert_eq(kb_build(&r, ctx, pkg, &o), 0, "%s: %s", pkg, kb_ctx_last_error(ctx)->message);
    free(out);
    free(work);
    return r;
}

static kb_build_result *build_targets_in(kb_ctx *ctx, const char *tmp, const char *tag,
                                         const char **filters, size_t n)
{
    char *src = kbt_data("builder/vadd");
    kb_build_result *r = build_package(ctx, src, tmp, tag, filters, n);
    free(src);
    return r;
}

static kb_build_result *build_targets(kb_ctx *ctx, const char *tmp, const char **filters, size_t n)
{
    return build_targets_in(ctx, tmp, "", filters, n);
}

static const kb_build_target_result *result_for(const kb_build_result *r, const char *prefix)
{
    for (size_t i = 0; i < r->count; i++)
        if (kbi_str_starts(r->targets[i].target, prefix))
            return &r->targets[i];
    return NULL;
}

Test(builder_gpu, cuda_sass_and_ptx_targets, .timeout = 600)
{
    char *nvcc = NULL;
    if (kbi_which(&nvcc, "nvcc") != 0 && kbi_which(&nvcc, "/usr/local/cuda/bin/nvcc") != 0)
        cr_skip_test("nvcc is not installed");
    free(nvcc);
    char *tmp = kbt_mkdtemp();
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "cache.dir", tmp), 0);
    const char *filters[] = {"cuda13-sm_80", "cuda13-compute_80"};
    kb_build_result *r = build_targets(ctx, tmp, filters, 2);
    cr_assert_eq(r->count, 2);
    for (size_t i = 0; i < r->count; i++) {
        cr_expect_eq(r->targets[i].status, KB_BUILD_BUILT, "%s: %s", r->targets[i].target,
                     r->targets[i].message);
        cr_expect(r->targets[i].size > 0);
    }
    /* The inspector lists exactly SASS sm_80 in one and PTX compute_80 in the other. */
    const char *dirs[] = {"x", "y"}, *prefixes[] = {"cuda13-sm_80", "cuda13-compute_80"};
    const char *found[] = {"holds SASS sm_80, expected only PTX compute_80",
                           "holds PTX compute_80, expected only SASS sm_80"};
    for (int k = 0; k < 2; k++) {
        const kb_build_target_result *t = result_for(r, prefixes[k]);
        cr_assert_not_null(t);
        char *cmd = kbi_asprintf("cd '%s' && mkdir %s && tar -C %s -xf '%s'", tmp, dirs[k], dirs[k],
                                 t->artifact);
        cr_assert_eq(system(cmd), 0);
        free(cmd);
        char *lib = kbi_asprintf("%s/%s/lib/libvec_add.so", tmp, dirs[k]);
        kb_plan_item item = {.backend = KB_BACKEND_CUDA};
        snprintf(item.target, sizeof(item.target), "%s", t->target);
        snprintf(item.arch, sizeof(item.arch), "%s", k == 0 ? "sm_80" : "compute_80");
        cr_expect_eq(kbi_verify_gpu_code(ctx, lib, &item), 0, "%s",
                     kb_ctx_last_error(ctx)->message);
        snprintf(item.arch, sizeof(item.arch), "%s", k == 0 ? "compute_80" : "sm_80");
        cr_expect_eq(kbi_verify_gpu_code(ctx, lib, &item), KB_ERR_BUILD);
        cr_expect(strstr(kb_ctx_last_error(ctx)->message, found[k]), "%s",
                  kb_ctx_last_error(ctx)->message);
        free(lib);
    }
    /* nvcc output is byte-identical when rebuilt in another work folder (tmpxft names are
     * stripped with .symtab). */
    kb_build_result *again = build_targets_in(ctx, tmp, "2", filters, 2);
    for (size_t i = 0; i < r->count; i++)
        cr_expect_str_eq(r->targets[i].sha256, result_for(again, r->targets[i].target)->sha256,
                         "%s is not reproducible", r->targets[i].target);
    kb_build_result_free(again);
    kb_build_result_free(r);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(tmp);
}

Test(builder_gpu, rocm_gfx1030_and_gfx1100_via_overlay, .timeout = 600)
{
    char *hipcc = NULL;
    if (kbi_which(&hipcc, "hipcc") != 0)
        kbt_skip_missing("hipcc is not installed");
    free(hipcc);
    char *tmp = kbt_mkdtemp();
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "cache.dir", tmp), 0);
    const char *filters[] = {"rocm5"};
    kb_build_result *r = build_targets(ctx, tmp, filters, 1);
    cr_assert_eq(r->count, 2);
    for (size_t i = 0; i < r->count; i++)
        cr_expect_eq(r->targets[i].status, KB_BUILD_BUILT, "%s: %s", r->targets[i].target,
                     r->targets[i].message);
    /* The verifier read each bundle: only the declared gfx inside. Check it from here too. */
    kb_plan_item item = {.backend = KB_BACKEND_ROCM};
    const kb_build_target_result *t = result_for(r, "rocm5-gfx1100");
    cr_assert_not_null(t);
    char *cmd = kbi_asprintf("cd '%s' && mkdir y && tar -C y -xf '%s'", tmp, t->artifact);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    char *lib = kbi_asprintf("%s/y/lib/libvec_add.so", tmp);
    snprintf(item.target, sizeof(item.target), "rocm5-gfx1100-x86_64-linux");
    snprintf(item.arch, sizeof(item.arch), "gfx1100");
    cr_expect_eq(kbi_verify_gpu_code(ctx, lib, &item), 0, "%s", kb_ctx_last_error(ctx)->message);
    snprintf(item.arch, sizeof(item.arch), "gfx1030");
    cr_expect_eq(kbi_verify_gpu_code(ctx, lib, &item), KB_ERR_BUILD);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message,
                     "holds AMDGCN gfx1100, expected only AMDGCN gfx1030"),
              "%s", kb_ctx_last_error(ctx)->message);
    free(lib);
    kb_build_result_free(r);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(tmp);
}

/* The vadd fixture declaring the archs hipcc 5.2 cannot build, in a copy under tmp. */
static char *amd_fixture(const char *tmp)
{
    char *src = kbt_data("builder/vadd");
    char *dst = kbi_asprintf("%s/vadd-amd", tmp);
    char *cmd = kbi_asprintf("cp -r '%s' '%s' && sed -i 's/archs: \\[gfx1030, gfx1100\\]/archs: "
                             "[gfx942, gfx1201, gfx11-generic]/' '%s/kernel.yaml'",
                             src, dst, dst);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    free(src);
    return dst;
}

static char *unpack_lib(const char *tmp, const char *artifact, const char *tag)
{
    char *cmd = kbi_asprintf("cd '%s' && mkdir %s && tar -C %s -xf '%s'", tmp, tag, tag, artifact);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    return kbi_asprintf("%s/%s/lib/libvec_add.so", tmp, tag);
}

/* Overwrite one byte of the first code object's ELF header in lib. */
static void patch_code_object(kb_ctx *ctx, const char *lib, size_t field, uint8_t value)
{
    kb_inspect *ins = NULL;
    cr_assert_eq(kb_inspect_file(&ins, ctx, lib), 0);
    const kb_gpu_entry *e = kbi_inspect_gpu_entry(ins, 0);
    cr_assert(e && e->elf);
    FILE *f = fopen(lib, "r+b");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, (long)(e->file_offset + field), SEEK_SET), 0);
    cr_assert_eq(fputc(value, f), value);
    fclose(f);
    kb_inspect_free(ins);
}

static char *script(const char *tmp, const char *name, const char *body)
{
    char *path = kbi_asprintf("%s/%s", tmp, name);
    kbt_write(path, body);
    cr_assert_eq(chmod(path, 0755), 0);
    return path;
}

/* hip-clang (clang-19): gfx1201 and gfx11-generic code objects linked against the
 * libamdhip64.so.6 stub, each verified: bundle, e_flags, DT_NEEDED, disassembly. */
Test(builder_gpu, hip_clang_rocm6_new_arch_and_generic, .timeout = 600)
{
    char *clang = NULL;
    if (kbi_which(&clang, "clang-19") != 0)
        cr_skip_test("clang-19 is not installed (scripts/install-deps.sh installs it)");
    free(clang);
    char *tmp = kbt_mkdtemp();
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "cache.dir", tmp), 0);
    char *pkg = amd_fixture(tmp);
    const char *filters[] = {"rocm6-gfx1201", "rocm6-gfx11-generic"};
    kb_build_result *r = build_package(ctx, pkg, tmp, "", filters, 2);
    cr_assert_eq(r->count, 2);
    for (size_t i = 0; i < r->count; i++)
        cr_expect_eq(r->targets[i].status, KB_BUILD_BUILT, "%s: %s", r->targets[i].target,
                     r->targets[i].message);
    char *lib = unpack_lib(tmp, result_for(r, "rocm6-gfx1201")->artifact, "a");
    char *generic = unpack_lib(tmp, result_for(r, "rocm6-gfx11-generic")->artifact, "b");
    kb_plan_item item = {.backend = KB_BACKEND_ROCM};
    snprintf(item.target, sizeof(item.target), "rocm6-gfx1201-x86_64-linux");
    snprintf(item.arch, sizeof(item.arch), "gfx1201");
    cr_expect_eq(kbi_verify_gpu_code(ctx, lib, &item), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_expect_eq(kbi_verify_hip_runtime(ctx, lib, &item), 0, "%s", kb_ctx_last_error(ctx)->message);
    char *objdump = NULL;
    cr_assert_eq(kbi_which(&objdump, "llvm-objdump-19"), 0);
    cr_expect_eq(kbi_verify_disassembly(ctx, lib, &item, objdump), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    /* the soname is the target's runtime: a rocm5 id over this library is refused */
    snprintf(item.target, sizeof(item.target), "rocm5-gfx1201-x86_64-linux");
    cr_expect_eq(kbi_verify_hip_runtime(ctx, lib, &item), KB_ERR_BUILD);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message,
                     "needs libamdhip64.so.6 (DT_NEEDED), expected only libamdhip64.so.5"),
              "%s", kb_ctx_last_error(ctx)->message);
    snprintf(item.target, sizeof(item.target), "rocm6-gfx1201-x86_64-linux");
    /* a disassembler that meets an unknown word, or fails, fails the target */
    char *unknown =
        script(tmp, "objdump-unknown", "#!/bin/sh\necho '  <unknown>'\necho s_endpgm\n");
    cr_expect_eq(kbi_verify_disassembly(ctx, lib, &item, unknown), KB_ERR_BUILD);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "does not disassemble for gfx1201 (") &&
                  strstr(kb_ctx_last_error(ctx)->message, "an <unknown> instruction"),
              "%s", kb_ctx_last_error(ctx)->message);
    char *failing = script(tmp, "objdump-fails", "#!/bin/sh\nexit 1\n");
    cr_expect_eq(kbi_verify_disassembly(ctx, lib, &item, failing), KB_ERR_BUILD);
    /* e_flags naming another machine than the bundle entry claims */
    patch_code_object(ctx, lib, 48, 0x48); /* EF_AMDGPU_MACH_AMDGCN_GFX1200 */
    cr_expect_eq(kbi_verify_gpu_code(ctx, lib, &item), KB_ERR_BUILD);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "name machine 0x48, gfx1201 is 0x4e"), "%s",
              kb_ctx_last_error(ctx)->message);
    /* the generic code object is v6 with a generic version; an older ABI byte is refused */
    snprintf(item.target, sizeof(item.target), "rocm6-gfx11-generic-x86_64-linux");
    snprintf(item.arch, sizeof(item.arch), "gfx11-generic");
    cr_expect_eq(kbi_verify_gpu_code(ctx, generic, &item), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_expect_eq(kbi_verify_disassembly(ctx, generic, &item, objdump), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    patch_code_object(ctx, generic, 8, 3); /* EI_ABIVERSION: code object v5 */
    cr_expect_eq(kbi_verify_gpu_code(ctx, generic, &item), KB_ERR_BUILD);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "must be code object v6"), "%s",
              kb_ctx_last_error(ctx)->message);
    free(unknown);
    free(failing);
    free(objdump);
    free(lib);
    free(generic);
    free(pkg);
    kb_build_result_free(r);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(tmp);
}

/* The first-party packages on both AMD toolchains: hipcc 5.2 (gfx1030) and clang-19 against the
 * generated ROCm 6 stub (gfx942, RadeonFlow's own target). Each once failed there while every
 * CPU and CUDA build passed: gemm exported its FP8 SIMT kernel's mangled name (HIP gives
 * __global__ functions default visibility), rmsnorm's __launch_bounds__ split at the comma of
 * a template argument (a macro in HIP), activation called an occupancy function the stub
 * lacked. */
Test(builder_gpu, first_party_packages_build_for_amd, .timeout = 600)
{
    char *hipcc = NULL, *clang = NULL;
    if (kbi_which(&hipcc, "hipcc") != 0 || kbi_which(&clang, "clang-19") != 0)
        kbt_skip_missing("hipcc and clang-19 are needed (scripts/install-deps.sh installs them)");
    free(hipcc);
    free(clang);
    char *tmp = kbt_mkdtemp();
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "cache.dir", tmp), 0);
    const char *pkgs[] = {"radeonflow/gemm", "kbpkg-community/activation",
                          "kbpkg-community/rmsnorm"};
    const char *filters[] = {"rocm5-gfx1030", "rocm6-gfx942"};
    for (size_t p = 0; p < sizeof(pkgs) / sizeof(pkgs[0]); p++) {
        char *rel = kbi_asprintf("kernels/%s", pkgs[p]);
        char *src = kbt_source(rel);
        char tag[8];
        snprintf(tag, sizeof(tag), "%zu", p);
        kb_build_result *r = build_package(ctx, src, tmp, tag, filters, 2);
        cr_expect_eq(r->count, 2, "%s: %zu targets", pkgs[p], r->count);
        for (size_t i = 0; i < r->count; i++)
            cr_expect_eq(r->targets[i].status, KB_BUILD_BUILT, "%s %s: %s", pkgs[p],
                         r->targets[i].target, r->targets[i].message);
        kb_build_result_free(r);
        free(rel);
        free(src);
    }
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(tmp);
}
