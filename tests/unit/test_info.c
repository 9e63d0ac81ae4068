/* info/: what the public API says of a published version (kb_package_versions,
 * kb_package_info_fetch, targets' details, kbpkg.json's exports and ABI), as tools/hub reads it. */
#include "kbtest.h"
#include "trust_helpers.h"
#include "registry/pkgindex.h"

#include <kbpkg/info.h>
#include <stdlib.h>
#include <string.h>

typedef struct info_fixture {
    char *dir, *hub;
    kb_ctx *ctx;
    kb_registry *reg;
} info_fixture;

/* acme/k@version: a cuda and a cpu artifact (15 and 3 bytes) sharing kbpkg.json config. */
static void publish(info_fixture *f, const char *version, const char *config)
{
    char *cuda = kbi_asprintf("%s/%s-cuda.tar.zst", f->dir, version);
    char *cpu = kbi_asprintf("%s/%s-cpu.tar.zst", f->dir, version);
    kbt_write(cuda, "fifteen bytes!!");
    kbt_write(cpu, "cpu");
    kb_publish_item items[] = {
        {cuda, "cuda13-sm_90-x86_64-linux", "key-sm90", config},
        {cpu, "cpu-x86_64_v2-x86_64-linux", NULL, config},
    };
    cr_assert_eq(kbi_pkg_publish(f->reg, "acme/k", version, "K", items, 2, false, NULL, NULL), 0,
                 "%s", kbt_msg(f->ctx));
    free(cuda);
    free(cpu);
}

static info_fixture setup(void)
{
    info_fixture f = {kbt_mkdtemp(), NULL, kbt_ctx(), NULL};
    f.hub = kbi_asprintf("%s/hub", f.dir);
    cr_assert_eq(kb_registry_open(&f.reg, f.ctx, f.hub), 0);
    publish(&f, "1.0.0", "{\"abi\":1,\"exports\":[\"k_f16\",\"k_f32\"],\"name\":\"acme/k\"}");
    publish(&f, "1.2.0", "not json");
    return f;
}

static void teardown(info_fixture *f)
{
    kb_registry_free(f->reg);
    kb_ctx_free(f->ctx);
    kbt_rmtree(f->dir);
    free(f->dir);
    free(f->hub);
}

static size_t find_target(const kb_package_info *info, const char *target)
{
    for (size_t i = 0; i < kb_package_info_target_count(info); i++) {
        const char *t = NULL;
        cr_assert_eq(kb_package_info_target(&t, NULL, NULL, info, i), 0);
        if (strcmp(t, target) == 0)
            return i;
    }
    cr_assert_fail("no target %s", target);
    return 0;
}

Test(info, versions_highest_first_through_an_open_registry)
{
    info_fixture f = setup();
    char **versions = NULL;
    size_t count = 0;
    cr_assert_eq(kb_package_versions(&versions, &count, f.reg, "acme/k"), 0, "%s", kbt_msg(f.ctx));
    cr_assert_eq(count, 2);
    cr_expect_str_eq(versions[0], "1.2.0");
    cr_expect_str_eq(versions[1], "1.0.0");
    kb_strings_free(versions, count);
    teardown(&f);
}

Test(info, fetch_gives_each_target_backend_arch_and_size)
{
    info_fixture f = setup();
    kb_package_info *info = NULL;
    cr_assert_eq(kb_package_info_fetch(&info, f.reg, "acme/k", "1.0.0"), 0, "%s", kbt_msg(f.ctx));
    cr_expect_str_eq(kb_package_info_version(info), "1.0.0");
    cr_expect_eq(kb_package_info_version_count(info), 1);
    const char *backend = NULL, *arch = NULL, *key = NULL;
    uint64_t size = 0;
    size_t cuda = find_target(info, "cuda13-sm_90-x86_64-linux");
    cr_assert_eq(kb_package_info_target_detail(&backend, &arch, &size, info, cuda), 0);
    cr_expect_str_eq(backend, "cuda");
    cr_expect_str_eq(arch, "sm_90");
    cr_expect_eq(size, 15);
    cr_assert_eq(kb_package_info_target(NULL, &key, NULL, info, cuda), 0);
    cr_expect_str_eq(key, "key-sm90");
    size_t cpu = find_target(info, "cpu-x86_64_v2-x86_64-linux");
    cr_assert_eq(kb_package_info_target_detail(&backend, &arch, &size, info, cpu), 0);
    cr_expect_str_eq(backend, "cpu");
    cr_expect_str_eq(arch, "x86_64_v2");
    cr_expect_eq(size, 3);
    cr_expect_eq(kb_package_info_target_detail(NULL, NULL, NULL, info, 2), KB_ERR_NOT_FOUND);
    kb_package_info_free(info);
    teardown(&f);
}

Test(info, kbpkg_json_exports_and_abi)
{
    info_fixture f = setup();
    kb_package_info *info = NULL;
    cr_assert_eq(kb_package_info_fetch(&info, f.reg, "acme/k", "1.0.0"), 0, "%s", kbt_msg(f.ctx));
    cr_expect_eq(kb_package_info_export_count(info), 0, "nothing before it is read");
    cr_assert_eq(kb_package_info_read_kbpkg_json(info, f.reg), 0, "%s", kbt_msg(f.ctx));
    cr_assert_eq(kb_package_info_export_count(info), 2);
    cr_expect_str_eq(kb_package_info_export_at(info, 0), "k_f16");
    cr_expect_str_eq(kb_package_info_export_at(info, 1), "k_f32");
    cr_expect_null(kb_package_info_export_at(info, 2));
    cr_expect_eq(kb_package_info_abi(info), 1);
    kb_package_info_free(info);
    teardown(&f);
}

/* A kbpkg.json that is not JSON: the error names the config blob and its target, and the info
 * keeps nothing of it. */
Test(info, bad_kbpkg_json_is_named_and_leaves_nothing)
{
    info_fixture f = setup();
    kb_package_info *info = NULL;
    cr_assert_eq(kb_package_info_fetch(&info, f.reg, "acme/k", "1.2.0"), 0, "%s", kbt_msg(f.ctx));
    cr_assert_eq(kb_package_info_read_kbpkg_json(info, f.reg), KB_ERR_PARSE);
    const char *msg = kbt_msg(f.ctx);
    cr_expect(strncmp(msg, "kbpkg.json sha256:", 18) == 0, "%s", msg);
    cr_expect(strstr(msg, " of cuda13-sm_90-x86_64-linux: ") != NULL ||
                  strstr(msg, " of cpu-x86_64_v2-x86_64-linux: ") != NULL,
              "%s", msg);
    cr_expect(strstr(msg, "not a JSON object") != NULL, "%s", msg);
    cr_expect_eq(kb_package_info_export_count(info), 0);
    cr_expect_eq(kb_package_info_abi(info), 0);
    kb_package_info_free(info);
    teardown(&f);
}

Test(info, fetch_of_a_missing_version_fails_with_nothing_out)
{
    info_fixture f = setup();
    kb_package_info *info = (kb_package_info *)&f; /* overwritten with NULL */
    cr_expect_neq(kb_package_info_fetch(&info, f.reg, "acme/k", "9.9.9"), 0);
    cr_expect_null(info);
    cr_expect(strstr(kbt_msg(f.ctx), "9.9.9") != NULL, "%s", kbt_msg(f.ctx));
    teardown(&f);
}
