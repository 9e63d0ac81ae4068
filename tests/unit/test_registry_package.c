/* Registry: kbpkg package versions as OCI indexes (push, read back, versions, latest, fetch). */
#include "kbtest.h"
#include "registry/oci.h"
#include "registry/package_index.h"

#include <stdlib.h>
#include <string.h>

typedef struct fixture {
    char *dir;
    kb_ctx *ctx;
    kb_registry *reg;
    char *sm90;
    char *gfx;
    char *src;
} fixture;

static fixture setup(void)
{
    fixture f = {kbt_mkdtemp(), kbt_ctx(), NULL, NULL, NULL, NULL};
    char *hub = kb_asprintf("%s/hub", f.dir);
    cr_assert_eq(kb_registry_open(&f.reg, f.ctx, hub), 0);
    free(hub);
    f.sm90 = kb_asprintf("%s/sm90.tar.zst", f.dir);
    f.gfx = kb_asprintf("%s/gfx.tar.zst", f.dir);
    f.src = kb_asprintf("%s/src.tar.zst", f.dir);
    kbt_write(f.sm90, "cuda archive");
    kbt_write(f.gfx, "rocm archive");
    kbt_write(f.src, "source archive");
    return f;
}

static void teardown(fixture *f)
{
    kb_registry_free(f->reg);
    kb_ctx_free(f->ctx);
    kbt_rmtree(f->dir);
    free(f->dir);
    free(f->sm90);
    free(f->gfx);
    free(f->src);
}

static char *publish(fixture *f, const char *version)
{
    const char *cfg = "{\"name\":\"radeonflow/gemm\"}";
    kb_package_artifact arts[] = {
        {"cuda13-sm_90-x86_64-linux", "cuda", "sm_90", "cuda13", "bk1", cfg, strlen(cfg), f->sm90},
        {"rocm5-gfx1030-x86_64-linux", "rocm", "gfx1030", "rocm5", "bk2", NULL, 0, f->gfx},
        {NULL, NULL, NULL, NULL, NULL, NULL, 0, f->src},
    };
    char *digest = NULL;
    cr_assert_eq(kb_package_push(&digest, f->reg, "radeonflow/gemm", version, arts, 3), 0, "%s",
                 kb_ctx_last_error(f->ctx)->message);
    return digest;
}

Test(registry_package, push_read_back_and_fetch)
{
    fixture f = setup();
    char *digest = publish(&f, "1.0.0");
    kb_package_index *ix = NULL;
    cr_assert_eq(kb_package_index_get(&ix, f.reg, "radeonflow/gemm", "1.0.0"), 0);
    cr_expect_str_eq(ix->digest, digest);
    cr_assert_eq(ix->count, 3);
    const kb_package_entry *e = kb_package_index_find(ix, "cuda13-sm_90-x86_64-linux");
    cr_assert_not_null(e);
    cr_expect_str_eq(e->backend, "cuda");
    cr_expect_str_eq(e->arch, "sm_90");
    cr_expect_str_eq(e->runtime, "cuda13");
    cr_expect_str_eq(e->build_key, "bk1");
    cr_expect_not(e->is_source);
    const kb_package_entry *s = kb_package_index_find(ix, NULL);
    cr_assert_not_null(s);
    cr_expect(s->is_source);
    cr_expect_null(kb_package_index_find(ix, "metal3-apple-arm64-darwin"));

    char *out = kb_asprintf("%s/got", f.dir);
    cr_assert_eq(kb_package_fetch(f.reg, "radeonflow/gemm", e, out, 0), 0, "%s",
                 kb_ctx_last_error(f.ctx)->message);
    kb_buf b = KB_BUF_INIT;
    kb_read_file(NULL, out, &b);
    cr_expect_str_eq(b.data, "cuda archive");
    kb_buf_free(&b);
    cr_expect_eq(kb_package_fetch(f.reg, "radeonflow/gemm", s, out, 3), KB_ERR_LIMIT);

    /* the child manifest carries its config and type; the index its platform */
    kb_registry_manifest *m = NULL;
    cr_assert_eq(kb_registry_manifest_get(&m, f.reg, "radeonflow/gemm", e->manifest_digest), 0);
    kb_oci_manifest om = {0};
    cr_assert_eq(kb_oci_manifest_parse(&om, f.ctx, m->data, m->len, "child"), 0);
    cr_expect_str_eq(om.artifact_type, KB_ARTIFACT_TYPE);
    cr_expect_str_eq(om.config.media_type, KB_MT_KBPKG_CONFIG);
    cr_expect_str_eq(om.layers[0].media_type, KB_MT_KBPKG_LAYER);
    kb_oci_manifest_clear(&om);
    kb_registry_manifest_free(m);
    cr_assert_eq(kb_registry_manifest_get(&m, f.reg, "radeonflow/gemm", "1.0.0"), 0);
    cr_expect(strstr(m->data, "\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}"), "%s",
              m->data);
    kb_registry_manifest_free(m);
    free(out);
    kb_package_index_free(ix);
    free(digest);
    teardown(&f);
}

