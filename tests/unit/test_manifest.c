/* Manifests: the DESIGN.md example, url sources, a minimal package, the public accessors. */
#include "kbtest.h"
#include "manifests/manifest.h"

#include <stdlib.h>
#include <string.h>

static kb_manifest *load_good(kb_ctx *ctx, const char *name)
{
    char *dir = kbt_data(name);
    kb_manifest *m = NULL;
    int rc = kbi_manifest_load(ctx, &m, dir, true);
    cr_assert_eq(rc, 0, "%s: %s", dir, kb_ctx_last_error(ctx)->message);
    free(dir);
    return m;
}

Test(manifest, design_example_parses_completely)
{
    kb_ctx *ctx = kbt_ctx();
    kb_manifest *m = load_good(ctx, "manifests/good/full");
    cr_expect_str_eq(m->name, "radeonflow/gemm");
    cr_expect_eq(m->version.major, 1);
    cr_expect_str_eq(m->version_text, "1.0.0");
    cr_expect_str_eq(m->summary, "Tiled GEMM, bf16/fp16/fp32 inputs, fp32 accumulation");
    cr_expect_str_eq(m->license, "MIT");
    cr_expect_eq(m->abi, 1);
    cr_expect_str_eq(m->header, "include/rf_gemm.h");
    cr_assert_eq(m->exports.len, 3);
    cr_expect_str_eq(m->exports.items[2], "rf_gemm_f32");
    const kb_backend_spec *cuda = &m->backends[KB_BACKEND_CUDA];
    cr_expect(cuda->present);
    cr_assert_eq(cuda->archs.len, 4);
    cr_expect_str_eq(cuda->archs.items[3], "sm_90");
    cr_expect_str_eq(cuda->ptx, "sm_80");
    cr_expect_str_eq(cuda->ptx_target, "compute_80");
    cr_assert_eq(cuda->source_count, 1);
    cr_expect_str_eq(cuda->sources[0].path, "src/gemm.cu");
    cr_expect_null(cuda->sources[0].url);
    cr_expect_eq(m->backends[KB_BACKEND_ROCM].archs.len, 2);
    cr_expect(m->backends[KB_BACKEND_METAL].present);
    cr_expect_str_eq(m->backends[KB_BACKEND_METAL].sources[0].path, "src/gemm.metal");
    cr_expect(m->backends[KB_BACKEND_CPU].present);
    cr_expect_eq(m->backends[KB_BACKEND_CPU].archs.len, 0);
    cr_expect_str_eq(m->test, "tests/check.c");
    cr_expect_str_eq(m->license_file, "LICENSE");
    cr_expect(kbi_str_ends(m->path, "manifests/good/full/kernel.yaml"));
    cr_expect(kbi_str_ends(m->dir, "manifests/good/full"));
    kb_manifest_free(m);
    kb_ctx_free(ctx);
}

