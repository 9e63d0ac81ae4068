/* Inspection: libraries built here with cc, g++, nvcc and hipcc, plus crafted bad containers. */
#include "kbtest.h"

#include "archive/archive.h"
#include "archive/inspect.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The tool's path, or NULL (PATH first, then a fixed fallback such as /usr/local/cuda/bin). */
static char *find_tool(const char *name, const char *fallback)
{
    char *path = NULL;
    if (kbi_which(&path, name) == 0)
        return path;
    if (fallback && access(fallback, X_OK) == 0)
        return kbi_strdup(fallback);
    return NULL;
}

/* Compile source (written to dir/name) with argv + "-o out src"; returns out, owned. */
static char *compile(const char *dir, const char *name, const char *source, const char *const *argv,
                     size_t argc, const char *out_name)
{
    char *src = kbi_path_join(dir, name), *out = kbi_path_join(dir, out_name);
    kbt_write(src, source);
    const char **full = calloc(argc + 4, sizeof(*full));
    for (size_t i = 0; i < argc; i++)
        full[i] = argv[i];
    full[argc] = "-o";
    full[argc + 1] = out;
    full[argc + 2] = src;
    kb_ctx *ctx = kbt_ctx();
    kb_proc_result res = {0};
    cr_assert_eq(kbi_proc_run(ctx, &res, full, dir, 300000), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_assert_eq(res.exit_code, 0, "%s failed:\n%s", argv[0], res.output.data);
    kbi_proc_result_free(&res);
    kb_ctx_free(ctx);
    free(full);
    free(src);
    return out;
}

static bool has_export(const kb_inspect *ins, const char *name)
{
    for (size_t i = 0; i < kb_inspect_export_count(ins); i++)
        if (strcmp(kb_inspect_export(ins, i), name) == 0)
            return true;
    return false;
}

static bool has_code(const kb_inspect *ins, kb_gpu_code_kind kind, const char *arch)
{
    for (size_t i = 0; i < kb_inspect_gpu_code_count(ins); i++) {
        const kb_gpu_code *c = kb_inspect_gpu_code(ins, i);
        if (c->kind == kind && strcmp(c->arch, arch) == 0)
            return true;
    }
    return false;
}

static const char c_library[] =
    "#include <string.h>\n"
    "#include <unistd.h>\n"
    "int kb_visible(void) { return (int)getpid(); }\n"
    "__attribute__((visibility(\"hidden\"))) int kb_hidden(void) { return 2; }\n"
    "static int kb_static(void) { return 3; }\n"
    "__attribute__((weak)) int kb_weak(void) { return kb_static() + kb_hidden(); }\n"
    "int kb_data = 7;\n";

static const char c_memcpy_library[] =
    "#include <string.h>\n"
    "void kb_copy(void *d, const void *s, volatile size_t n) { memcpy(d, s, n); }\n";

Test(inspect, c_library_exports_and_glibc_needs)
{
    char *cc = find_tool("cc", NULL);
    if (!cc)
        kbt_skip_missing("no C compiler (cc) in PATH");
    char *dir = kbt_mkdtemp();
    const char *argv[] = {cc, "-shared", "-fPIC", "-O1", "-fno-stack-protector"};
    char *so = compile(dir, "a.c", c_library, argv, KB_ARRAY_LEN(argv), "liba.so");
    char *so2 = compile(dir, "b.c", c_memcpy_library, argv, KB_ARRAY_LEN(argv), "libb.so");
    kb_ctx *ctx = kbt_ctx();
    kb_inspect *ins = NULL, *ins2 = NULL;
    cr_assert_eq(kb_inspect_file(&ins, ctx, so), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_expect_eq(kb_inspect_get_kind(ins), KB_INSPECT_ELF);
    cr_expect(has_export(ins, "kb_visible"));
    cr_expect(has_export(ins, "kb_weak"));
    cr_expect(has_export(ins, "kb_data"));
    cr_expect_not(has_export(ins, "kb_hidden"), "hidden symbols are not exports");
    cr_expect_not(has_export(ins, "kb_static"));
    cr_expect_not(has_export(ins, "getpid"), "undefined symbols are not exports");
    cr_expect_eq(kb_inspect_unique_count(ins), 0);
    cr_expect_eq(kb_inspect_gpu_code_count(ins), 0);
    cr_expect_str_eq(kb_inspect_glibcxx_needed(ins), "");
    cr_assert_eq(kb_inspect_file(&ins2, ctx, so2), 0);
#if defined(__x86_64__)
    /* x86-64 glibc: getpid@GLIBC_2.2.5 (the base version), memcpy@GLIBC_2.14 */
    cr_expect_str_eq(kb_inspect_glibc_needed(ins), "2.2.5");
    cr_expect_str_eq(kb_inspect_glibc_needed(ins2), "2.14");
#else
    cr_expect_neq(kb_inspect_glibc_needed(ins)[0], '\0');
#endif
    const char *required[] = {"kb_visible", "kb_data"};
    cr_expect_eq(kb_inspect_check_exports(ctx, ins, required, 2), 0);
    const char *missing[] = {"kb_visible", "kb_hidden"};
    cr_expect_eq(kb_inspect_check_exports(ctx, ins, missing, 2), KB_ERR_ABI);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "does not export 'kb_hidden'"), "%s",
              kb_ctx_last_error(ctx)->message);
    kb_inspect_free(ins);
    kb_inspect_free(ins2);
    kb_ctx_free(ctx);
    kbt_rmtree(dir);
    free(dir), free(so), free(so2), free(cc);
}

