/* Real kernels as their authors write them (issue 13): the fixture packages of
 * tests/data/kernels/ built end to end, and one regression test per bug the trial hit. */
#include "kbtest.h"

#include "builder/builder.h"
#include "manifests/manifest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

static char *sh_out(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    kb_buf b = KB_BUF_INIT;
    char chunk[4096];
    size_t n;
    while (p && (n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        kbi_buf_append(&b, chunk, n);
    if (p)
        pclose(p);
    kbi_buf_append(&b, "", 1);
    return kbi_buf_detach(&b);
}

static int sh(const char *fmt, ...) KB_PRINTF(1, 2);
static int sh(const char *fmt, ...)
{
    kb_buf b = KB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    kbi_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    int rc = system(b.data);
    kbi_buf_free(&b);
    return rc;
}

/* A copy of tests/data/kernels/<name> in tmp. */
static char *fixture(const char *tmp, const char *name)
{
    char *src = kbt_data("kernels");
    char *dst = kbi_asprintf("%s/%s", tmp, name);
    cr_assert_eq(sh("cp -r '%s/%s' '%s'", src, name, dst), 0);
    free(src);
    return dst;
}

typedef struct warn_log {
    kb_buf text;
} warn_log;

static void on_log(kb_log_level level, const char *message, void *payload)
{
    warn_log *w = payload;
    if (level == KB_LOG_WARN)
        kbi_buf_printf(&w->text, "%s\n", message);
}

/* A ctx whose cache lives in tmp; warnings collected in w (may be NULL). */
static kb_ctx *ctx_in(const char *tmp, warn_log *w)
{
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    o.no_config_files = 1;
    if (w) {
        o.log = on_log;
        o.payload = w;
        o.log_level = KB_LOG_WARN;
    }
    kb_ctx *ctx = NULL;
    cr_assert_eq(kb_ctx_new(&ctx, &o), 0);
    char *cache = kbi_asprintf("%s/cache", tmp);
    cr_assert_eq(kb_ctx_set(ctx, "cache.dir", cache), 0);
    free(cache);
    return ctx;
}

static kb_build_result *build(kb_ctx *ctx, const char *dir, const char *tmp, const char *filter)
{
    const char *filters[] = {filter};
    kb_build_options o = KB_BUILD_OPTIONS_INIT;
    o.targets = filters;
    o.target_count = 1;
    o.jobs = 1;
    char *out = kbi_asprintf("%s/out", tmp), *work = kbi_asprintf("%s/work", tmp);
    o.out_dir = out;
    o.work_dir = work;
    kb_build_result *r = NULL;
    cr_assert_eq(kb_build(&r, ctx, dir, &o), 0, "%s", kb_ctx_last_error(ctx)->message);
    free(out);
    free(work);
    return r;
}

static const kb_build_target_result *built_one(const kb_build_result *r)
{
    cr_assert_eq(r->count, 1);
    cr_assert_eq(r->targets[0].status, KB_BUILD_BUILT, "%s", r->targets[0].message);
    return &r->targets[0];
}

static void unpack(const char *artifact, const char *into)
{
    cr_assert_eq(sh("mkdir -p '%s' && tar -C '%s' -xf '%s'", into, into, artifact), 0);
}

static void write_pkg(const char *dir, const char *yaml, const char *src_name, const char *src)
{
    char *p = kbi_asprintf("%s/kernel.yaml", dir);
    kbt_write(p, yaml);
    free(p);
    p = kbi_asprintf("%s/%s", dir, src_name);
    kbt_write(p, src);
    free(p);
    p = kbi_asprintf("%s/include/t.h", dir);
    kbt_write(p, "#include <stdint.h>\nint t_f32(float *o, const float *x, int64_t n, void *s);\n");
    free(p);
    p = kbi_asprintf("%s/LICENSE", dir);
    kbt_write(p, "MIT\n");
    free(p);
}

#define TINY_YAML(sources, extra)                                                                  \
    "name: rk/tiny\nversion: 0.1.0\nabi: 1\nheader: include/t.h\nexports: [t_f32]\n" extra         \
    "backends:\n  cpu:\n    sources: " sources "\n"

#define TINY_INFO                                                                                  \
    "__attribute__((visibility(\"default\"))) const void *kbpkg_kernel_info(void);\n"              \
    "static const int info = 1;\n"                                                                 \
    "const void *kbpkg_kernel_info(void) { return &info; }\n"

/* ---- bug 1: libraries after the sources ---- */

Test(real_kernels, cpu_library_needs_libm_and_loads_in_a_clean_process)
{
    char *tmp = kbt_mkdtemp();
    char *dir = kbi_asprintf("%s/tiny", tmp);
    write_pkg(dir, TINY_YAML("[src/t.c]", ""), "src/t.c",
              "#include <math.h>\n#include <stdint.h>\n" TINY_INFO
              "__attribute__((visibility(\"default\"))) int t_f32(float *o, const float *x, "
              "int64_t n, void *s)\n{ (void)s; for (int64_t i = 0; i < n; i++) o[i] = "
              "tanhf(x[i]); return 0; }\n");
    kb_ctx *ctx = ctx_in(tmp, NULL);
    kb_build_result *r = build(ctx, dir, tmp, "cpu-x86_64_v2");
    const kb_build_target_result *t = built_one(r);
    char *x = kbi_asprintf("%s/x", tmp);
    unpack(t->artifact, x);
    char *cmd = kbi_asprintf("readelf -d '%s/lib/libtiny.so'", x);
    char *dyn = sh_out(cmd);
    cr_expect(strstr(dyn, "libm.so"), "NEEDED libm missing (-lm before the sources):\n%s", dyn);
    free(dyn);
    free(cmd);
    kb_build_result_free(r);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(x);
    free(dir);
    free(tmp);
}

Test(real_kernels, load_check_names_the_undefined_symbol)
{
    char *tmp = kbt_mkdtemp();
    char *src = kbi_asprintf("%s/a.c", tmp), *lib = kbi_asprintf("%s/liba.so", tmp);
    kbt_write(src, "#include <math.h>\nfloat f(float x) { return tanhf(x); }\n");
    /* what the old builder did: -lm before the source, so nothing records libm */
    cr_assert_eq(sh("cc -O2 -fPIC -shared -Wl,--as-needed -lm '%s' -o '%s'", src, lib), 0);
    kb_ctx *ctx = kbt_ctx();
    kb_plan_item item = {.target = "cpu-x86_64_v2-x86_64-linux", .backend = KB_BACKEND_CPU};
    cr_expect_eq(kbi_verify_loads(ctx, lib, &item, NULL), KB_ERR_BUILD);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "undefined symbol tanhf"), "%s",
              kb_ctx_last_error(ctx)->message);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(src);
    free(lib);
    free(tmp);
}

