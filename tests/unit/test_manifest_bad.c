/* Bad manifests: every file in tests/data/manifests/bad gives its exact line, column, code
 * and message. */
#include "kbtest.h"
#include "manifests/manifest.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *file;
    unsigned line, column;
    int code;
    const char *message; /* what follows "FILE:LINE:COL: " (a prefix of it) */
} bad[] = {
    {"syntax_error", 6, 9, KB_ERR_PARSE, "YAML syntax error: did not find expected ',' or ']'"},
    {"unknown_key", 4, 1, KB_ERR_MANIFEST, "unknown key 'descripton' (expected one of: name,"},
    {"unknown_backend_key", 9, 5, KB_ERR_MANIFEST, "backends.cuda: unknown key 'sorces'"},
    {"unknown_backend", 7, 3, KB_ERR_MANIFEST, "backends: unknown backend 'vulkan'"},
    {"exports_not_sequence", 5, 10, KB_ERR_MANIFEST, "exports: expected a sequence, got a scalar"},
    {"abi_not_scalar", 3, 6, KB_ERR_MANIFEST, "abi: expected a scalar, got a sequence"},
    {"abi_unsupported", 3, 6, KB_ERR_MANIFEST, "abi: kernel ABI 2 is not supported"},
    {"duplicate_key", 3, 1, KB_ERR_MANIFEST, "duplicate key 'version' (first at line 2)"},
    {"duplicate_nested_key", 9, 5, KB_ERR_MANIFEST,
     "backends.cuda: duplicate key 'archs' (first at line 8)"},
    {"anchor", 8, 12, KB_ERR_MANIFEST, "backends.cuda.archs: anchors (&a) are not allowed"},
    {"alias", 8, 12, KB_ERR_MANIFEST, "backends.cuda.archs: aliases (*archs) are not allowed"},
    {"merge_key", 1, 1, KB_ERR_MANIFEST, "merge keys (<<) are not allowed"},
    {"tag", 2, 10, KB_ERR_MANIFEST, "version: tags ("},
    {"name_uppercase", 1, 7, KB_ERR_MANIFEST, "name: 'RadeonFlow/gemm' is not a package name"},
    {"name_two_slashes", 1, 7, KB_ERR_MANIFEST,
     "name: 'radeonflow/gemm/extra' is not a package name"},
    /* The OCI repository grammar publish uses: each of these once passed the manifest check. */
    {"name_trailing_dash", 1, 7, KB_ERR_MANIFEST, "name: 'org/gemm-' is not a package name (org/"},
    {"name_leading_underscore", 1, 7, KB_ERR_MANIFEST, "name: 'org/_gemm' is not a package name"},
    {"name_double_dot", 1, 7, KB_ERR_MANIFEST, "name: 'org/a..b' is not a package name"},
    {"name_leading_dot", 1, 7, KB_ERR_MANIFEST, "name: '.org/x' is not a package name"},
    {"version_two_parts", 2, 10, KB_ERR_MANIFEST, "version: '1.0' is not a semantic version"},
    {"version_leading_zero", 2, 10, KB_ERR_MANIFEST,
     "version: '1.02.0' is not a semantic version (MAJOR.MINOR.PATCH[-pre][+build]): leading "
     "zero"},
    {"cuda_arch_bad", 8, 27, KB_ERR_MANIFEST,
     "backends.cuda.archs[2]: 'sm_8x' is not a CUDA arch ("},
    {"cpu_arch_bad", 7, 29, KB_ERR_MANIFEST,
     "backends.cpu.archs[1]: 'x86_64_v5' is not a CPU arch ("},
    {"arch_duplicate", 8, 27, KB_ERR_MANIFEST, "backends.cuda.archs[2]: 'sm_80' is listed twice"},
    {"ptx_too_old", 9, 10, KB_ERR_MANIFEST, "backends.cuda.ptx: 'sm_70' is not a PTX arch"},
    {"missing_abi", 1, 1, KB_ERR_MANIFEST, "missing required key 'abi'"},
    {"missing_sources", 8, 5, KB_ERR_MANIFEST, "backends.cuda: missing required key 'sources'"},
    {"no_backends", 6, 11, KB_ERR_MANIFEST, "backends: declare at least one backend"},
    {"export_not_identifier", 5, 24, KB_ERR_MANIFEST, "exports[1]: '2fast' is not a C identifier"},
    {"export_duplicate", 5, 37, KB_ERR_MANIFEST, "exports[2]: 'rf_gemm_f32' is listed twice"},
    {"source_absolute", 9, 15, KB_ERR_MANIFEST,
     "backends.cuda.sources[0]: '/etc/passwd' must be a relative path inside the package"},
    {"source_dotdot", 9, 15, KB_ERR_MANIFEST,
     "backends.cuda.sources[0]: 'src/../../secret.cu' must be a relative path"},
    {"header_dotdot", 4, 9, KB_ERR_MANIFEST, "header: '../rf_gemm.h' must be a relative path"},
    {"sha256_short", 11, 17, KB_ERR_MANIFEST,
     "backends.cuda.sources[0].sha256: '1234abcd' is not a sha256 digest"},
    {"url_scheme", 10, 14, KB_ERR_MANIFEST,
     "backends.cuda.sources[0].url: 'ftp://example.org/gemm.cu' is not an https://"},
    {"url_without_sha256", 10, 9, KB_ERR_MANIFEST,
     "backends.cuda.sources[0]: a url source needs 'sha256'"},
    {"top_level_sequence", 1, 1, KB_ERR_MANIFEST, "expected a mapping at the top level"},
    {"empty", 1, 1, KB_ERR_MANIFEST, "the file is empty"},
};