static const char cxx_library[] =
    "#include <string>\n"
    "inline int &kb_counter() { static int c = 0; return c; }\n"
    "extern \"C\" int kb_bump(const char *s) { std::string t(s); return ++kb_counter() + "
    "(int)t.size(); }\n";

Test(inspect, cxx_gnu_unique_is_found_and_refused)
{
    char *cxx = find_tool("g++", NULL);
    if (!cxx)
        kbt_skip_missing("no g++ in PATH: cannot build a library with STB_GNU_UNIQUE symbols");
    char *dir = kbt_mkdtemp();
    const char *argv[] = {cxx, "-shared", "-fPIC", "-O1"};
    char *so = compile(dir, "u.cc", cxx_library, argv, KB_ARRAY_LEN(argv), "libu.so");
    const char *argv_nu[] = {cxx, "-shared", "-fPIC", "-O1", "-fno-gnu-unique"};
    char *so_nu = compile(dir, "u.cc", cxx_library, argv_nu, KB_ARRAY_LEN(argv_nu), "libnu.so");
    kb_ctx *ctx = kbt_ctx();
    kb_inspect *ins = NULL, *ins_nu = NULL;
    cr_assert_eq(kb_inspect_file(&ins, ctx, so), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_assert_eq(kb_inspect_unique_count(ins), 1);
    cr_expect_str_eq(kb_inspect_unique(ins, 0), "_ZZ10kb_countervE1c");
    cr_expect_not(has_export(ins, "_ZZ10kb_countervE1c"), "unique symbols are listed apart");
    cr_expect(has_export(ins, "kb_bump"));
    cr_expect_eq(kbi_inspect_refuse_unique(ctx, ins), KB_ERR_ABI);
    cr_expect(
        strstr(kb_ctx_last_error(ctx)->message, "STB_GNU_UNIQUE symbol '_ZZ10kb_countervE1c'"));
    cr_expect(kbi_str_starts(kb_inspect_glibcxx_needed(ins), "3.4."), "GLIBCXX %s",
              kb_inspect_glibcxx_needed(ins));
    cr_assert_eq(kb_inspect_file(&ins_nu, ctx, so_nu), 0);
    cr_expect_eq(kb_inspect_unique_count(ins_nu), 0);
    cr_expect_eq(kbi_inspect_refuse_unique(ctx, ins_nu), 0);
    kb_inspect_free(ins);
    kb_inspect_free(ins_nu);
    kb_ctx_free(ctx);
    kbt_rmtree(dir);
    free(dir), free(so), free(so_nu), free(cxx);
}

static const char cuda_source[] =
    "__global__ void kb_add(float *a, const float *b, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += b[i]; }\n"
    "extern \"C\" int kb_launch(float *a, const float *b, int n) {\n"
    "  kb_add<<<(n + 255) / 256, 256>>>(a, b, n); return 0; }\n";

Test(inspect, nvcc_fatbin_lists_sass_and_ptx, .timeout = 600)
{
    char *nvcc = find_tool("nvcc", "/usr/local/cuda/bin/nvcc");
    if (!nvcc)
        cr_skip("nvcc not found (PATH, /usr/local/cuda/bin)");
    char *dir = kbt_mkdtemp();
    const char *argv[] = {nvcc,         "-shared",
                          "-Xcompiler", "-fPIC",
                          "-gencode",   "arch=compute_80,code=sm_80",
                          "-gencode",   "arch=compute_90,code=sm_90",
                          "-gencode",   "arch=compute_80,code=compute_80"};
    char *so = compile(dir, "k.cu", cuda_source, argv, KB_ARRAY_LEN(argv), "libk.so");
    kb_ctx *ctx = kbt_ctx();
    kb_inspect *ins = NULL;
    cr_assert_eq(kb_inspect_file(&ins, ctx, so), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_expect(has_code(ins, KB_GPU_CODE_SASS, "sm_80"));
    cr_expect(has_code(ins, KB_GPU_CODE_SASS, "sm_90"));
    cr_expect(has_code(ins, KB_GPU_CODE_PTX, "compute_80"));
    cr_expect_eq(kb_inspect_gpu_code_count(ins), 3, "exactly what -gencode asked for");
    cr_expect(has_export(ins, "kb_launch"));
    kb_inspect_free(ins);
    kb_ctx_free(ctx);
    kbt_rmtree(dir);
    free(dir), free(so), free(nvcc);
}

static const char hip_source[] =
    "#include <hip/hip_runtime.h>\n"
    "__global__ void kb_add(float *a, const float *b, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += b[i]; }\n"
    "extern \"C\" int kb_launch(float *a, const float *b, int n) {\n"
    "  hipLaunchKernelGGL(kb_add, dim3((n + 255) / 256), dim3(256), 0, 0, a, b, n);\n"
    "  return 0; }\n";

Test(inspect, hipcc_offload_bundle_lists_gfx_targets, .timeout = 600)
{
    char *hipcc = find_tool("hipcc", NULL);
    if (!hipcc)
        kbt_skip_missing("hipcc not found in PATH");
    char *dir = kbt_mkdtemp();
    const char *argv[] = {hipcc, "--offload-arch=gfx1030", "--offload-arch=gfx90a:xnack+",
                          "-shared", "-fPIC"};
    char *so = compile(dir, "k.hip", hip_source, argv, KB_ARRAY_LEN(argv), "libk.so");
    kb_ctx *ctx = kbt_ctx();
    kb_inspect *ins = NULL;
    cr_assert_eq(kb_inspect_file(&ins, ctx, so), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_expect(has_code(ins, KB_GPU_CODE_AMDGCN, "gfx1030"));
    cr_expect(has_code(ins, KB_GPU_CODE_AMDGCN, "gfx90a:xnack+"));
    cr_expect_eq(kb_inspect_gpu_code_count(ins), 2, "the host entry is not GPU code");
    bool triple_seen = false;
    for (size_t i = 0; i < kb_inspect_gpu_code_count(ins); i++)
        triple_seen |=
            strcmp(kb_inspect_gpu_code(ins, i)->detail, "hipv4-amdgcn-amd-amdhsa--gfx1030") == 0;
    cr_expect(triple_seen);
    kb_inspect_free(ins);
    kb_ctx_free(ctx);
    kbt_rmtree(dir);
    free(dir), free(so), free(hipcc);
}

/* ---- crafted containers: exact layout and the errors for broken ones ---- */

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* One container: header + two 64-byte entries with 8-byte payloads. */
static size_t make_fatbin(uint8_t *buf)
{
    memset(buf, 0, 176);
    put32(buf, KB_FATBIN_MAGIC);
    put16(buf + 4, 1);
    put16(buf + 6, 16);
    put64(buf + 8, 2 * (64 + 8));
    uint8_t *e = buf + 16;
    put16(e, 2);
    put32(e + 4, 64);
    put64(e + 8, 8);
    put32(e + 28, 90);
    put64(e + 40, 0x11 | KB_FATBIN_FLAG_ARCH_SPECIFIC);
    e += 72;
    put16(e, 1);
    put32(e + 4, 64);
    put64(e + 8, 8);
    put32(e + 28, 75);
    put64(e + 40, 0x11 | KB_FATBIN_FLAG_COMPRESSED_ZSTD);
    return 16 + 144;
}

Test(inspect, crafted_fatbin_layout)
{
    uint8_t buf[176];
    size_t len = make_fatbin(buf);
    kb_ctx *ctx = kbt_ctx();
    kb_inspect *ins = kbi_inspect_new(KB_INSPECT_ELF, "x");
    cr_assert_eq(kbi_fatbin_parse(ctx, ins, "x: .nv_fatbin", buf, len), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_assert_eq(kb_inspect_gpu_code_count(ins), 2);
    cr_expect_str_eq(kb_inspect_gpu_code(ins, 0)->arch, "sm_90a");
    cr_expect_eq(kb_inspect_gpu_code(ins, 0)->compressed, 0);
    cr_expect_str_eq(kb_inspect_gpu_code(ins, 1)->arch, "compute_75");
    cr_expect_eq(kb_inspect_gpu_code(ins, 1)->compressed, 1);
    /* broken: wrong magic, a header longer than the section, an entry past its container */
    buf[0] ^= 0xff;
    cr_expect_eq(kbi_fatbin_parse(ctx, ins, "x: .nv_fatbin", buf, len), KB_ERR_PARSE);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message,
                     "x: .nv_fatbin: malformed at offset 0x0: expected fatbin magic 0xBA55ED50, "
                     "got 0xBA55EDAF");
    buf[0] ^= 0xff;
    cr_expect_eq(kbi_fatbin_parse(ctx, ins, "x: .nv_fatbin", buf, len - 1), KB_ERR_PARSE);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "fatbin header says 16 + 144 bytes"));
    put64(buf + 16 + 8, 4096);
    cr_expect_eq(kbi_fatbin_parse(ctx, ins, "x: .nv_fatbin", buf, len), KB_ERR_PARSE);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "offset 0x10: fatbin entry says 64 + 4096"),
              "%s", kb_ctx_last_error(ctx)->message);
    kb_inspect_free(ins);
    kb_ctx_free(ctx);
}