/* ---- bug 2: C++ sources ---- */

Test(real_kernels, cxx_cpu_package_links_the_cxx_runtime)
{
    char *tmp = kbt_mkdtemp();
    char *dir = fixture(tmp, "cppact");
    kb_ctx *ctx = ctx_in(tmp, NULL);
    kb_build_result *r = build(ctx, dir, tmp, "cpu-x86_64_v2");
    const kb_build_target_result *t = built_one(r);
    char *x = kbi_asprintf("%s/x", tmp);
    unpack(t->artifact, x);
    char *cmd = kbi_asprintf("readelf -d '%s/lib/libcppact.so'", x);
    char *dyn = sh_out(cmd);
    cr_expect(strstr(dyn, "libstdc++.so"), "NEEDED libstdc++ missing:\n%s", dyn);
    free(dyn);
    free(cmd);
    char *json = kbi_asprintf("%s/kbpkg.json", x);
    kb_buf j = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(ctx, json, &j), 0);
    cr_expect(strstr(j.data, "\"src/act.cpp:-std=c++17\""), "per-source flag recorded:\n%s",
              j.data);
    cr_expect(strstr(j.data, "\"-DRK_ACT_VEC=4\""), "top-level define recorded");
    kbi_buf_free(&j);
    free(json);
    /* bug 3: the installed include/ alone compiles a consumer (the ABI header ships) */
    char *consumer = kbi_asprintf("%s/consumer.c", tmp);
    kbt_write(consumer, "#include \"rk_act.h\"\nint main(void) { kbpkg_e4m3fnuz q = 0x80; "
                        "float o[1], i[2] = {1, 2};\n"
                        "return rk_silu_and_mul_f32(o, i, 1, 1, 0) + (int)q - 0x80; }\n");
    cmd = kbi_asprintf("cc -std=c99 -Wall -Werror -I'%s/include' '%s' -L'%s/lib' -lcppact "
                       "-Wl,-rpath,'%s/lib' -o '%s/consumer' && '%s/consumer'",
                       x, consumer, x, x, tmp, tmp);
    cr_expect_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
    free(consumer);
    kb_build_result_free(r);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(x);
    free(dir);
    free(tmp);
}

