/* Helpers shared by the libFuzzer targets: a quiet ctx, NUL-terminated copies, temp files. */
#ifndef KB_FUZZ_COMMON_H
#define KB_FUZZ_COMMON_H

#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A fuzz finding: print why and abort so libFuzzer records the input. */
#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "invariant broken: " __VA_ARGS__);                                     \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A ctx that reads no config files and reports nowhere. */
static inline kb_ctx *fuzz_ctx(void)
{
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    o.no_config_files = 1;
    kb_ctx *ctx = NULL;
    if (kb_ctx_new(&ctx, &o) != 0)
        abort();
    return ctx;
}

/* The input as a C string (it stops at the first NUL, like every caller's string would). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Every error a parser returns names itself with a non-empty message. */
static inline void fuzz_check_error(const kb_ctx *ctx, int rc)
{
    const kb_error *e = kb_ctx_last_error(ctx);
    FUZZ_CHECK(rc < 0, "rc %d is not a negative kb_err", rc);
    FUZZ_CHECK(e->code == rc, "last error code %d differs from rc %d", e->code, rc);
    FUZZ_CHECK(e->message && e->message[0], "error %d has no message", rc);
}

/* A private temp folder for the process (libFuzzer runs inputs one after another). */
static inline const char *fuzz_tmpdir(char *buf, size_t size)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, size, "%s/kbpkg-fuzz-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(buf))
        abort();
    return buf;
}

/* Write data to path, aborting on failure (a harness problem, not a finding). */
static inline void fuzz_write(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
}

#endif