Test(inspect, crafted_offload_bundle)
{
    uint8_t buf[256] = {0};
    memcpy(buf, "__CLANG_OFFLOAD_BUNDLE__", 24);
    put64(buf + 24, 2);
    const char *host = "host-x86_64-unknown-linux", *dev = "hipv4-amdgcn-amd-amdhsa--gfx1100";
    size_t p = 32;
    put64(buf + p, 200), put64(buf + p + 8, 0), put64(buf + p + 16, strlen(host));
    memcpy(buf + p + 24, host, strlen(host));
    p += 24 + strlen(host);
    put64(buf + p, 200), put64(buf + p + 8, 56), put64(buf + p + 16, strlen(dev));
    memcpy(buf + p + 24, dev, strlen(dev));
    kb_ctx *ctx = kbt_ctx();
    kb_inspect *ins = kbi_inspect_new(KB_INSPECT_ELF, "x");
    cr_assert_eq(kbi_offload_bundle_parse(ctx, ins, "x: .hip_fatbin", buf, sizeof(buf), 0), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_assert_eq(kb_inspect_gpu_code_count(ins), 1);
    cr_expect_str_eq(kb_inspect_gpu_code(ins, 0)->arch, "gfx1100");
    cr_expect_eq(kb_inspect_gpu_code(ins, 0)->kind, KB_GPU_CODE_AMDGCN);
    put64(buf + p + 8, 57); /* one byte past the section */
    cr_expect_eq(kbi_offload_bundle_parse(ctx, ins, "x: .hip_fatbin", buf, sizeof(buf), 0),
                 KB_ERR_PARSE);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "code object at 200 + 57 lies outside"), "%s",
              kb_ctx_last_error(ctx)->message);
    put64(buf + p + 16, 100000);
    cr_expect_eq(kbi_offload_bundle_parse(ctx, ins, "x: .hip_fatbin", buf, sizeof(buf), 0),
                 KB_ERR_PARSE);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "bad target triple length 100000"));
    cr_expect_eq(kbi_offload_bundle_parse(ctx, ins, "x: .hip_fatbin", buf + 1, 100, 0),
                 KB_ERR_PARSE);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "no __CLANG_OFFLOAD_BUNDLE__ magic"));
    kb_inspect_free(ins);
    kb_ctx_free(ctx);
}

