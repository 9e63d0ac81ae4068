/* Issue 18 (6): a manifest path through a symlinked folder never packs files from outside the
 * package (only the last component used to be checked). */
#include "kbtest.h"

#include "builder/builder.h"
#include "manifests/manifest.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(package_paths, a_symlinked_folder_in_a_manifest_path_is_refused)
{
    char *base = kbt_mkdtemp();
    char *pkg = kbi_path_join(base, "pkg");
    char *secret = kbi_path_join(base, "elsewhere/secret.h");
    kbt_write(secret, "the user's secret\n");
    char *yaml = kbi_path_join(pkg, "kernel.yaml");
    kbt_write(yaml, "name: kbtest/leak\nversion: 0.1.0\nsummary: s\nlicense: MIT\nabi: 1\n"
                    "header: link/secret.h\nexports: [f]\n"
                    "backends:\n  cpu: { sources: [src/f.c] }\n");
    char *src = kbi_path_join(pkg, "src/f.c");
    kbt_write(src, "int f(void) { return 0; }\n");
    char *link = kbi_path_join(pkg, "link");
    char *target = kbi_path_join(base, "elsewhere");
    cr_assert_eq(symlink(target, link), 0);
    kb_ctx *ctx = kbt_ctx();
    kb_manifest *m = NULL;
    int rc = kbi_manifest_load(ctx, &m, yaml, false);
    kb_strv files = KB_STRV_INIT;
    if (rc == 0)
        rc = kbi_source_files(ctx, &files, m);
    cr_expect_eq(rc, KB_ERR_UNSAFE, "files: %zu, rc %d", files.len, rc);
    for (size_t i = 0; i < files.len; i++)
        cr_expect(!strstr(files.items[i], "secret"), "packed %s", files.items[i]);
    if (rc)
        cr_expect(strstr(kb_ctx_last_error(ctx)->message, "is a symlink"), "%s",
                  kb_ctx_last_error(ctx)->message);
    kbi_strv_free(&files);
    kb_manifest_free(m);
    kb_ctx_free(ctx);
    kbt_rmtree(base);
    free(base), free(pkg), free(secret), free(yaml), free(src), free(link), free(target);
}
