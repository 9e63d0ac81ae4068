/* kernels/: each first-party package builds for the CPU with cc and passes its own check;
 * the check catches a wrong library; exports, visibility and vendored headers are right. */
#include "kbtest.h"

#include "kbpkg/kernel_abi.h"
#include "manifests/manifest.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kpkg {
    const char *dir;  /* under kernels/ */
    const char *stem; /* src/<stem>_cpu.c */
    const char *lib;  /* lib<lib>.so */
    const char *name; /* package name in kbpkg_kernel_info */
} kpkg;

static const kpkg pkgs[] = {
    {"radeonflow/gemm", "gemm", "gemm", "radeonflow/gemm"},
    {"kbpkg-community/activation", "activation", "activation", "kbpkg-community/activation"},
    {"kbpkg-community/rmsnorm", "rmsnorm", "rmsnorm", "kbpkg-community/rmsnorm"},
};

static char *cc_path(void)
{
    char *cc = NULL;
    if (kbi_which(&cc, "cc") != 0)
        kbt_skip_missing("no C compiler (cc) in PATH: cannot build the kernel packages");
    return cc;
}

static char *fmt(const char *f, const char *a, const char *b)
{
    kb_buf buf = KB_BUF_INIT;
    cr_assert_eq(kbi_buf_printf(&buf, f, a, b), 0);
    return kbi_buf_detach(&buf);
}

/* Runs argv; returns the exit code and hands back the combined output. */
static int run(const char *const *argv, char **output)
{
    kb_ctx *ctx = kbt_ctx();
    kb_proc_result res;
    memset(&res, 0, sizeof res);
    int rc = kbi_proc_run(ctx, &res, argv, NULL, 300000);
    cr_assert_eq(rc, 0, "could not run %s", argv[0]);
    int code = res.exit_code;
    *output = kbi_buf_detach(&res.output);
    kbi_proc_result_free(&res);
    kb_ctx_free(ctx);
    return code;
}

static void expect_runs(const char *const *argv, const char *what)
{
    char *out = NULL;
    int code = run(argv, &out);
    cr_assert_eq(code, 0, "%s failed (exit %d):\n%s", what, code, out);
    free(out);
}

/* Builds lib<lib>.so with the flags the builder uses (plus sanitizers), and the check against
 * it, into tmp. wrong_lib: a replacement source for the exports (the package's CPU source then
 * only provides the reference). sanitize: ASan+UBSan in both (not for a library this process
 * dlopens). Returns the check's path, owned by the caller. */
static char *build_cpu(const char *tmp, const kpkg *p, const char *wrong_lib, bool sanitize)
{
    char *cc = cc_path();
    char *root = kbt_source("kernels");
    char *dir = fmt("%s/%s", root, p->dir);
    char *inc = fmt("-I%s/include", dir, "");
    char *src_inc = fmt("-I%s/src", dir, "");
    /* <kbpkg/kernel_abi.h>: the builder passes the one ABI header; so does this test */
    char *abi_dir = kbt_source("include");
    char *abi_inc = fmt("-I%s", abi_dir, "");
    free(abi_dir);
    char *cpu_src = fmt("%s/src/%s_cpu.c", dir, p->stem);
    char *libfile = fmt("%s/lib%s.so", tmp, p->lib);
    char *check_src = fmt("%s/tests/check.c", dir, "");
    char *check = fmt("%s/check_%s", tmp, p->lib);
    char *ldir = fmt("-L%s", tmp, "");
    char *rpath = fmt("-Wl,-rpath,%s", tmp, "");
    char *lname = fmt("-l%s", p->lib, "");
    const char *san = sanitize ? "-fsanitize=address,undefined" : "-DKBPKG_NO_SANITIZER";
    const char *nrec = sanitize ? "-fno-sanitize-recover=undefined" : "-O2";
    const char *ref_only = wrong_lib ? "-DKBPKG_REFERENCE_ONLY" : "-DKBPKG_CPU_LIBRARY";
    const char *lib_argv[] = {cc,
                              "-std=c11",
                              "-O1",
                              "-g",
                              "-Wall",
                              "-Wextra",
                              "-Werror",
                              san,
                              nrec,
                              "-fPIC",
                              "-shared",
                              "-fvisibility=hidden",
                              "-DKBPKG_TARGET=\"cpu-test-x86_64-linux\"",
                              ref_only,
                              inc,
                              src_inc,
                              abi_inc,
                              cpu_src,
                              "-o",
                              libfile,
                              "-lm",
                              wrong_lib,
                              NULL};
    expect_runs(lib_argv, "building the package library");
    const char *check_argv[] = {cc,        "-std=c11", "-O1",     "-g",    "-Wall",
                                "-Wextra", "-Werror",  san,       nrec,    "-DKBPKG_REFERENCE_ONLY",
                                inc,       abi_inc,    check_src, cpu_src, ldir,
                                lname,     rpath,      "-lm",     "-o",    check,
                                NULL};
    expect_runs(check_argv, "building the check");
    free(cc), free(root), free(dir), free(inc), free(src_inc), free(abi_inc), free(cpu_src);
    free(libfile);
    free(check_src), free(ldir), free(rpath), free(lname);
    return check;
}