/* ---- bug 5: the source artifact an install accepts, and that rebuilds ---- */

Test(real_kernels, source_outside_the_layout_is_refused_at_build)
{
    char *tmp = kbt_mkdtemp();
    char *dir = kbi_asprintf("%s/tiny", tmp);
    write_pkg(dir, TINY_YAML("[gemm/t.c]", ""), "gemm/t.c", TINY_INFO "int t_f32(void);\n");
    kb_ctx *ctx = ctx_in(tmp, NULL);
    const char *filters[] = {"cpu-x86_64_v2"};
    kb_build_options o = KB_BUILD_OPTIONS_INIT;
    o.targets = filters;
    o.target_count = 1;
    kb_build_result *r = NULL;
    cr_expect_eq(kb_build(&r, ctx, dir, &o), KB_ERR_MANIFEST);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "names gemm/t.c, outside the layout"), "%s",
              kb_ctx_last_error(ctx)->message);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "kernel.yaml"), "blames the manifest");
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(dir);
    free(tmp);
}

Test(real_kernels, a_header_the_source_artifact_leaves_out_fails_the_build)
{
    char *tmp = kbt_mkdtemp();
    char *dir = kbi_asprintf("%s/tiny", tmp);
    write_pkg(dir, TINY_YAML("[src/t.c]", ""), "src/t.c",
              "#include \"../notes/extra.h\"\n" TINY_INFO
              "__attribute__((visibility(\"default\"))) int t_f32(void) { return EXTRA; }\n");
    char *h = kbi_asprintf("%s/notes/extra.h", dir);
    kbt_write(h, "#define EXTRA 0\n");
    char *sib = kbi_asprintf("%s/sibling.h", tmp);
    kbt_write(sib, "#define SIB 0\n");
    kb_ctx *ctx = ctx_in(tmp, NULL);
    kb_build_result *r = build(ctx, dir, tmp, "cpu-x86_64_v2");
    cr_assert_eq(r->targets[0].status, KB_BUILD_FAILED);
    cr_expect(strstr(r->targets[0].message, "t.c reads notes/extra.h, which the source artifact "
                                            "leaves out"),
              "%s", r->targets[0].message);
    kb_build_result_free(r);
    /* a header beside the package (../sibling.h): the artifact cannot carry it */
    char *src = kbi_asprintf("%s/src/t.c", dir);
    kbt_write(src, "#include \"../../sibling.h\"\n" TINY_INFO
                   "__attribute__((visibility(\"default\"))) int t_f32(void) { return SIB; }\n");
    r = build(ctx, dir, tmp, "cpu-x86_64_v2");
    cr_assert_eq(r->targets[0].status, KB_BUILD_FAILED);
    cr_expect(strstr(r->targets[0].message, "outside the package folder"), "%s",
              r->targets[0].message);
    kb_build_result_free(r);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(src);
    free(sib);
    free(h);
    free(dir);
    free(tmp);
}

/* ---- bug 7: nothing built is a failure ---- */

