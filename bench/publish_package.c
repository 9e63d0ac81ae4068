/* Bench helper: build a package's targets (filtered) plus its source and publish them. */
/*
 * There is no `kbpkg publish` command on this branch yet, so the benches publish their fixture
 * the way tests/integration/test_install_flow.c does: kb_build, then kbi_pkg_publish. This links
 * the static library and uses internal headers on purpose; it is a tool, not an API example.
 *
 *   kbpkg_bench_publish PACKAGE_DIR REGISTRY TARGET_FILTER
 */
#include "archive/extract.h"
#include "kbpkg/kbpkg.h"
#include "registry/pkgindex.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_ITEMS 64

static int fail(kb_ctx *ctx, const char *what)
{
    fprintf(stderr, "kbpkg_bench_publish: %s: %s\n", what, kb_ctx_last_error(ctx)->message);
    return 1;
}

/* Collect publish items (built targets + source), with each artifact's kbpkg.json. */
static int collect_items(kb_ctx *ctx, const kb_build_result *br, kb_publish_item *items,
                         kb_buf *cfgs, size_t *count)
{
    size_t n = 0;
    for (size_t i = 0; i < br->count && n + 1 < MAX_ITEMS; i++) {
        const kb_build_target_result *t = &br->targets[i];
        if (t->status != KB_BUILD_BUILT)
            continue;
        cfgs[n] = (kb_buf)KB_BUF_INIT;
        if (kbi_extract_read_member(&cfgs[n], ctx, t->artifact, "kbpkg.json", 1 << 20) != 0)
            return -1;
        items[n] = (kb_publish_item){t->artifact, t->target, t->build_key, cfgs[n].data};
        n++;
    }
    cfgs[n] = (kb_buf)KB_BUF_INIT;
    kbi_buf_puts(&cfgs[n], "{\"target\":\"source\"}");
    items[n] = (kb_publish_item){br->source_artifact, KB_SOURCE_TARGET, NULL, cfgs[n].data};
    *count = n + 1;
    return 0;
}

static int publish(kb_ctx *ctx, const kb_build_result *br, const char *registry)
{
    kb_publish_item items[MAX_ITEMS];
    kb_buf cfgs[MAX_ITEMS];
    size_t n = 0;
    int rc = collect_items(ctx, br, items, cfgs, &n);
    kb_registry *r = NULL;
    if (!rc)
        rc = kb_registry_open(&r, ctx, registry);
    char *digest = NULL;
    if (!rc)
        rc = kbi_pkg_publish(r, br->package, br->version, "bench fixture", items, n, true, NULL,
                             &digest);
    if (!rc)
        printf("published %s %s index %s\n", br->package, br->version, digest);
    free(digest);
    kb_registry_free(r);
    for (size_t i = 0; i < n; i++)
        kbi_buf_free(&cfgs[i]);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: kbpkg_bench_publish PACKAGE_DIR REGISTRY TARGET_FILTER\n");
        return 2;
    }
    kb_ctx *ctx = NULL;
    if (kb_ctx_new(&ctx, NULL) != 0)
        return 1;
    const char *filters[] = {argv[3]};
    kb_build_options bo = KB_BUILD_OPTIONS_INIT;
    bo.targets = filters;
    bo.target_count = 1;
    kb_build_result *br = NULL;
    int status = 0;
    if (kb_build(&br, ctx, argv[1], &bo) != 0)
        status = fail(ctx, "build");
    else if (br->built == 0 || br->failed != 0 || !br->source_artifact) {
        fprintf(stderr, "kbpkg_bench_publish: built %zu, failed %zu%s%s\n", br->built, br->failed,
                br->count && br->targets[0].message ? ": " : "",
                br->count && br->targets[0].message ? br->targets[0].message : "");
        status = 1;
    } else if (publish(ctx, br, argv[2]) != 0)
        status = fail(ctx, "publish");
    kb_build_result_free(br);
    kb_ctx_free(ctx);
    return status;
}
