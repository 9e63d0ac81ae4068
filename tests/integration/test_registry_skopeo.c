/* Registry: other OCI tools (skopeo) copy what kbpkg pushes, and kbpkg reads what they write. */
#include "kbtest.h"
#include "registry/oci.h"
#include "registry/registry.h"
#include "registry_harness.h"

#include <stdlib.h>
#include <string.h>

typedef struct pushed {
    char *index_digest;
    char *child_digest;
} pushed;

static const char *msg(kb_ctx *ctx)
{
    return kb_ctx_last_error(ctx)->message;
}

/* What kbpkg publishes: an index of artifact manifests (empty config, kbpkg layer). */
static pushed push_package(kb_ctx *ctx, kb_registry *r, const char *repo, const char *tag)
{
    pushed p = {0};
    const char *layer_text = "pretend this is a .tar.zst";
    char *ld = NULL;
    cr_assert_eq(kbi_registry_blob_put_mem(&ld, r, repo, layer_text, strlen(layer_text)), 0, "%s",
                 msg(ctx));
    cr_assert_eq(kbi_registry_blob_put_mem(NULL, r, repo, "{}", 2), 0, "%s", msg(ctx));
    kb_oci_manifest m = {0};
    m.artifact_type = kbi_strdup("application/vnd.kbpkg.artifact.v1");
    kbi_oci_descriptor_empty_config(&m.config);
    kb_oci_descriptor layer = {0};
    kbi_oci_descriptor_set(&layer, "application/vnd.kbpkg.layer.v1.tar+zstd", ld,
                           strlen(layer_text));
    kbi_oci_manifest_add_layer(&m, &layer);
    kb_buf mb = KB_BUF_INIT;
    kbi_oci_manifest_serialize(&mb, ctx, &m);
    cr_assert_eq(kbi_registry_manifest_put(&p.child_digest, r, repo, "child", KB_MT_OCI_MANIFEST,
                                           mb.data, mb.len),
                 0, "%s", msg(ctx));
    kb_oci_index ix = {0};
    kb_oci_descriptor d = {0};
    kbi_oci_descriptor_set(&d, KB_MT_OCI_MANIFEST, p.child_digest, mb.len);
    d.artifact_type = kbi_strdup("application/vnd.kbpkg.artifact.v1");
    d.platform_os = kbi_strdup("linux");
    d.platform_arch = kbi_strdup("amd64");
    kbi_oci_annotate(&d.annotations, "dev.kbpkg.target", "cuda13-sm_90-x86_64-linux");
    kbi_oci_index_add(&ix, &d);
    kb_buf ib = KB_BUF_INIT;
    kbi_oci_index_serialize(&ib, ctx, &ix);
    cr_assert_eq(
        kbi_registry_manifest_put(&p.index_digest, r, repo, tag, KB_MT_OCI_INDEX, ib.data, ib.len),
        0, "%s", msg(ctx));
    kbi_buf_free(&ib);
    kbi_buf_free(&mb);
    kbi_oci_index_clear(&ix);
    kbi_oci_descriptor_clear(&d);
    kbi_oci_descriptor_clear(&layer);
    kbi_oci_manifest_clear(&m);
    free(ld);
    return p;
}

static void pushed_free(pushed *p)
{
    free(p->index_digest);
    free(p->child_digest);
}

static char *need_skopeo(void)
{
    char *skopeo = NULL;
    if (kbi_which(&skopeo, "skopeo") != 0)
        kbt_skip_missing("skopeo is not installed");
    return skopeo;
}

/*
 * skopeo 1.9 copies with --all, but re-serializes the index in Go's key order
 * and drops descriptor-level artifactType (its image-spec predates it): the
 * index digest changes, the child manifests and blobs keep theirs. So check
 * what must survive a mirror: tag, children by digest, annotations, blobs.
 */
static void expect_same_package(kb_ctx *ctx, kb_registry *r, const char *repo, const char *tag,
                                const pushed *p)
{
    kb_registry_manifest *m = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&m, r, repo, tag), 0, "%s", msg(ctx));
    cr_expect_str_eq(m->media_type, KB_MT_OCI_INDEX);
    kb_oci_index ix = {0};
    cr_assert_eq(kbi_oci_index_parse(&ix, ctx, m->data, m->len, m->digest), 0, "%s", msg(ctx));
    cr_assert_eq(ix.manifest_count, 1);
    cr_expect_str_eq(ix.manifests[0].digest, p->child_digest);
    cr_expect_str_eq(kbi_oci_annotation(&ix.manifests[0].annotations, "dev.kbpkg.target"),
                     "cuda13-sm_90-x86_64-linux");
    cr_expect_str_eq(ix.manifests[0].platform_os, "linux");
    kbi_oci_index_clear(&ix);
    kbi_registry_manifest_free(m);

    cr_assert_eq(kbi_registry_manifest_get(&m, r, repo, p->child_digest), 0, "%s", msg(ctx));
    kb_oci_manifest child = {0};
    cr_assert_eq(kbi_oci_manifest_parse(&child, ctx, m->data, m->len, m->digest), 0);
    cr_expect_str_eq(child.artifact_type, "application/vnd.kbpkg.artifact.v1");
    kb_buf layer = KB_BUF_INIT;
    cr_assert_eq(kbi_registry_blob_get_mem(&layer, r, repo, child.layers[0].digest, 1024), 0, "%s",
                 msg(ctx));
    cr_expect_str_eq(layer.data, "pretend this is a .tar.zst");
    kbi_buf_free(&layer);
    kbi_oci_manifest_clear(&child);
    kbi_registry_manifest_free(m);
}

