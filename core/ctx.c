/* The context: options, callbacks and their dispatch. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

KB_EXTERN const char *kb_version(void)
{
    return KBPKG_VERSION_STRING;
}

KB_EXTERN int kb_ctx_new(kb_ctx **out, const kb_ctx_options *options)
{
    if (!out)
        return KB_ERR_INVALID;
    *out = NULL;
    if (options && options->version != KB_CTX_OPTIONS_VERSION)
        return KB_ERR_INVALID;
    kb_ctx *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return KB_ERR_NOMEM;
    kb_ctx_options defaults = KB_CTX_OPTIONS_INIT;
    ctx->opts = options ? *options : defaults;
    ctx->err.message = "";
    int rc = kbi_config_init(ctx);
    if (rc) {
        kb_ctx_free(ctx);
        return rc;
    }
    *out = ctx;
    /* A bad config file: the ctx stays with the caller, whose kb_ctx_last_error says which
     * file, line and key, and who frees it (the log callback hears it too). */
    if (!ctx->opts.no_config_files && (rc = kbi_config_load_files(ctx)))
        kbi_log(ctx, KB_LOG_ERROR, "%s", ctx->err.message);
    return rc;
}

KB_EXTERN void kb_ctx_free(kb_ctx *ctx)
{
    if (!ctx)
        return;
    kb_ctx_clear_error(ctx);
    if (ctx->probe_cache && ctx->probe_cache_free)
        ctx->probe_cache_free(ctx->probe_cache);
    if (ctx->open_memo && ctx->open_memo_free)
        ctx->open_memo_free(ctx->open_memo);
    kbi_config_free(ctx);
    free(ctx);
}

KB_EXTERN void kb_ctx_set_log_level(kb_ctx *ctx, kb_log_level level)
{
    if (ctx)
        ctx->opts.log_level = level;
}

void kbi_log(kb_ctx *ctx, kb_log_level level, const char *fmt, ...)
{
    if (!ctx || !ctx->opts.log || level > ctx->opts.log_level)
        return;
    kb_buf b = KB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    int rc = kbi_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (rc == 0)
        ctx->opts.log(level, b.data, ctx->opts.payload);
    kbi_buf_free(&b);
}

void kbi_event_emit(kb_ctx *ctx, kb_event_type type, const char *subject, const char *fmt, ...)
{
    if (!ctx || !ctx->opts.event)
        return;
    kb_buf b = KB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    int rc = fmt ? kbi_buf_vprintf(&b, fmt, ap) : 0;
    va_end(ap);
    if (rc == 0) {
        kb_event ev = {type, subject ? subject : "", b.data ? b.data : ""};
        ctx->opts.event(&ev, ctx->opts.payload);
    }
    kbi_buf_free(&b);
}

uint64_t kbi_progress_job_new(kb_ctx *ctx)
{
    return ctx ? ++ctx->progress_jobs : 0;
}

int kbi_progress_emit(kb_ctx *ctx, const kb_progress *p)
{
    if (!ctx || !ctx->opts.progress)
        return 0;
    kb_progress full = *p;
    if (!full.label)
        full.label = full.item;
    if (!full.unit)
        full.unit = "bytes";
    /* a finished job cannot be cancelled any more: its outcome (and error) stands */
    if (ctx->opts.progress(&full, ctx->opts.payload) && !full.finished)
        return kbi_error_set(ctx, KB_ERR_CANCELLED, "%s of %s cancelled", full.task, full.label);
    return 0;
}

int kbi_progress_report(kb_ctx *ctx, const char *task, const char *item, uint64_t done,
                        uint64_t total, int finished)
{
    kb_progress p = {task, item, done, total, finished, 0, NULL, NULL, 0};
    return kbi_progress_emit(ctx, &p);
}