static void expect_check_passes(const kpkg *p)
{
    char *tmp = kbt_mkdtemp();
    char *check = build_cpu(tmp, p, NULL, true);
    const char *argv[] = {check, NULL};
    char *out = NULL;
    int code = run(argv, &out);
    cr_expect_eq(code, 0, "%s check failed (exit %d):\n%s", p->name, code, out);
    cr_expect(strstr(out, "check: PASSED") != NULL, "%s check did not pass:\n%s", p->name, out);
    cr_expect(strstr(out, "seed ") != NULL, "%s check does not print its seed", p->name);
    free(out), free(check);
    kbt_rmtree(tmp);
    free(tmp);
}

Test(kernels, gemm_cpu_check_passes)
{
    expect_check_passes(&pkgs[0]);
}
Test(kernels, activation_cpu_check_passes)
{
    expect_check_passes(&pkgs[1]);
}
Test(kernels, rmsnorm_cpu_check_passes)
{
    expect_check_passes(&pkgs[2]);
}

/* The check must be able to fail: one wrong element of C out of thousands is reported with
 * the export, the shape and the element's index. */
Test(kernels, gemm_check_catches_one_wrong_element)
{
    char *tmp = kbt_mkdtemp();
    char *wrong = kbt_data("kernels/gemm_wrong_corner.c");
    char *check = build_cpu(tmp, &pkgs[0], wrong, true);
    const char *argv[] = {check, NULL};
    char *out = NULL;
    int code = run(argv, &out);
    cr_expect_eq(code, 1, "check accepted a wrong library (exit %d):\n%s", code, out);
    cr_expect(strstr(out, "FAIL rf_gemm_bf16 M=257 N=383 K=1000") != NULL, "%s", out);
    cr_expect(strstr(out, "rf_gemm_bf16 M=257 N=383 K=1000 lda=1000 ldb=383 ldc=383 a=1 b=0: "
                          "element 98430:") != NULL,
              "the message does not name the last element:\n%s", out);
    cr_expect(strstr(out, "FAIL rf_gemm_f32") == NULL, "f32 was not spoiled:\n%s", out);
    cr_expect(strstr(out, "FAIL rf_gemm_fp8_blockscale M=257 N=383 K=384") != NULL,
              "the FP8 check missed a wrong element:\n%s", out);
    free(out), free(check), free(wrong);
    kbt_rmtree(tmp);
    free(tmp);
}

/* The special-value cases must be able to fail: a library that turns NaN results into zeros
 * (right on every ordinary number) is caught, on both paths, and only for bf16. */
Test(kernels, activation_check_catches_lost_nan)
{
    char *tmp = kbt_mkdtemp();
    char *wrong = kbt_data("kernels/activation_nan_to_zero.c");
    char *check = build_cpu(tmp, &pkgs[1], wrong, true);
    const char *argv[] = {check, NULL};
    char *out = NULL;
    int code = run(argv, &out);
    cr_expect_eq(code, 1, "check accepted a library that loses NaN (exit %d):\n%s", code, out);
    cr_expect(strstr(out, "FAIL act_silu_and_mul_bf16 special values n=16 d=64") != NULL, "%s",
              out);
    cr_expect(strstr(out, "FAIL act_gelu_tanh_bf16 special values n=7 d=13") != NULL, "%s", out);
    cr_expect(strstr(out, "FAIL act_silu_and_mul_bf16 n=") == NULL, "ordinary data failed too:\n%s",
              out);
    cr_expect(strstr(out, "FAIL act_silu_and_mul_f16") == NULL, "f16 was not spoiled:\n%s", out);
    free(out), free(check), free(wrong);
    kbt_rmtree(tmp);
    free(tmp);
}