Test(inspect, bad_files_are_named)
{
    char *dir = kbt_mkdtemp();
    char *text = kbi_path_join(dir, "notes.txt"), *cut = kbi_path_join(dir, "cut.so");
    kbt_write(text, "hello\n");
    kb_ctx *ctx = kbt_ctx();
    kb_inspect *ins = NULL;
    cr_expect_eq(kb_inspect_file(&ins, ctx, text), KB_ERR_UNSUPPORTED);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "notes.txt is neither an ELF file"));
    /* the first 200 bytes of a real library: its section table lies past the end */
    kb_buf self = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(ctx, "/proc/self/exe", &self), 0);
    cr_assert_eq(kbi_write_file_atomic(ctx, cut, self.data, 200, 0644), 0);
    cr_expect_eq(kb_inspect_file(&ins, ctx, cut), KB_ERR_PARSE);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "cut.so: malformed ELF at offset"), "%s",
              kb_ctx_last_error(ctx)->message);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "section table outside the file"));
    cr_expect_null(ins);
    char *missing = kbi_path_join(dir, "missing.so");
    cr_expect_eq(kb_inspect_file(&ins, ctx, missing), KB_ERR_NOT_FOUND);
    kbi_buf_free(&self);
    kb_ctx_free(ctx);
    kbt_rmtree(dir);
    free(dir), free(text), free(cut), free(missing);
}