Test(real_kernels, build_exits_1_when_nothing_was_built)
{
    char *tmp = kbt_mkdtemp();
    char *dir = fixture(tmp, "cppact");
    char *yaml = kbi_asprintf("%s/kernel.yaml", dir);
    kb_buf y = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, yaml, &y), 0);
    char *more = kbi_asprintf("%srequires:\n  cpu: {min: \"999\"}\n", y.data);
    kbt_write(yaml, more);
    char *cache = kbi_asprintf("KBPKG_CACHE=%s/cache", tmp);
    const char *env[] = {cache, NULL};
    const char *args[] = {"build", dir, "--target", "cpu-x86_64_v2", NULL};
    kbt_run run = kbt_kbpkg(env, args);
    cr_expect_eq(run.exit_code, 1, "out: %s\nerr: %s", run.out, run.err);
    cr_expect(strstr(run.out, "requires cpu >= 999"), "%s", run.out);
    cr_expect(strstr(run.err, "no target was built"), "%s", run.err);
    kbt_run_free(&run);
    kbi_buf_free(&y);
    kbt_rmtree(tmp);
    free(more);
    free(yaml);
    free(cache);
    free(dir);
    free(tmp);
}

/* ---- bug 8: the linker's cause, not collect2's summary ---- */

Test(real_kernels, link_errors_keep_the_cause)
{
    const char *ld =
        "/usr/bin/ld: obj/01-b.c.o: in function `t_f32':\n"
        "b.c:(.text+0x0): multiple definition of `t_f32'; obj/00-a.c.o:a.c:(.text+0x0): "
        "first defined here\n"
        "collect2: error: ld returned 1 exit status\n";
    char *trim = kbi_trim_compiler_output(ld, 20);
    cr_expect(strstr(trim, "multiple definition of `t_f32'"), "%s", trim);
    free(trim);
    char *tmp = kbt_mkdtemp();
    char *dir = kbi_asprintf("%s/tiny", tmp);
    write_pkg(dir, TINY_YAML("[src/a.c, src/b.c]", ""), "src/a.c",
              TINY_INFO "__attribute__((visibility(\"default\"))) int t_f32(void) { return 0; }\n");
    char *b = kbi_asprintf("%s/src/b.c", dir);
    kbt_write(b, "int t_f32(void) { return 1; }\n");
    kb_ctx *ctx = ctx_in(tmp, NULL);
    kb_build_result *r = build(ctx, dir, tmp, "cpu-x86_64_v2");
    cr_assert_eq(r->targets[0].status, KB_BUILD_FAILED);
    cr_expect(strstr(r->targets[0].message, "multiple definition of `t_f32'"), "%s",
              r->targets[0].message);
    kb_build_result_free(r);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(b);
    free(dir);
    free(tmp);
}

/* ---- bug 9 ---- */

