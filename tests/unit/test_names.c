/* One grammar of package names (model/name.c): the manifest parser, the ref parser, the
 * registry and the signature layer accept exactly the same names. Each bad name below once
 * passed `kbpkg manifest check` and `kbpkg build`, then publish or install refused it. */
#include "kbtest.h"
#include "manifests/manifest.h"
#include "model/ref.h"
#include "registry/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    bool valid;
} names[] = {
    {"radeonflow/gemm", true}, {"kbpkg-community/rmsnorm", true},
    {"a.b/c__d", true},        {"org/x--y", true},
    {"org9/v2.1", true},       {"org/gemm-", false},
    {"org/_gemm", false},      {"org/a..b", false},
    {".org/x", false},         {"org/a___b", false},
    {"Org/gemm", false},       {"org/gemm/extra", false},
    {"gemm", false},           {"org/", false},
    {"/gemm", false},          {"org/ge mm", false},
};

/* Loads a one-target manifest naming `name`; the parser's verdict. */
static bool manifest_accepts(const char *name)
{
    char *dir = kbt_mkdtemp();
    char path[512];
    snprintf(path, sizeof path, "%s/kernel.yaml", dir);
    char text[512];
    snprintf(text, sizeof text,
             "name: \"%s\"\nversion: 1.0.0\nabi: 1\nheader: include/f.h\nexports: [f]\n"
             "backends:\n  cpu: { sources: [src/f.c] }\n",
             name);
    kbt_write(path, text);
    kb_ctx *ctx = kbt_ctx();
    kb_manifest *m = NULL;
    int rc = kbi_manifest_load(ctx, &m, path, false);
    if (rc)
        cr_expect(strstr(kb_ctx_last_error(ctx)->message, "is not a package name") != NULL,
                  "%s refused for another reason: %s", name, kb_ctx_last_error(ctx)->message);
    kb_manifest_free(m);
    kb_ctx_free(ctx);
    kbt_rmtree(dir);
    free(dir);
    return rc == 0;
}

static bool ref_accepts(const char *name)
{
    kb_ctx *ctx = kbt_ctx();
    kb_pkgref ref;
    char text[256];
    snprintf(text, sizeof text, "%s@^1", name);
    int rc = kbi_pkgref_parse(ctx, &ref, text);
    if (!rc)
        kbi_pkgref_clear(&ref);
    kb_ctx_free(ctx);
    return rc == 0;
}

Test(names, every_entry_point_agrees_with_the_one_grammar)
{
    for (size_t i = 0; i < KB_ARRAY_LEN(names); i++) {
        const char *n = names[i].name;
        cr_expect_eq(kbi_pkg_name_valid(n), names[i].valid, "kbi_pkg_name_valid(%s)", n);
        cr_expect_eq(manifest_accepts(n), names[i].valid, "manifest name: %s", n);
        cr_expect_eq(ref_accepts(n), names[i].valid, "ref: %s", n);
        /* The registry's repository check is the same grammar with any number of parts. */
        if (names[i].valid)
            cr_expect(kbi_repo_valid(n), "kbi_repo_valid(%s)", n);
    }
}

Test(names, the_error_names_the_rule)
{
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kbi_pkg_name_check(ctx, "org/gemm-"), KB_ERR_INVALID);
    const char *msg = kb_ctx_last_error(ctx)->message;
    cr_expect(strstr(msg, "'org/gemm-' is not a package name (org/name:") != NULL, "%s", msg);
    cr_expect_eq(kbi_pkg_name_check(ctx, "org/gemm"), 0);
    kb_ctx_free(ctx);
}

Test(names, repository_length_is_capped)
{
    char longname[KB_REPO_NAME_MAX + 8];
    memset(longname, 'a', sizeof longname);
    longname[3] = '/';
    longname[KB_REPO_NAME_MAX] = '\0';
    cr_expect(kbi_pkg_name_valid(longname));
    longname[KB_REPO_NAME_MAX] = 'a';
    longname[KB_REPO_NAME_MAX + 1] = '\0';
    cr_expect_not(kbi_pkg_name_valid(longname));
}
