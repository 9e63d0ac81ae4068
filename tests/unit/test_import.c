/* kbpkg import (import/import.c): the kernel-builder fixture tests/data/kernel_builder/activation
 * becomes a package folder whose kernel.yaml kbpkg accepts, with a report of what it cannot
 * carry; bad input is an error naming build.toml:line:col and writes nothing. */
#include "kbtest.h"
#include "kbpkg/build.h"
#include "manifests/manifest.h"

#include <string.h>

static bool has_note(char **notes, size_t n, const char *needle)
{
    for (size_t i = 0; i < n; i++)
        if (strstr(notes[i], needle))
            return true;
    return false;
}

Test(import, kernel_builder_project_becomes_a_package)
{
    kb_ctx *ctx = kbt_ctx();
    char *tmp = kbt_mkdtemp();
    char *project = kbt_data("kernel_builder/activation");
    char *dir = kbi_asprintf("%s/pkg", tmp);
    char **notes = NULL;
    size_t n = 0;
    cr_assert_eq(kb_package_import(&notes, &n, ctx, project, dir, NULL), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    kb_manifest *m = NULL;
    cr_assert_eq(kbi_manifest_load(ctx, &m, dir, true), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_expect_str_eq(m->name, "kernels-community/activation");
    cr_expect_str_eq(m->license, "apache-2.0");
    cr_expect_str_eq(m->header, "include/activation.h");
    cr_assert_eq(m->exports.len, 2, "the torch ops name the exports");
    cr_expect_str_eq(m->exports.items[0], "silu_and_mul");
    const kb_backend_spec *cuda = &m->backends[KB_BACKEND_CUDA];
    cr_assert_eq(cuda->archs.len, 6);
    cr_expect_str_eq(cuda->archs.items[0], "sm_75");
    cr_expect_str_eq(cuda->archs.items[5], "sm_90a", "9.0a -> sm_90a");
    cr_expect_str_eq(cuda->includes.items[0], "src", "include \".\" is the project root");
    cr_assert_eq(cuda->source_count, 1, "headers are not compiled");
    cr_expect_str_eq(cuda->sources[0].path, "src/activation/activation_kernels.cu");
    cr_expect(kbi_strv_contains(&cuda->sources[0].flags, "--use_fast_math"));
    const kb_backend_spec *rocm = &m->backends[KB_BACKEND_ROCM];
    cr_assert_eq(rocm->archs.len, 2);
    cr_expect_str_eq(rocm->archs.items[1], "gfx942");
    const kb_backend_spec *cpu = &m->backends[KB_BACKEND_CPU];
    cr_assert(cpu->present);
    cr_expect(kbi_strv_contains(&cpu->sources[0].flags, "-O3"));
    cr_expect_not(kbi_strv_contains(&cpu->sources[0].flags, "-I/usr/local/include/extra"));
    cr_expect(kbi_strv_contains(&m->files, "src/activation/dispatch_utils.h"),
              "headers travel in the source artifact");
    cr_expect(has_note(notes, n, "torch: the PyTorch bindings (torch-ext/torch_binding.cpp"));
    cr_expect(has_note(notes, n, "dependency 'cutlass_3_6' is provided by kernel-builder"));
    cr_expect(has_note(notes, n, "kernel.activation_cpu.cpu-isa: not carried over"));
    cr_expect(has_note(notes, n, "flag '-I/usr/local/include/extra' left out"));
    cr_expect_not(has_note(notes, n, "differ"), "cuda and rocm kernels are separate backends");
    char *lic = kbi_asprintf("%s/LICENSE", dir);
    cr_expect(kbi_path_exists(lic));
    /* a second import into the same folder is refused and keeps what is there */
    char **again = NULL;
    size_t n2 = 0;
    cr_expect_eq(kb_package_import(&again, &n2, ctx, project, dir, "org/other"), KB_ERR_EXISTS);
    kb_manifest_free(m);
    cr_assert_eq(kbi_manifest_load(ctx, &m, dir, true), 0);
    cr_expect_str_eq(m->name, "kernels-community/activation");
    kb_manifest_free(m);
    kb_strings_free(notes, n);
    free(lic);
    free(dir);
    free(project);
    kbt_rmtree(tmp);
    free(tmp);
    kb_ctx_free(ctx);
}

/* Errors point into build.toml, and nothing is written. */
Test(import, bad_build_toml_names_line_and_column_and_writes_nothing)
{
    struct {
        const char *toml, *want;
    } cases[] = {
        {"[general]\nname = \"x\"\n[kernel.k]\nsrc = \"a.cu\"\n",
         "build.toml:4:1: kernel.k.src: expected an array of strings"},
        {"[general]\nname = \"x\"\n[kernel.k]\nsrc = [\"a.cu\"]\ncuda-capabilities = "
         "[\"8.0\", \"eight\"]\n",
         "build.toml:5:29: kernel.k.cuda-capabilities: not a CUDA capability"},
        {"[general]\nname = \"x\"\n[kernel.k]\nsrc = [\"../a.cu\"]\n",
         "build.toml:4:8: src: a source path must be relative to the project"},
        {"[general]\nname = \"x\"\n", "build.toml: no [kernel.NAME] table to import"},
        {"[general]\nname = 1.5\n", "build.toml:2:8: only decimal integers"},
        {"[general]\nuniversal = true\nname = \"x\"\n[kernel.k]\nsrc = [\"a.cu\"]\n",
         "general.universal = true"},
        {"[general]\nname = \"Bad Name\"\n[kernel.k]\nsrc = [\"a.cu\"]\n",
         "'kernels-community/Bad Name' is not a package name"},
    };
    for (size_t i = 0; i < KB_ARRAY_LEN(cases); i++) {
        kb_ctx *ctx = kbt_ctx();
        char *tmp = kbt_mkdtemp();
        char *toml = kbi_asprintf("%s/build.toml", tmp);
        kbt_write(toml, cases[i].toml);
        char *dir = kbi_asprintf("%s/out", tmp);
        char **notes = NULL;
        size_t n = 0;
        int rc = kb_package_import(&notes, &n, ctx, tmp, dir, NULL);
        cr_expect_neq(rc, 0, "case %zu", i);
        cr_expect(strstr(kb_ctx_last_error(ctx)->message, cases[i].want), "case %zu: %s", i,
                  kb_ctx_last_error(ctx)->message);
        cr_expect_not(kbi_path_exists(dir), "case %zu wrote %s", i, dir);
        free(dir);
        free(toml);
        kbt_rmtree(tmp);
        free(tmp);
        kb_ctx_free(ctx);
    }
}