Test(real_kernels, package_test_sees_kbpkg_name_and_the_backend_flags)
{
    char *tmp = kbt_mkdtemp();
    char *dir = fixture(tmp, "cppact");
    kb_ctx *ctx = ctx_in(tmp, NULL);
    const char *filters[] = {"cpu-x86_64_v2"};
    kb_test_result *r = NULL;
    cr_assert_eq(kb_package_test(&r, ctx, dir, filters, 1), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_assert_eq(r->count, 1);
    cr_expect_eq(r->targets[0].status, KB_BUILD_BUILT, "%s", r->targets[0].message);
    cr_expect(r->targets[0].output && strstr(r->targets[0].output, "check: ok"));
    kb_test_result_free(r);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(dir);
    free(tmp);
}

Test(real_kernels, backend_names_alone_filter_targets)
{
    cr_expect(kbi_target_matches("rocm5-gfx1030-x86_64-linux", "rocm"));
    cr_expect(kbi_target_matches("rocm6-gfx942-x86_64-linux", "rocm"));
    cr_expect(kbi_target_matches("cuda13-sm_90-x86_64-linux", "cuda"));
    cr_expect(kbi_target_matches("cuda13-sm_90-x86_64-linux", "cuda13"));
    cr_expect_not(kbi_target_matches("cuda13-sm_90-x86_64-linux", "rocm"));
    cr_expect_not(kbi_target_matches("cuda13-sm_90-x86_64-linux", "cud"));
}

static int parse(kb_ctx *ctx, kb_manifest **m, const char *text)
{
    return kbi_manifest_parse(ctx, m, "k.yaml", text, strlen(text));
}

Test(real_kernels, unportable_flags_and_typos_are_manifest_errors)
{
    kb_ctx *ctx = kbt_ctx();
    kb_manifest *m = NULL;
    static const struct {
        const char *yaml;
        const char *want;
    } cases[] = {
        {TINY_YAML("[src/t.c]\n    flags: [-I/home/me/cutlass/include]", ""),
         "k.yaml:9:13: backends.cpu.flags[0]: '-I/home/me/cutlass/include': an absolute path"},
        {TINY_YAML("[src/t.c]\n    flags: [-isystem, /opt/x]", ""), "an absolute path"},
        {TINY_YAML("[src/t.c]\n    flags: [-I../common]", ""), "outside the package"},
        {TINY_YAML("[src/t.c]\n    archs: [x86_64_v2]\n    arch_flags: {x86_64_v4: [-DX]}", ""),
         "'x86_64_v4' matches none of the declared archs"},
        {TINY_YAML("[src/t.c]\n    exports: [\"g_*\"]", ""),
         "backends.cpu.exports: 'g_*' matches none of the top-level exports"},
        {TINY_YAML("[src/t.c]", "defines: [\"1X=2\"]\n"), "is not NAME or NAME=VALUE"},
        {TINY_YAML("[src/t.c]", "requires: {cuda: {min: \"twelve\"}}\n"),
         "'twelve' is not a version"},
        {TINY_YAML("[src/t.c]",
                   "dependencies: [{name: x, url: ftp://h/x.tgz, sha256: "
                   "0000000000000000000000000000000000000000000000000000000000000000}]\n"),
         "is not an https://, http:// or file:// URL"},
    };
    for (size_t i = 0; i < KB_ARRAY_LEN(cases); i++) {
        cr_expect_eq(parse(ctx, &m, cases[i].yaml), KB_ERR_MANIFEST, "case %zu", i);
        cr_expect(strstr(kb_ctx_last_error(ctx)->message, cases[i].want), "case %zu: %s", i,
                  kb_ctx_last_error(ctx)->message);
        cr_expect_null(m);
    }
    kb_ctx_free(ctx);
}

Test(real_kernels, no_license_warns_and_stray_mangled_export_fails)
{
    char *tmp = kbt_mkdtemp();
    char *dir = kbi_asprintf("%s/tiny", tmp);
    write_pkg(dir, TINY_YAML("[src/t.cpp]", ""), "src/t.cpp",
              "#include <stdint.h>\nextern \"C\" {\n" TINY_INFO
              "__attribute__((visibility(\"default\"))) int t_f32(float *, const float *, int64_t, "
              "void *) { return 0; }\n}\n"
              "__attribute__((visibility(\"default\"))) int t_helper(int x) { return x; }\n");
    char *lic = kbi_asprintf("%s/LICENSE", dir);
    remove(lic);
    warn_log w = {KB_BUF_INIT};
    kb_ctx *ctx = ctx_in(tmp, &w);
    kb_build_result *r = build(ctx, dir, tmp, "cpu-x86_64_v2");
    cr_expect(w.text.data && strstr(w.text.data, "has no LICENSE"), "%s",
              w.text.data ? w.text.data : "(no warning)");
    cr_assert_eq(r->targets[0].status, KB_BUILD_FAILED);
    cr_expect(strstr(r->targets[0].message, "exports the C++-mangled symbol _Z8t_helperi"), "%s",
              r->targets[0].message);
    kb_build_result_free(r);
    kb_ctx_free(ctx);
    kbi_buf_free(&w.text);
    kbt_rmtree(tmp);
    free(lic);
    free(dir);
    free(tmp);
}

Test(real_kernels, exit_import_is_a_warning)
{
    char *tmp = kbt_mkdtemp();
    char *dir = kbi_asprintf("%s/tiny", tmp);
    write_pkg(dir, TINY_YAML("[src/t.c]", ""), "src/t.c",
              "#include <stdint.h>\n#include <stdlib.h>\n" TINY_INFO
              "__attribute__((visibility(\"default\"))) int t_f32(float *o, const float *x, "
              "int64_t n, void *s) { if (n < 0) exit(1); (void)o; (void)x; (void)s; return 0; }\n");
    warn_log w = {KB_BUF_INIT};
    kb_ctx *ctx = ctx_in(tmp, &w);
    kb_build_result *r = build(ctx, dir, tmp, "cpu-x86_64_v2");
    built_one(r);
    cr_expect(w.text.data && strstr(w.text.data, "imports exit()"), "%s",
              w.text.data ? w.text.data : "(no warning)");
    kb_build_result_free(r);
    kb_ctx_free(ctx);
    kbi_buf_free(&w.text);
    kbt_rmtree(tmp);
    free(dir);
    free(tmp);
}

Test(real_kernels, scaffold_declares_backend_as_the_abi_int)
{
    char *tmp = kbt_mkdtemp();
    char *dir = kbi_asprintf("%s/newpkg", tmp);
    const char *args[] = {"new", "acme/newpkg", dir, NULL};
    kbt_run run = kbt_kbpkg(NULL, args);
    cr_assert_eq(run.exit_code, 0, "%s", run.err);
    kbt_run_free(&run);
    /* the scaffold uses the ABI header's struct (int backend) instead of declaring its own */
    char *cmd = kbi_asprintf("cat '%s'/include/*.h '%s'/src/*", dir, dir);
    char *out = sh_out(cmd);
    cr_expect(strstr(out, "#include <kbpkg/kernel_abi.h>"), "%s", out);
    cr_expect_not(strstr(out, "const char *backend"), "%s", out);
    free(out);
    free(cmd);
    kbt_rmtree(tmp);
    free(dir);
    free(tmp);
}

/* ---- features: dependencies by url + sha256, per-backend exports, arch-family flags ---- */

/* The layernorm fixture with its dependency packed as `format` (tar.gz or zip) and served by a
 * file:// URL; kernel.yaml written from kernel.yaml.in. */
static char *layernorm(const char *tmp, const char *format)
{
    char *dir = fixture(tmp, "layernorm");
    char *data = kbt_data("kernels");
    char *archive = kbi_asprintf("%s/rkmath-1.0.%s", tmp, format);
    if (strcmp(format, "zip") == 0)
        cr_assert_eq(sh("cd '%s' && python3 -c \"import zipfile,sys; z=zipfile.ZipFile(sys.argv[1],"
                        "'w'); z.write('rkmath-1.0/include/rkmath/reduce.h'); z.close()\" '%s'",
                        data, archive),
                     0);
    else
        cr_assert_eq(sh("tar -C '%s' -czf '%s' rkmath-1.0", data, archive), 0);
    char *cmd = kbi_asprintf("sha256sum '%s' | cut -c1-64", archive);
    char *sha = sh_out(cmd);
    sha[64] = '\0';
    cr_assert_eq(sh("sed -e 's|@URL@|file://%s|' -e 's|@SHA256@|%s|' '%s/kernel.yaml.in' > "
                    "'%s/kernel.yaml'",
                    archive, sha, dir, dir),
                 0);
    free(sha);
    free(cmd);
    free(archive);
    free(data);
    return dir;
}

Test(real_kernels, dependency_archive_is_fetched_verified_and_used_offline)
{
    static const char *const formats[] = {"tar.gz", "zip"};
    for (size_t f = 0; f < KB_ARRAY_LEN(formats); f++) {
        char *tmp = kbt_mkdtemp();
        char *dir = layernorm(tmp, formats[f]);
        kb_ctx *ctx = ctx_in(tmp, NULL);
        /* before the fetch: the build names what is missing and how to get it */
        kb_build_result *r = build(ctx, dir, tmp, "cpu-x86_64_v2");
        cr_assert_eq(r->targets[0].status, KB_BUILD_FAILED);
        cr_expect(strstr(r->targets[0].message, "dependency rkmath"), "%s", r->targets[0].message);
        cr_expect(strstr(r->targets[0].message, "kbpkg fetch"), "%s", r->targets[0].message);
        kb_build_result_free(r);
        size_t n = 0;
        cr_assert_eq(kb_fetch_inputs(&n, ctx, dir), 0, "%s", kb_ctx_last_error(ctx)->message);
        cr_expect_eq(n, 1);
        /* offline with the cache holding it: nothing to download */
        cr_assert_eq(kb_ctx_set(ctx, "offline", "true"), 0);
        cr_assert_eq(kb_fetch_inputs(&n, ctx, dir), 0, "%s", kb_ctx_last_error(ctx)->message);
        cr_expect_eq(n, 0);
        r = build(ctx, dir, tmp, "cpu-x86_64_v2");
        const kb_build_target_result *t = built_one(r);
        char *x = kbi_asprintf("%s/x", tmp);
        unpack(t->artifact, x);
        char *json = kbi_asprintf("%s/kbpkg.json", x);
        kb_buf j = KB_BUF_INIT;
        cr_assert_eq(kbi_read_file(ctx, json, &j), 0);
        cr_expect(strstr(j.data, "\"rk_layernorm_f32\""), "%s", j.data);
        cr_expect_not(strstr(j.data, "rk_layernorm_f16"), "the CPU backend exports f32 only");
        cr_expect(strstr(j.data, "\"-I@deps/rkmath/rkmath-1.0/include\""),
                  "no cache path in the flags:\n%s", j.data);
        cr_expect_not(strstr(j.data, tmp), "no absolute path in kbpkg.json");
        kbi_buf_free(&j);
        free(json);
        free(x);
        kb_build_result_free(r);
        kb_ctx_free(ctx);
        kbt_rmtree(tmp);
        free(dir);
        free(tmp);
    }
}

Test(real_kernels, dependency_with_a_wrong_digest_is_refused_and_not_kept)
{
    char *tmp = kbt_mkdtemp();
    char *dir = layernorm(tmp, "tar.gz");
    cr_assert_eq(sh("sed -i 's|sha256: \"[0-9a-f]*\"|sha256: \"%064d\"|' '%s/kernel.yaml'", 0, dir),
                 0);
    kb_ctx *ctx = ctx_in(tmp, NULL);
    cr_expect_eq(kb_fetch_inputs(NULL, ctx, dir), KB_ERR_DIGEST);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "sha256 mismatch for file://"), "%s",
              kb_ctx_last_error(ctx)->message);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "dependency rkmath"), "%s",
              kb_ctx_last_error(ctx)->message);
    char *cmd = kbi_asprintf("ls -A '%s/cache/deps'", tmp);
    char *left = sh_out(cmd);
    cr_expect_str_eq(left, "", "nothing kept: %s", left);
    free(left);
    free(cmd);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(dir);
    free(tmp);
}

