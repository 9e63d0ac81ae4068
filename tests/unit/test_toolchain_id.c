/* Toolchain ids (and so build keys) come from what the compiler says it is, not where it is. */
#include "builder/builder.h"
#include "kbtest.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A fake cc at dir/<name> that prints version_line and exits 0. */
static char *fake_cc(const char *dir, const char *name, const char *version_line)
{
    char *path = kbi_asprintf("%s/%s", dir, name);
    char *text = kbi_asprintf("#!/bin/sh\necho '%s'\necho 'InstalledDir: %s'\n", version_line, dir);
    kbt_write(path, text);
    cr_assert_eq(chmod(path, 0755), 0);
    free(text);
    return path;
}

static char *cc_id(const char *path)
{
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "build.cc", path), 0);
    kb_toolchains tcs;
    cr_assert_eq(kbi_toolchains_discover_some(ctx, &tcs, 1u << KB_BACKEND_CPU), 0);
    cr_assert(tcs.tc[KB_BACKEND_CPU].found, "%s", tcs.tc[KB_BACKEND_CPU].note);
    char *id = kbi_strdup(tcs.tc[KB_BACKEND_CPU].id);
    kbi_toolchains_free(&tcs);
    kb_ctx_free(ctx);
    return id;
}

Test(toolchain_id, same_compiler_in_two_places_has_one_id)
{
    char *tmp = kbt_mkdtemp();
    char *a = kbi_asprintf("%s/opt/cuda/bin", tmp), *b = kbi_asprintf("%s/usr/local/bin", tmp);
    char *cc_a = fake_cc(a, "cc", "cc (Fake 12.2.0-14) 12.2.0");
    char *cc_b = fake_cc(b, "gcc", "gcc (Fake 12.2.0-14) 12.2.0");
    char *cc_c = fake_cc(b, "cc", "cc (Fake 12.2.0-15) 12.2.0");
    char *id_a = cc_id(cc_a), *id_b = cc_id(cc_b), *id_c = cc_id(cc_c);
    cr_expect_str_eq(id_a, id_b, "one compiler, two folders and names: one id");
    cr_expect_str_neq(id_a, id_c, "another build of the same version is another toolchain");
    cr_expect(kbi_str_starts(id_a, "cc-12.2.0-"), "%s", id_a);
    /* the same id gives the same build key on both workers */
    char k1[65], k2[65];
    kb_strv flags = KB_STRV_INIT;
    kbi_build_key(k1, "abc", "cpu-x86_64_v3-x86_64-linux", id_a, &flags);
    kbi_build_key(k2, "abc", "cpu-x86_64_v3-x86_64-linux", id_b, &flags);
    cr_expect_str_eq(k1, k2);
    free(id_a);
    free(id_b);
    free(id_c);
    free(cc_a);
    free(cc_b);
    free(cc_c);
    free(a);
    free(b);
    kbt_rmtree(tmp);
    free(tmp);
}

Test(toolchain_id, identity_ignores_path_lines)
{
    kb_toolchain tc = {0};
    tc.name = "hipcc";
    tc.version = "5.2.21153";
    tc.path = "/opt/rocm/bin/hipcc";
    cr_assert_eq(kbi_toolchain_identity(&tc, "HIP version: 5.2.21153-0\nclang version 15.0.6\n"
                                             "InstalledDir: /opt/rocm/llvm/bin\n"),
                 0);
    char *one = kbi_strdup(tc.id);
    tc.path = "/usr/bin/hipcc";
    cr_assert_eq(kbi_toolchain_identity(&tc, "HIP version: 5.2.21153-0\nclang version 15.0.6\n"
                                             "InstalledDir: /usr/lib/llvm-15/bin\n"),
                 0);
    cr_expect_str_eq(one, tc.id);
    free(one);
    free(tc.id);
}
