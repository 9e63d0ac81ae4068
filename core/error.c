/* Error codes, their static strings, and the per-ctx last-error record. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    int code;
    const char *text;
} error_texts[] = {
    {KB_OK, "success"},
    {KB_ERR_GENERIC, "unexpected failure"},
    {KB_ERR_NOMEM, "out of memory"},
    {KB_ERR_INVALID, "invalid argument"},
    {KB_ERR_IO, "file system error"},
    {KB_ERR_NOT_FOUND, "not found"},
    {KB_ERR_PARSE, "syntax error"},
    {KB_ERR_MANIFEST, "invalid manifest"},
    {KB_ERR_VERSION, "invalid version or constraint"},
    {KB_ERR_TARGET, "invalid target"},
    {KB_ERR_INCOMPATIBLE, "no compatible artifact"},
    {KB_ERR_PROBE, "hardware probe failed"},
    {KB_ERR_TOOLCHAIN, "toolchain missing or unusable"},
    {KB_ERR_BUILD, "build failed"},
    {KB_ERR_ARCHIVE, "malformed archive"},
    {KB_ERR_NETWORK, "network error"},
    {KB_ERR_HTTP, "unexpected HTTP status"},
    {KB_ERR_REGISTRY, "registry error"},
    {KB_ERR_AUTH, "authentication failed"},
    {KB_ERR_DIGEST, "digest mismatch"},
    {KB_ERR_SIGNATURE, "signature missing, invalid or untrusted"},
    {KB_ERR_UNSAFE, "unsafe archive entry"},
    {KB_ERR_LOCKED, "locked by another process"},
    {KB_ERR_EXISTS, "already exists"},
    {KB_ERR_OFFLINE, "network needed but offline"},
    {KB_ERR_LOAD, "cannot load library"},
    {KB_ERR_ABI, "ABI mismatch"},
    {KB_ERR_CONFIG, "invalid configuration"},
    {KB_ERR_UNSUPPORTED, "not supported here"},
    {KB_ERR_CANCELLED, "cancelled"},
    {KB_ERR_TIMEOUT, "timed out"},
    {KB_ERR_NOSPACE, "no space left on device"},
    {KB_ERR_LIMIT, "limit exceeded"},
};

KB_EXTERN const char *kb_strerror(int code)
{
    for (size_t i = 0; i < KB_ARRAY_LEN(error_texts); i++)
        if (error_texts[i].code == code)
            return error_texts[i].text;
    return "unknown error code";
}

static void error_reset(kb_ctx *ctx)
{
    free(ctx->err_message);
    free(ctx->err_path);
    free(ctx->err_url);
    ctx->err_message = ctx->err_path = ctx->err_url = NULL;
    memset(&ctx->err, 0, sizeof(ctx->err));
    ctx->err.message = "";
}

static int error_vset(kb_ctx *ctx, int code, const char *path, const char *url, unsigned line,
                      unsigned column, const char *fmt, va_list ap)
{
    if (!ctx)
        return code;
    /* Copy first: path/url/args may point into the old record. */
    char *msg = NULL;
    kb_buf b = KB_BUF_INIT;
    if (kbi_buf_vprintf(&b, fmt, ap) == 0)
        msg = kbi_buf_detach(&b);
    char *p = kbi_strdup(path);
    char *u = kbi_strdup(url);
    error_reset(ctx);
    ctx->err_message = msg;
    ctx->err_path = p;
    ctx->err_url = u;
    ctx->err.code = code;
    ctx->err.message = msg ? msg : kb_strerror(code);
    ctx->err.path = p;
    ctx->err.url = u;
    ctx->err.line = line;
    ctx->err.column = column;
    return code;
}

int kbi_error_set(kb_ctx *ctx, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(ctx, code, NULL, NULL, 0, 0, fmt, ap);
    va_end(ap);
    return code;
}

int kbi_error_set_path(kb_ctx *ctx, int code, const char *path, unsigned line, unsigned column,
                       const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(ctx, code, path, NULL, line, column, fmt, ap);
    va_end(ap);
    return code;
}

int kbi_error_set_url(kb_ctx *ctx, int code, const char *url, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(ctx, code, NULL, url, 0, 0, fmt, ap);
    va_end(ap);
    return code;
}

int kbi_error_oom(kb_ctx *ctx)
{
    if (ctx) {
        error_reset(ctx);
        ctx->err.code = KB_ERR_NOMEM;
        ctx->err.message = kb_strerror(KB_ERR_NOMEM);
    }
    return KB_ERR_NOMEM;
}

void kbi_error_prefix(kb_ctx *ctx, const char *fmt, ...)
{
    if (!ctx || !ctx->err.code)
        return;
    kb_buf b = KB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    int rc = kbi_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (rc || kbi_buf_printf(&b, ": %s", ctx->err.message)) {
        kbi_buf_free(&b);
        return;
    }
    free(ctx->err_message);
    ctx->err_message = kbi_buf_detach(&b);
    ctx->err.message = ctx->err_message;
}

KB_EXTERN const kb_error *kb_ctx_last_error(const kb_ctx *ctx)
{
    static const kb_error none = {0, "", NULL, NULL, 0, 0};
    return ctx ? &ctx->err : &none;
}

KB_EXTERN void kb_ctx_clear_error(kb_ctx *ctx)
{
    if (ctx)
        error_reset(ctx);
}