Test(real_kernels, two_precisions_from_one_cuda_source_and_per_arch_flags)
{
    char *tmp = kbt_mkdtemp();
    char *dir = layernorm(tmp, "tar.gz");
    kb_ctx *ctx = ctx_in(tmp, NULL);
    kb_manifest *m = NULL;
    cr_assert_eq(kbi_manifest_load(ctx, &m, dir, true), 0, "%s", kb_ctx_last_error(ctx)->message);
    kb_plan_item it = {
        .target = "cuda13-sm_90-x86_64-linux", .backend = KB_BACKEND_CUDA, .arch = "sm_90"};
    kb_strv f = KB_STRV_INIT;
    cr_assert_eq(kbi_compile_flags(m, &it, &f), 0);
    cr_expect(kbi_strv_contains(&f, "-DLN_HOPPER=1"));
    cr_expect(kbi_strv_contains(&f, "-DLN_BLOCK=256"));
    cr_expect(kbi_strv_contains(&f, "src/layernorm.cu:-DLN_T=float"));
    cr_expect(kbi_strv_contains(&f, "src/layernorm.cu:-DLN_T=__half"));
    kbi_strv_free(&f);
    snprintf(it.arch, sizeof(it.arch), "sm_80");
    cr_assert_eq(kbi_compile_flags(m, &it, &f), 0);
    cr_expect_not(kbi_strv_contains(&f, "-DLN_HOPPER=1"), "sm_90's flag stays off sm_80");
    kbi_strv_free(&f);
    /* nvcc here: the two objects link into one library exporting both precisions */
    char *nvcc = NULL;
    if (kbi_which(&nvcc, "nvcc") == 0 || kbi_path_exists("/usr/local/cuda/bin/nvcc")) {
        cr_assert_eq(kb_fetch_inputs(NULL, ctx, dir), 0, "%s", kb_ctx_last_error(ctx)->message);
        kb_build_result *r = build(ctx, dir, tmp, "cuda13-sm_80");
        if (r->targets[0].status != KB_BUILD_SKIPPED) {
            cr_expect_eq(r->targets[0].status, KB_BUILD_BUILT, "%s", r->targets[0].message);
        }
        kb_build_result_free(r);
    }
    free(nvcc);
    kb_manifest_free(m);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(dir);
    free(tmp);
}

