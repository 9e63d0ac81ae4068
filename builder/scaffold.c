/* kb_package_new: a new package (manifest, header, CUDA + CPU sources, test, LICENSE, README)
 * that builds and tests on CPU as written. */
#include "builder/builder.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* org/name: lowercase [a-z0-9._-], one slash, both parts non-empty. */
static bool valid_package_name(const char *name, char *why, size_t size)
{
    const char *slash = strchr(name, '/');
    if (!slash || slash == name || !slash[1] || strchr(slash + 1, '/')) {
        snprintf(why, size, "it must read org/name with exactly one slash");
        return false;
    }
    for (const char *p = name; *p; p++)
        if (p != slash && !(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '.' ||
                            *p == '_' || *p == '-')) {
            snprintf(why, size, "'%c' is not allowed (lowercase letters, digits, . _ -)", *p);
            return false;
        }
    return true;
}

typedef struct scaffold_file {
    const char *path; /* relative, %s = the C identifier */
    const char *text; /* %1$s = package name, %2$s = identifier, %3$s = upper identifier */
} scaffold_file;

static const scaffold_file scaffold_files[] = {
    {"kernel.yaml", "name: %1$s\n"
                    "version: 0.1.0\n"
                    "summary: Vector add, the starting point of a kernel package\n"
                    "license: MIT\n"
                    "abi: 1\n"
                    "header: include/%2$s.h\n"
                    "exports: [%2$s_add_f32]\n"
                    "backends:\n"
                    "  cuda: { archs: [sm_80, sm_90], ptx: sm_80, sources: [src/%2$s.cu] }\n"
                    "  rocm: { archs: [gfx1030], sources: [src/%2$s.cu] }\n"
                    "  cpu: { sources: [src/%2$s_cpu.c] }\n"
                    "test: tests/check.c\n"},
    {"include/%s.h",
     "/* %1$s: out[i] = a[i] + b[i]. Pointers are device pointers on GPU builds. */\n"
     "#ifndef %3$s_H\n#define %3$s_H\n\n"
     "/* The kernel ABI (info struct, KBPKG_EXPORT, status codes): kbpkg passes it to every build\n"
     " * and ships it in every artifact. */\n"
     "#include <kbpkg/kernel_abi.h>\n\n"
     "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
     "/* Returns 0, or a negative code; stream is a cudaStream_t/hipStream_t (NULL on CPU). */\n"
     "KBPKG_EXPORT int %2$s_add_f32(float *out, const float *a, const float *b, long n, "
     "void *stream);\n\n"
     "#ifdef __cplusplus\n}\n#endif\n#endif\n"},
    {"src/%s_cpu.c", "/* CPU implementation of %1$s; also the reference of tests/check.c. */\n"
                     "#include \"%2$s.h\"\n\n"
                     "int %2$s_add_f32(float *out, const float *a, const float *b, long n, "
                     "void *stream)\n{\n    (void)stream;\n"
                     "    for (long i = 0; i < n; i++)\n        out[i] = a[i] + b[i];\n"
                     "    return 0;\n}\n\n"
                     "KBPKG_DEFINE_KERNEL_INFO(KBPKG_BACKEND_CPU)\n"},
    {"src/%s.cu",
     "/* GPU implementation of %1$s: CUDA with nvcc, HIP with hipcc. */\n"
     "#include \"%2$s.h\"\n\n"
     "#if defined(__HIP__)\n#include <hip/hip_runtime.h>\n#define GPU_BACKEND KBPKG_BACKEND_ROCM\n"
     "typedef hipStream_t gpu_stream;\n#else\n#define GPU_BACKEND KBPKG_BACKEND_CUDA\n"
     "typedef cudaStream_t gpu_stream;\n#endif\n\n"
     "__global__ static void add_kernel(float *out, const float *a, const float *b, long n)\n"
     "{\n    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    if (i < n)\n        out[i] = a[i] + b[i];\n}\n\n"
     "extern \"C\" int %2$s_add_f32(float *out, const float *a, const float *b, long n, "
     "void *stream)\n{\n    if (n <= 0)\n        return n == 0 ? 0 : -1;\n"
     "    add_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (gpu_stream)stream>>>(out, a, b, "
     "n);\n    return 0;\n}\n\n"
     "extern \"C\" {\nKBPKG_DEFINE_KERNEL_INFO(GPU_BACKEND)\n}\n"},
    {"tests/check.c",
     "/* Checks %2$s_add_f32 on random data against a plain loop; exits 0 on success. */\n"
     "#include <stdio.h>\n#include <stdlib.h>\n#include <time.h>\n\n#include \"%2$s.h\"\n\n"
     "int main(void)\n{\n    enum { N = 1000 };\n    static float a[N], b[N], out[N];\n"
     "    unsigned seed = (unsigned)time(NULL);\n    printf(\"seed %%u\\n\", seed);\n"
     "    srand(seed);\n    for (int i = 0; i < N; i++) {\n"
     "        a[i] = (float)rand() / (float)RAND_MAX;\n"
     "        b[i] = (float)rand() / (float)RAND_MAX;\n        out[i] = -1.0f;\n    }\n"
     "    if (%2$s_add_f32(out, a, b, N, NULL) != 0)\n        return 1;\n"
     "    for (int i = 0; i < N; i++)\n        if (out[i] != a[i] + b[i]) {\n"
     "            printf(\"mismatch at %%d: %%g != %%g\\n\", i, out[i], a[i] + b[i]);\n"
     "            return 1;\n        }\n    printf(\"ok: %%d elements\\n\", N);\n"
     "    return 0;\n}\n"},
    {"LICENSE", "MIT License\n\nCopyright (c) the %1$s authors\n\n"
                "Permission is hereby granted, free of charge, to any person obtaining a copy of "
                "this software and associated documentation files (the \"Software\"), to deal in "
                "the Software without restriction, including without limitation the rights to "
                "use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies "
                "of the Software, and to permit persons to whom the Software is furnished to do "
                "so, subject to the following conditions:\n\n"
                "The above copyright notice and this permission notice shall be included in all "
                "copies or substantial portions of the Software.\n\n"
                "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR "
                "IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, "
                "FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE "
                "AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER "
                "LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, "
                "OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE "
                "SOFTWARE.\n"},
    {"README.md", "# %1$s\n\nA kbpkg kernel package.\n\n"
                  "    kbpkg build . --target cpu     # or all declared targets: kbpkg build .\n"
                  "    kbpkg test .\n"},
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static int write_scaffold_file(kb_ctx *ctx, const char *dir, const scaffold_file *f,
                               const char *name, const char *ident, const char *upper)
{
    char rel[256];
    snprintf(rel, sizeof(rel), f->path, ident);
    kb_buf text = KB_BUF_INIT;
    int rc = kbi_buf_printf(&text, f->text, name, ident, upper) ? kbi_error_oom(ctx) : 0;
    char *path = kbi_path_join(dir, rel);
    char *parent = path ? kbi_strdup(path) : NULL;
    char *slash = parent ? strrchr(parent, '/') : NULL;
    if (!rc && !slash)
        rc = kbi_error_oom(ctx);
    if (!rc) {
        *slash = '\0';
        rc = kbi_mkdir_p(ctx, parent, 0755);
    }
    if (!rc)
        rc = kbi_write_file_atomic(ctx, path, text.data, text.len, 0644);
    free(parent);
    free(path);
    kbi_buf_free(&text);
    return rc;
}
#pragma GCC diagnostic pop

KB_EXTERN int kb_package_new(kb_ctx *ctx, const char *name, const char *dir)
{
    char why[128];
    if (!valid_package_name(name, why, sizeof(why)))
        return kbi_error_set(ctx, KB_ERR_INVALID, "bad package name '%s': %s", name, why);
    char *yaml = kbi_path_join(dir, "kernel.yaml");
    bool exists = yaml && kbi_path_exists(yaml);
    free(yaml);
    if (exists)
        return kbi_error_set_path(ctx, KB_ERR_EXISTS, dir, 0, 0,
                                  "%s already holds a kernel.yaml; not overwriting it", dir);
    char ident[128], upper[128];
    kbi_lib_name(name, ident, sizeof(ident));
    if (isdigit((unsigned char)ident[0])) { /* a C identifier cannot start with a digit */
        memmove(ident + 2, ident, strnlen(ident, sizeof(ident) - 3) + 1);
        ident[0] = 'k';
        ident[1] = '_';
    }
    for (size_t i = 0; i <= strlen(ident); i++)
        upper[i] = (char)toupper((unsigned char)ident[i]);
    int rc = kbi_mkdir_p(ctx, dir, 0755);
    for (size_t i = 0; !rc && i < KB_ARRAY_LEN(scaffold_files); i++)
        rc = write_scaffold_file(ctx, dir, &scaffold_files[i], name, ident, upper);
    return rc;
}