/* The library exports its functions and kbpkg_kernel_info with the baked target, and hides
 * everything else (the CPU reference functions). */
Test(kernels, cpu_library_exports_only_the_abi)
{
    for (size_t i = 0; i < sizeof pkgs / sizeof pkgs[0]; i++) {
        char *tmp = kbt_mkdtemp();
        char *check = build_cpu(tmp, &pkgs[i], NULL, false);
        char *libfile = fmt("%s/lib%s.so", tmp, pkgs[i].lib);
        void *h = dlopen(libfile, RTLD_NOW | RTLD_LOCAL);
        cr_assert_not_null(h, "dlopen %s: %s", libfile, dlerror());
        typedef const kbpkg_kernel_info_t *(*info_fn)(void);
        info_fn info = (info_fn)dlsym(h, "kbpkg_kernel_info");
        cr_assert_not_null(info, "%s does not export kbpkg_kernel_info", pkgs[i].name);
        const kbpkg_kernel_info_t *ki = info();
        cr_expect_eq(ki->abi, 1);
        cr_expect_str_eq(ki->name, pkgs[i].name);
        cr_expect_str_eq(ki->version, "1.0.0");
        cr_expect_str_eq(ki->target, "cpu-test-x86_64-linux");
        cr_expect_eq(ki->backend, 0);
        char *hidden = fmt("%s%s", i == 0 ? "rf_gemm_bf16" : i == 1 ? "act" : "rmsnorm", "_cpu");
        cr_expect_null(dlsym(h, hidden), "%s leaks internal symbol %s", pkgs[i].name, hidden);
        const char *exported = i == 0   ? "rf_gemm_f16"
                               : i == 1 ? "act_gelu_tanh_bf16"
                                        : "rmsnorm_f32";
        cr_expect_not_null(dlsym(h, exported), "%s does not export %s", pkgs[i].name, exported);
        dlclose(h);
        free(hidden), free(libfile), free(check);
        kbt_rmtree(tmp);
        free(tmp);
    }
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    kb_buf b = KB_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        cr_assert_eq(kbi_buf_append(&b, chunk, n), 0);
    fclose(f);
    return kbi_buf_detach(&b);
}

/* Packages are self-contained (their source artifact holds only their folder), so each
 * vendors the shared headers; the copies must not drift from kernels/common/. */
Test(kernels, vendored_headers_match_common)
{
    static const char *const headers[] = {"kb_gpu_compat.h", "kbpkg_half.h", "kbpkg_check.h",
                                          "kbpkg_bench.h", "kb_cpu.h"};
    for (size_t h = 0; h < sizeof headers / sizeof headers[0]; h++) {
        char *rel = fmt("kernels/common/%s", headers[h], "");
        char *common_path = kbt_source(rel);
        char *want = slurp(common_path);
        for (size_t i = 0; i < sizeof pkgs / sizeof pkgs[0]; i++) {
            char *prel = fmt("kernels/%s/include/%s", pkgs[i].dir, headers[h]);
            char *ppath = kbt_source(prel);
            char *got = slurp(ppath);
            cr_expect_str_eq(got, want, "%s differs from %s (run kernels/sync-common.sh)", ppath,
                             common_path);
            free(got), free(ppath), free(prel);
        }
        free(want), free(common_path), free(rel);
    }
}

/* Every first-party kernel.yaml passes the strict parser with its files present, and its
 * exports match what the CPU library defines. */
Test(kernels, manifests_load_with_files)
{
    for (size_t i = 0; i < sizeof pkgs / sizeof pkgs[0]; i++) {
        char *rel = fmt("kernels/%s/kernel.yaml", pkgs[i].dir, "");
        char *path = kbt_source(rel);
        kb_ctx *ctx = kbt_ctx();
        kb_manifest *m = NULL;
        int rc = kbi_manifest_load(ctx, &m, path, true);
        cr_assert_eq(rc, 0, "%s: %s", path, kb_ctx_last_error(ctx)->message);
        cr_expect_str_eq(m->name, pkgs[i].name);
        cr_expect_eq(m->abi, 1);
        cr_expect(m->exports.len >= 3, "%s declares %zu exports", path, m->exports.len);
        cr_expect(m->backends[KB_BACKEND_CUDA].present && m->backends[KB_BACKEND_CPU].present);
        kb_manifest_free(m);
        kb_ctx_free(ctx);
        free(path), free(rel);
    }
}