Test(real_kernels, hip_arch_family_define_and_toolchain_requirement)
{
    char *tmp = kbt_mkdtemp();
    char *dir = fixture(tmp, "fp8gemm");
    kb_ctx *ctx = ctx_in(tmp, NULL);
    kb_manifest *m = NULL;
    cr_assert_eq(kbi_manifest_load(ctx, &m, dir, true), 0, "%s", kb_ctx_last_error(ctx)->message);
    kb_plan_item it = {
        .target = "rocm6-gfx942-x86_64-linux", .backend = KB_BACKEND_ROCM, .arch = "gfx942"};
    kb_strv f = KB_STRV_INIT;
    cr_assert_eq(kbi_compile_flags(m, &it, &f), 0);
    cr_expect(kbi_strv_contains(&f, "-DRK_CDNA3=1"));
    cr_expect_not(kbi_strv_contains(&f, "-DRK_RDNA3=1"));
    kbi_strv_free(&f);
    kb_strv ex = KB_STRV_INIT;
    cr_assert_eq(kbi_manifest_backend_exports(m, KB_BACKEND_ROCM, &ex), 0);
    cr_expect_eq(ex.len, 3);
    kbi_strv_free(&ex);
    cr_assert_eq(kbi_manifest_backend_exports(m, KB_BACKEND_CPU, &ex), 0);
    cr_expect_eq(ex.len, 1);
    cr_expect_str_eq(ex.items[0], "rk_gemm_f32");
    kbi_strv_free(&ex);
    /* a hipcc older than the required 6.0 skips with the reason */
    kb_toolchains tcs;
    memset(&tcs, 0, sizeof(tcs));
    kb_toolchain *hip = &tcs.tc[KB_BACKEND_ROCM];
    hip->backend = KB_BACKEND_ROCM;
    hip->name = "hipcc";
    hip->found = true;
    hip->version = kbi_strdup("5.2.21153");
    kbi_strv_push(&hip->archs, "gfx942");
    kbi_strv_push(&hip->archs, "gfx1100");
    kb_plan_host host = {"x86_64", "linux", "x86_64_v2"};
    const char *filters[] = {"rocm"};
    kb_plan plan;
    cr_assert_eq(kbi_plan_make(ctx, &plan, m, &tcs, &host, filters, 1), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_assert_eq(plan.count, 2);
    cr_expect(plan.items[0].skip && strstr(plan.items[0].skip, "requires rocm >= 6.0; hipcc here "
                                                               "is 5.2.21153"),
              "%s", plan.items[0].skip ? plan.items[0].skip : "(built)");
    kbi_plan_free(&plan);
    free(hip->version);
    kbi_strv_free(&hip->archs);
    /* the CPU build exports the reference alone */
    kb_build_result *r = build(ctx, dir, tmp, "cpu-x86_64_v2");
    built_one(r);
    kb_build_result_free(r);
    kb_manifest_free(m);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(dir);
    free(tmp);
}