Test(manifest, url_sources_flags_and_feature_archs)
{
    kb_ctx *ctx = kbt_ctx();
    kb_manifest *m = load_good(ctx, "manifests/good/url");
    cr_expect_str_eq(m->name, "acme/fft.v2");
    const kb_backend_spec *cuda = &m->backends[KB_BACKEND_CUDA];
    cr_expect_str_eq(cuda->ptx, "sm_75", "compute_75 is stored as sm_75");
    cr_assert_eq(cuda->flags.len, 2);
    cr_expect_str_eq(cuda->flags.items[1], "--use_fast_math");
    cr_assert_eq(cuda->source_count, 2);
    cr_expect_str_eq(cuda->sources[0].url, "https://example.org/fft/v2.3.4/fft.cu?raw=1");
    cr_expect_str_eq(cuda->sources[0].path, "fft.cu", "named after the URL, query dropped");
    cr_expect_str_eq(cuda->sources[0].sha256,
                     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    cr_expect_str_eq(cuda->sources[1].path, "src/twiddle_cuda.cu");
    cr_expect_str_eq(m->backends[KB_BACKEND_ROCM].archs.items[1], "gfx90a:xnack+");
    cr_expect_str_eq(m->backends[KB_BACKEND_ROCM].sources[0].path, "fft.hip");
    cr_expect_str_eq(m->backends[KB_BACKEND_CPU].archs.items[1], "aarch64");
    cr_expect_null(m->test);
    cr_expect_null(m->license_file);
    kb_manifest_free(m);
    kb_ctx_free(ctx);
}

Test(manifest, minimal_package_with_prerelease_and_copying)
{
    kb_ctx *ctx = kbt_ctx();
    kb_manifest *m = load_good(ctx, "manifests/good/minimal");
    cr_expect_str_eq(m->version.pre, "rc.1");
    cr_expect_str_eq(m->version.build, "build.7");
    cr_expect_str_eq(m->version_text, "0.1.0-rc.1+build.7");
    cr_expect_null(m->summary);
    cr_expect_not(m->backends[KB_BACKEND_CUDA].present);
    cr_expect_str_eq(m->license_file, "COPYING");
    kb_manifest_free(m);
    kb_ctx_free(ctx);
}

Test(manifest, public_api_lists_targets_and_exports)
{
    kb_ctx *ctx = kbt_ctx();
    char *dir = kbt_data("manifests/good/full");
    kb_manifest *m = NULL;
    cr_assert_eq(kb_manifest_open(&m, ctx, dir), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_expect_str_eq(kb_manifest_name(m), "radeonflow/gemm");
    cr_expect_str_eq(kb_manifest_version(m), "1.0.0");
    cr_expect_eq(kb_manifest_export_count(m), 3);
    cr_expect_str_eq(kb_manifest_export(m, 0), "rf_gemm_bf16");
    cr_expect_null(kb_manifest_export(m, 3));
    static const char *want[][2] = {
        {"cuda", "sm_80"},   {"cuda", "sm_86"},      {"cuda", "sm_89"},
        {"cuda", "sm_90"},   {"cuda", "compute_80"}, {"rocm", "gfx1030"},
        {"rocm", "gfx1100"}, {"metal", "apple"},     {"cpu", ""}};
    size_t n = sizeof(want) / sizeof(want[0]);
    for (size_t i = 0; i < n; i++) {
        const char *backend = NULL, *arch = NULL;
        cr_assert_eq(kb_manifest_target(&backend, &arch, m, i), 0, "target %zu", i);
        cr_expect_str_eq(backend, want[i][0], "target %zu", i);
        cr_expect_str_eq(arch, want[i][1], "target %zu", i);
    }
    cr_expect_eq(kb_manifest_target(NULL, NULL, m, n), KB_ERR_NOT_FOUND);
    kb_manifest_free(m);
    free(dir);
    kb_ctx_free(ctx);
}

/* With check_files, a missing source is an error at the source's position. */
Test(manifest, missing_files_point_at_their_value)
{
    kb_ctx *ctx = kbt_ctx();
    char *tmp = kbt_mkdtemp();
    char *yaml = kbi_path_join(tmp, "kernel.yaml");
    kbt_write(yaml, "name: a/b\nversion: 1.0.0\nabi: 1\nheader: b.h\nexports: [b]\n"
                    "backends:\n  cpu:\n    sources:\n      - src/b.c\n      - src/gone.c\n");
    char *header = kbi_path_join(tmp, "b.h"), *src = kbi_path_join(tmp, "src/b.c");
    kb_manifest *m = NULL;
    cr_expect_eq(kbi_manifest_load(ctx, &m, tmp, true), KB_ERR_MANIFEST);
    const kb_error *e = kb_ctx_last_error(ctx);
    cr_expect_eq(e->line, 4);
    cr_expect_eq(e->column, 9);
    cr_expect(strstr(e->message, "header: 'b.h' does not exist"), "%s", e->message);
    kbt_write(header, "");
    kbt_write(src, "");
    cr_expect_eq(kbi_manifest_load(ctx, &m, tmp, true), KB_ERR_MANIFEST);
    cr_expect_eq(e->line, 10);
    cr_expect_eq(e->column, 9);
    cr_expect(strstr(e->message, "backends.cpu.sources[1]: 'src/gone.c' does not exist"), "%s",
              e->message);
    cr_expect_null(m);
    cr_expect_eq(kbi_manifest_load(ctx, &m, tmp, false), 0, "without check_files it loads");
    kb_manifest_free(m);
    kbt_rmtree(tmp);
    free(header);
    free(src);
    free(yaml);
    free(tmp);
    kb_ctx_free(ctx);
}

Test(manifest, missing_file_is_not_found_naming_the_path)
{
    kb_ctx *ctx = kbt_ctx();
    kb_manifest *m = NULL;
    cr_expect_eq(kbi_manifest_load(ctx, &m, "/nonexistent/kernel.yaml", true), KB_ERR_NOT_FOUND);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->path, "/nonexistent/kernel.yaml");
    kb_ctx_free(ctx);
}

Test(manifest, parse_from_memory_names_the_given_file)
{
    kb_ctx *ctx = kbt_ctx();
    const char *text = "name: a/b\nversion: 1.0.0\nabi: 1\nheader: b.h\nexports: [b]\n"
                       "backends: {metal: {sources: [k.metal], flags: [-O2]}}\nextra: 1\n";
    kb_manifest *m = NULL;
    cr_expect_eq(kbi_manifest_parse(ctx, &m, "mem.yaml", text, strlen(text)), KB_ERR_MANIFEST);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message,
                     "mem.yaml:7:1: unknown key 'extra' (expected one of: name, version, summary, "
                     "license, abi, header, exports, backends, test, bench, includes, defines, "
                     "files, dependencies, requires)");
    cr_expect_eq(kbi_manifest_parse(ctx, &m, "mem.yaml", text, strlen(text) - 9), 0);
    cr_expect_str_eq(m->backends[KB_BACKEND_METAL].flags.items[0], "-O2");
    kb_manifest_free(m);
    kb_ctx_free(ctx);
}