Test(manifest_bad, each_file_fails_at_its_position)
{
    size_t n = sizeof(bad) / sizeof(bad[0]);
    cr_assert_geq(n, 22);
    kb_ctx *ctx = kbt_ctx();
    for (size_t i = 0; i < n; i++) {
        char rel[128];
        snprintf(rel, sizeof(rel), "manifests/bad/%s.yaml", bad[i].file);
        char *path = kbt_data(rel);
        kb_manifest *m = NULL;
        int rc = kbi_manifest_load(ctx, &m, path, false);
        const kb_error *e = kb_ctx_last_error(ctx);
        cr_expect_eq(rc, bad[i].code, "%s: code %d, want %d (%s)", bad[i].file, rc, bad[i].code,
                     e->message);
        cr_expect_null(m);
        cr_expect_str_eq(e->path ? e->path : "", path, "%s", bad[i].file);
        cr_expect_eq(e->line, bad[i].line, "%s: line %u, want %u (%s)", bad[i].file, e->line,
                     bad[i].line, e->message);
        cr_expect_eq(e->column, bad[i].column, "%s: column %u, want %u (%s)", bad[i].file,
                     e->column, bad[i].column, e->message);
        char *want = kbi_asprintf("%s:%u:%u: %s", path, bad[i].line, bad[i].column, bad[i].message);
        cr_expect(kbi_str_starts(e->message, want), "%s:\n  got  %s\n  want %s...", bad[i].file,
                  e->message, want);
        free(want);
        free(path);
        kb_manifest_free(m);
    }
    kb_ctx_free(ctx);
}

/* Every fixture file is in the table, so none sits there untested. */
Test(manifest_bad, table_covers_every_fixture)
{
    char *dir = kbt_data("manifests/bad");
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    struct dirent *ent;
    size_t files = 0;
    while ((ent = readdir(d))) {
        if (!kbi_str_ends(ent->d_name, ".yaml"))
            continue;
        files++;
        bool listed = false;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            if (strncmp(ent->d_name, bad[i].file, strlen(bad[i].file)) == 0 &&
                strcmp(ent->d_name + strlen(bad[i].file), ".yaml") == 0)
                listed = true;
        cr_expect(listed, "%s is not in the table", ent->d_name);
    }
    closedir(d);
    cr_expect_eq(files, sizeof(bad) / sizeof(bad[0]));
    free(dir);
}

/* Hostile nesting and odd YAML never crash or pass. */
Test(manifest_bad, deep_nesting_and_second_document)
{
    kb_ctx *ctx = kbt_ctx();
    kb_buf deep = KB_BUF_INIT;
    for (int i = 0; i < 200; i++)
        kbi_buf_puts(&deep, "[");
    kb_manifest *m = NULL;
    /* the depth limit stops it before libyaml reaches the unclosed end */
    cr_expect_eq(kbi_manifest_parse(ctx, &m, "deep.yaml", deep.data, deep.len), KB_ERR_MANIFEST);
    cr_expect(kbi_str_starts(kb_ctx_last_error(ctx)->message, "deep.yaml:1:33: "), "%s",
              kb_ctx_last_error(ctx)->message);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "nesting too deep"));
    kbi_buf_reset(&deep);
    kbi_buf_puts(&deep, "a:\n");
    for (int i = 1; i < 40; i++)
        kbi_buf_printf(&deep, "%*sa:\n", i, "");
    cr_expect_eq(kbi_manifest_parse(ctx, &m, "deep.yaml", deep.data, deep.len), KB_ERR_MANIFEST);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "nesting too deep"), "%s",
              kb_ctx_last_error(ctx)->message);
    kbi_buf_free(&deep);
    const char *two = "name: a/b\n---\nname: c/d\n";
    cr_expect_eq(kbi_manifest_parse(ctx, &m, "two.yaml", two, strlen(two)), KB_ERR_MANIFEST);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message,
                     "two.yaml:2:1: only one YAML document is allowed");
    cr_expect_null(m);
    kb_ctx_free(ctx);
}
