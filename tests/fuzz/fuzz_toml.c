/* libFuzzer target: the build.toml reader of kbpkg import (kbi_toml_parse) on arbitrary bytes. */
#include "fuzz_common.h"
#include "import/toml.h"

/* Every node is well formed: tables and arrays hold their items, scalars have no items. */
static void check_tree(const kb_toml *t, unsigned depth)
{
    FUZZ_CHECK(depth < 80, "tree deeper than the reader's limits");
    FUZZ_CHECK(t->line >= 1 && t->col >= 1, "node without a position");
    if (t->type == KB_TOML_STRING)
        FUZZ_CHECK(t->str != NULL, "string node without text");
    if (t->type != KB_TOML_TABLE && t->type != KB_TOML_ARRAY)
        FUZZ_CHECK(t->count == 0, "scalar with items");
    for (size_t i = 0; i < t->count; i++) {
        if (t->type == KB_TOML_TABLE)
            FUZZ_CHECK(t->items[i]->key && kbi_toml_get(t, t->items[i]->key) == t->items[i],
                       "table member not found by its key (duplicate?)");
        check_tree(t->items[i], depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kb_ctx *ctx = fuzz_ctx();
    kb_toml *t = NULL;
    int rc = kbi_toml_parse(&t, ctx, "fuzz.toml", (const char *)data, size);
    if (rc) {
        fuzz_check_error(ctx, rc);
        FUZZ_CHECK(t == NULL, "failed parse left a tree");
    } else
        check_tree(t, 0);
    kbi_toml_free(t);
    kb_ctx_free(ctx);
    return 0;
}