Test(registry_package, versions_sorted_and_latest_is_highest_release)
{
    fixture f = setup();
    char *d100 = publish(&f, "1.0.0");
    char *d120 = publish(&f, "1.2.0");
    char *d110 = publish(&f, "1.1.0");
    char *drc = publish(&f, "2.0.0-rc.1");
    char *d10 = publish(&f, "1.10.0");
    /* a signature tag and another tool's tag are not versions */
    kb_registry_manifest *m = NULL;
    cr_assert_eq(kb_registry_manifest_get(&m, f.reg, "radeonflow/gemm", "1.0.0"), 0);
    cr_assert_eq(kb_registry_manifest_put(NULL, f.reg, "radeonflow/gemm", "sha256-abc.sig",
                                          m->media_type, m->data, m->len),
                 0);
    cr_assert_eq(kb_registry_manifest_put(NULL, f.reg, "radeonflow/gemm", "nightly", m->media_type,
                                          m->data, m->len),
                 0);
    kb_registry_manifest_free(m);

    kb_strv v = KB_STRV_INIT;
    cr_assert_eq(kb_package_versions(&v, f.reg, "radeonflow/gemm"), 0);
    cr_assert_eq(v.len, 5);
    cr_expect_str_eq(v.items[0], "1.0.0");
    cr_expect_str_eq(v.items[1], "1.1.0");
    cr_expect_str_eq(v.items[2], "1.2.0");
    cr_expect_str_eq(v.items[3], "1.10.0");
    cr_expect_str_eq(v.items[4], "2.0.0-rc.1");
    kb_strv_free(&v);
    kb_package_index *ix = NULL;
    cr_assert_eq(kb_package_index_get(&ix, f.reg, "radeonflow/gemm", "latest"), 0);
    cr_expect_str_eq(ix->digest, d10, "latest is 1.10.0, not the pre-release");
    kb_package_index_free(ix);
    free(d100);
    free(d120);
    free(d110);
    free(drc);
    free(d10);
    teardown(&f);
}

Test(registry_package, bad_versions_and_empty_pushes_are_refused)
{
    fixture f = setup();
    kb_package_artifact a = {.target = "cpu-x86_64_v3-x86_64-linux", .archive_path = f.src};
    cr_expect_eq(kb_package_push(NULL, f.reg, "radeonflow/gemm", "1.0", &a, 1), KB_ERR_VERSION);
    cr_expect_str_eq(kb_ctx_last_error(f.ctx)->message,
                     "cannot publish radeonflow/gemm: '1.0' is not a semantic version usable as "
                     "a tag");
    cr_expect_eq(kb_package_push(NULL, f.reg, "radeonflow/gemm", "01.0.0", &a, 1), KB_ERR_VERSION);
    cr_expect_eq(kb_package_push(NULL, f.reg, "radeonflow/gemm", "1.0.0", &a, 0), KB_ERR_INVALID);
    a.archive_path = "/nonexistent/a.tar.zst";
    cr_expect_eq(kb_package_push(NULL, f.reg, "radeonflow/gemm", "1.0.0", &a, 1), KB_ERR_NOT_FOUND);
    cr_expect(kb_str_starts(kb_ctx_last_error(f.ctx)->message,
                            "publishing radeonflow/gemm 1.0.0 cpu-x86_64_v3-x86_64-linux: "),
              "%s", kb_ctx_last_error(f.ctx)->message);
    kb_strv tags = KB_STRV_INIT;
    cr_expect_eq(kb_registry_tags(&tags, f.reg, "radeonflow/gemm"), KB_ERR_NOT_FOUND,
                 "nothing tagged after a failed publish");
    kb_strv_free(&tags);
    teardown(&f);
}
