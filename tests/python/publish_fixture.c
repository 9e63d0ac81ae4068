/* Test helper for the Python suite: build a package's CPU targets and publish them (and its
 * source) into an OCI layout folder, as `kbpkg publish` will. Usage: PKGDIR REGISTRY OUTDIR */
#include "core/internal.h"
#include "kbpkg/kbpkg.h"
#include "archive/extract.h"
#include "registry/pkgindex.h"

#include <stdio.h>
#include <stdlib.h>

static int fail(kb_ctx *ctx, const char *what, int rc)
{
    fprintf(stderr, "publish_fixture: %s: %s\n", what, kb_ctx_last_error(ctx)->message);
    return rc ? 1 : 1;
}

static int publish(kb_ctx *ctx, const kb_build_result *br, const char *registry)
{
    kb_publish_item items[64];
    kb_buf configs[64] = {KB_BUF_INIT};
    size_t n = 0;
    int rc = 0;
    for (size_t i = 0; !rc && i < br->count && n < 63; i++) {
        if (br->targets[i].status != KB_BUILD_BUILT)
            continue;
        /* The artifact's own kbpkg.json is the config blob, as kbpkg publish sends it (its
         * signatures go into the index). */
        rc = kbi_extract_read_member(&configs[n], ctx, br->targets[i].artifact, "kbpkg.json",
                                     1 << 20);
        if (!rc)
            items[n] = (kb_publish_item){br->targets[i].artifact, br->targets[i].target,
                                         br->targets[i].build_key, configs[n].data};
        n += !rc;
    }
    if (br->source_artifact)
        items[n++] = (kb_publish_item){br->source_artifact, "source", NULL, "{}"};
    kb_registry *reg = NULL;
    if (!rc)
        rc = kb_registry_open(&reg, ctx, registry);
    if (!rc)
        rc = kbi_pkg_publish(reg, br->package, br->version, "published by the Python tests", items,
                             n, false, NULL, NULL);
    kb_registry_free(reg);
    for (size_t i = 0; i < 64; i++)
        kbi_buf_free(&configs[i]);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: publish_fixture PKGDIR REGISTRY OUTDIR\n");
        return 2;
    }
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    o.no_config_files = 1;
    kb_ctx *ctx = NULL;
    if (kb_ctx_new(&ctx, &o))
        return 1;
    const char *cpu[] = {"cpu"};
    kb_build_options bo = KB_BUILD_OPTIONS_INIT;
    bo.targets = cpu;
    bo.target_count = 1;
    bo.out_dir = argv[3];
    kb_build_result *br = NULL;
    int rc = kb_build(&br, ctx, argv[1], &bo);
    int status = 0;
    if (rc)
        status = fail(ctx, "build", rc);
    else if (br->built == 0) {
        fprintf(stderr, "publish_fixture: no CPU target built: %s\n",
                br->count && br->targets[0].message ? br->targets[0].message : "?");
        status = 1;
    } else if ((rc = publish(ctx, br, argv[2])))
        status = fail(ctx, "publish", rc);
    if (!status)
        printf("%s %s\n", br->package, br->version);
    kb_build_result_free(br);
    kb_ctx_free(ctx);
    return status;
}