Test(inspect, artifact_members_and_its_library)
{
    char *cc = find_tool("cc", NULL);
    if (!cc)
        kbt_skip_missing("no C compiler (cc) in PATH");
    char *dir = kbt_mkdtemp();
    const char *argv[] = {cc, "-shared", "-fPIC", "-O1"};
    char *so = compile(dir, "a.c", c_library, argv, KB_ARRAY_LEN(argv), "liba.so");
    char *json = kbi_path_join(dir, "kbpkg.json"), *art = kbi_path_join(dir, "a.tar.zst");
    kbt_write(json, "{}\n");
    kb_archive_member members[] = {{"lib/liba.so", so}, {"kbpkg.json", json}};
    kb_ctx *ctx = kbt_ctx();
    kb_archive_result r;
    cr_assert_eq(kbi_archive_write_members(&r, ctx, art, members, 2, 0), 0);
    kb_inspect *ins = NULL;
    cr_assert_eq(kb_inspect_file(&ins, ctx, art), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_expect_eq(kb_inspect_get_kind(ins), KB_INSPECT_ARCHIVE);
    cr_assert_eq(kb_inspect_member_count(ins), 3);
    cr_expect_str_eq(kb_inspect_member(ins, 0), "kbpkg.json");
    cr_expect_str_eq(kb_inspect_member(ins, 1), "lib/");
    cr_assert_eq(kb_inspect_library_count(ins), 1);
    const kb_inspect *lib = kb_inspect_library(ins, 0);
    cr_expect_str_eq(kb_inspect_name(lib), "lib/liba.so");
    cr_expect(has_export(lib, "kb_visible"));
    kb_inspect_free(ins);
    kb_ctx_free(ctx);
    kbt_rmtree(dir);
    free(dir), free(so), free(json), free(art), free(cc);
}

Test(inspect, version_compare_is_numeric)
{
    cr_expect_lt(kbi_version_compare("2.2.5", "2.14"), 0);
    cr_expect_gt(kbi_version_compare("3.4.30", "3.4.9"), 0);
    cr_expect_eq(kbi_version_compare("2.34", "2.34"), 0);
    cr_expect_lt(kbi_version_compare("2.3", "2.3.1"), 0);
}
