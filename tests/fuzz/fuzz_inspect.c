/* libFuzzer target: the ELF / CUDA fatbin / clang offload-bundle inspector (archive/inspect*.c).
 * Every input goes through the three in-memory parsers and, through a file, kb_inspect_file
 * (which also reads .tar.zst artifacts). */
#include "archive/inspect.h"
#include "fuzz_common.h"

static void check_result(kb_ctx *ctx, int rc, kb_inspect *ins)
{
    if (rc) {
        fuzz_check_error(ctx, rc);
        return;
    }
    for (size_t i = 0; i < kb_inspect_gpu_code_count(ins); i++) {
        const kb_gpu_code *c = kb_inspect_gpu_code(ins, i);
        FUZZ_CHECK(c && c->arch && c->detail, "GPU code %zu has NULL fields", i);
    }
    for (size_t i = 0; i < kb_inspect_export_count(ins); i++)
        FUZZ_CHECK(kb_inspect_export(ins, i) != NULL, "export %zu is NULL", i);
    (void)kb_inspect_glibc_needed(ins);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char root[512], path[600];
    if (!root[0]) {
        fuzz_tmpdir(root, sizeof(root));
        snprintf(path, sizeof(path), "%s/input.so", root);
    }
    kb_ctx *ctx = fuzz_ctx();

    kb_inspect *into = kbi_inspect_new(KB_INSPECT_ELF, "fuzz");
    if (!into)
        abort();
    int rc = kbi_fatbin_parse(ctx, into, "fuzz: .nv_fatbin", data, size);
    check_result(ctx, rc, into);
    rc = kbi_offload_bundle_parse(ctx, into, "fuzz: .hip_fatbin", data, size, 0);
    check_result(ctx, rc, into);
    kb_inspect_free(into);

    kb_inspect *elf = NULL;
    rc = kbi_inspect_elf_memory(&elf, ctx, "fuzz.so", data, size);
    check_result(ctx, rc, elf);
    kb_inspect_free(elf);

    fuzz_write(path, data, size);
    kb_inspect *file = NULL;
    rc = kb_inspect_file(&file, ctx, path);
    check_result(ctx, rc, file);
    kb_inspect_free(file);

    kb_ctx_free(ctx);
    return 0;
}
