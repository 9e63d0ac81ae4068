/* Verification of a built library with the inspector: exports, no STB_GNU_UNIQUE, glibc needs,
 * and GPU code exactly for the declared arch. */
#include "builder/builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int inspect(kb_ctx *ctx, kb_inspect **out, const char *lib)
{
    int rc = kb_inspect_file(out, ctx, lib);
    if (rc)
        kb_error_prefix(ctx, "verifying %s", lib);
    return rc;
}

static int check_exports(kb_ctx *ctx, const kb_inspect *ins, const char *lib,
                         const kb_strv *required)
{
    if (kb_inspect_unique_count(ins))
        return kb_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                                 "%s has the STB_GNU_UNIQUE symbol %s (it would pin the library "
                                 "in memory; build with -fno-gnu-unique)",
                                 lib, kb_inspect_unique(ins, 0));
    kb_buf missing = KB_BUF_INIT;
    for (size_t i = 0; i < required->len; i++) {
        bool found = false;
        for (size_t j = 0; j < kb_inspect_export_count(ins) && !found; j++)
            found = strcmp(kb_inspect_export(ins, j), required->items[i]) == 0;
        if (!found)
            kb_buf_printf(&missing, "%s%s", missing.len ? ", " : "", required->items[i]);
    }
    int rc = 0;
    if (missing.len)
        rc = kb_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                               "%s does not export %s (declared in exports)", lib, missing.data);
    kb_buf_free(&missing);
    return rc;
}

int kb_verify_exports(kb_ctx *ctx, const char *lib, const kb_strv *required)
{
    kb_inspect *ins = NULL;
    int rc = inspect(ctx, &ins, lib);
    if (!rc)
        rc = check_exports(ctx, ins, lib, required);
    kb_inspect_free(ins);
    return rc;
}

int kb_verify_glibc_needs(kb_ctx *ctx, const char *lib, char glibc[16], char glibcxx[16])
{
    kb_inspect *ins = NULL;
    int rc = inspect(ctx, &ins, lib);
    if (!rc) {
        snprintf(glibc, 16, "%s", kb_inspect_glibc_needed(ins));
        snprintf(glibcxx, 16, "%s", kb_inspect_glibcxx_needed(ins));
    }
    kb_inspect_free(ins);
    return rc;
}

/* What the target must hold: SASS sm_XY, PTX compute_XY, AMDGCN gfx..., or nothing (CPU). */
static kb_gpu_code_kind expected_kind(const kb_plan_item *item)
{
    if (item->backend == KB_BACKEND_CUDA)
        return kb_str_starts(item->arch, "compute_") ? KB_GPU_CODE_PTX : KB_GPU_CODE_SASS;
    if (item->backend == KB_BACKEND_ROCM)
        return KB_GPU_CODE_AMDGCN;
    return KB_GPU_CODE_UNKNOWN;
}

static bool code_matches(const kb_gpu_code *code, kb_gpu_code_kind kind, const char *arch)
{
    if (code->kind != kind)
        return false;
    /* gfx90a:xnack+ is gfx90a code with a feature pinned; the plan names the bare arch. */
    size_t n = strcspn(code->arch, ":");
    return strlen(arch) == n && strncmp(code->arch, arch, n) == 0;
}

static int check_gpu_code(kb_ctx *ctx, const kb_inspect *ins, const char *lib,
                          const kb_plan_item *item)
{
    kb_gpu_code_kind want = expected_kind(item);
    size_t n = kb_inspect_gpu_code_count(ins);
    bool ok = want == KB_GPU_CODE_UNKNOWN ? n == 0 : n > 0;
    kb_buf found = KB_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        const kb_gpu_code *c = kb_inspect_gpu_code(ins, i);
        ok = ok && code_matches(c, want, item->arch);
        kb_buf_printf(&found, "%s%s %s", i ? ", " : "", kb_gpu_code_kind_name(c->kind), c->arch);
    }
    int rc = 0;
    if (!ok && want == KB_GPU_CODE_UNKNOWN)
        rc = kb_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                               "%s for %s holds GPU code (%s); a CPU target must hold none", lib,
                               item->target, found.data);
    else if (!ok)
        rc = kb_error_set_path(ctx, KB_ERR_BUILD, lib, 0, 0,
                               "%s for %s holds %s, expected only %s %s", lib, item->target,
                               found.len ? found.data : "no GPU code", kb_gpu_code_kind_name(want),
                               item->arch);
    kb_buf_free(&found);
    return rc;
}

int kb_verify_gpu_code(kb_ctx *ctx, const char *lib, const kb_plan_item *item)
{
    kb_inspect *ins = NULL;
    int rc = inspect(ctx, &ins, lib);
    if (!rc)
        rc = check_gpu_code(ctx, ins, lib, item);
    kb_inspect_free(ins);
    return rc;
}

int kb_verify_library(kb_ctx *ctx, const char *lib, const kb_manifest *m, const kb_plan_item *item,
                      char glibc[16], char glibcxx[16])
{
    kb_strv required = KB_STRV_INIT;
    int rc = kb_strv_push(&required, "kbpkg_kernel_info") ? kb_error_oom(ctx) : 0;
    for (size_t i = 0; !rc && i < m->exports.len; i++)
        rc = kb_strv_push(&required, m->exports.items[i]) ? kb_error_oom(ctx) : 0;
    kb_inspect *ins = NULL;
    if (!rc)
        rc = inspect(ctx, &ins, lib);
    if (!rc)
        rc = check_exports(ctx, ins, lib, &required);
    if (!rc)
        rc = check_gpu_code(ctx, ins, lib, item);
    if (!rc) {
        snprintf(glibc, 16, "%s", kb_inspect_glibc_needed(ins));
        snprintf(glibcxx, 16, "%s", kb_inspect_glibcxx_needed(ins));
    }
    kb_inspect_free(ins);
    kb_strv_free(&required);
    return rc;
}