static void run_skopeo(const char *skopeo, const char *src, const char *dest)
{
    const char *argv[] = {skopeo,
                          "--insecure-policy",
                          "copy",
                          "--all",
                          "--src-tls-verify=false",
                          "--dest-tls-verify=false",
                          src,
                          dest,
                          NULL};
    kb_proc_result res = {0};
    cr_assert_eq(kbi_proc_run(NULL, &res, argv, NULL, 120000), 0);
    cr_assert_eq(res.exit_code, 0, "skopeo copy %s %s failed: %s", src, dest,
                 res.output.data ? res.output.data : "");
    kbi_proc_result_free(&res);
}

Test(registry_skopeo, registry_to_layout_and_back_to_kbpkg)
{
    char *skopeo = need_skopeo();
    kbt_registry srv;
    kbt_registry_start(&srv, NULL, NULL);
    kb_ctx *ctx = kbt_ctx();
    kb_registry *remote = NULL;
    cr_assert_eq(kb_registry_open(&remote, ctx, srv.url), 0);
    pushed p = push_package(ctx, remote, "x/y", "1.0.0");

    char *dir = kbt_mkdtemp();
    char *src = kbi_asprintf("docker://127.0.0.1:%d/x/y:1.0.0", srv.port);
    char *dest = kbi_asprintf("oci:%s/layout:x/y:1.0.0", dir);
    run_skopeo(skopeo, src, dest);

    /* kbpkg reads skopeo's layout by the same name */
    kb_registry *layout = NULL;
    char *path = kbi_asprintf("%s/layout", dir);
    cr_assert_eq(kb_registry_open(&layout, ctx, path), 0);
    expect_same_package(ctx, layout, "x/y", "1.0.0", &p);
    kb_strv tags = KB_STRV_INIT;
    cr_assert_eq(kbi_registry_tags(&tags, layout, "x/y"), 0, "%s", msg(ctx));
    cr_expect_eq(tags.len, 1);
    kbi_strv_free(&tags);

    kb_registry_free(layout);
    kb_registry_free(remote);
    free(path);
    free(src);
    free(dest);
    kbt_rmtree(dir);
    free(dir);
    pushed_free(&p);
    kb_ctx_free(ctx);
    kbt_registry_stop(&srv);
    free(skopeo);
}

Test(registry_skopeo, kbpkg_layout_to_registry)
{
    char *skopeo = need_skopeo();
    kbt_registry srv;
    kbt_registry_start(&srv, NULL, NULL);
    kb_ctx *ctx = kbt_ctx();
    char *dir = kbt_mkdtemp();
    kb_registry *layout = NULL;
    cr_assert_eq(kb_registry_open(&layout, ctx, dir), 0);
    pushed p = push_package(ctx, layout, "x/z", "2.0.0");
    pushed other = push_package(ctx, layout, "x/other", "2.0.0");

    char *src = kbi_asprintf("oci:%s:x/z:2.0.0", dir);
    char *dest = kbi_asprintf("docker://127.0.0.1:%d/x/z:2.0.0", srv.port);
    run_skopeo(skopeo, src, dest);

    kb_registry *remote = NULL;
    cr_assert_eq(kb_registry_open(&remote, ctx, srv.url), 0);
    expect_same_package(ctx, remote, "x/z", "2.0.0", &p);
    kb_strv repos = KB_STRV_INIT;
    cr_assert_eq(kbi_registry_catalog(&repos, remote), 0, "%s", msg(ctx));
    cr_assert_eq(repos.len, 1, "only the named image was copied");
    cr_expect_str_eq(repos.items[0], "x/z");
    kbi_strv_free(&repos);

    kb_registry_free(remote);
    kb_registry_free(layout);
    free(src);
    free(dest);
    kbt_rmtree(dir);
    free(dir);
    pushed_free(&p);
    pushed_free(&other);
    kb_ctx_free(ctx);
    kbt_registry_stop(&srv);
    free(skopeo);
}
