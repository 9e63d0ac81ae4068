/* libFuzzer target: the kernel.yaml parser (kbi_manifest_parse) on arbitrary bytes. */
#include "fuzz_common.h"
#include "manifests/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kb_ctx *ctx = fuzz_ctx();
    kb_manifest *m = NULL;
    int rc = kbi_manifest_parse(ctx, &m, "fuzz.yaml", (const char *)data, size);
    if (rc) {
        fuzz_check_error(ctx, rc);
        FUZZ_CHECK(m == NULL, "failed parse left a manifest");
    } else {
        FUZZ_CHECK(m && m->name && m->name[0], "parsed manifest without a name");
        /* a parsed version formats and parses back to the same precedence */
        char text[256];
        kb_semver again;
        kbi_semver_format(&m->version, text, sizeof(text));
        FUZZ_CHECK(kbi_semver_parse(ctx, &again, text) == 0, "version '%s' does not reparse", text);
        FUZZ_CHECK(kbi_semver_cmp(&again, &m->version) == 0, "version '%s' changed", text);
    }
    kb_manifest_free(m);
    kb_ctx_free(ctx);
    return 0;
}
