/* Uses the installed public API: a ctx, a setting, an error record. */
#include <kbpkg/kbpkg.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    kb_ctx *ctx = NULL;
    if (kb_ctx_new(&ctx, NULL) != KB_OK)
        return 1;
    int rc = kb_ctx_set(ctx, "no.such.key", "1");
    int ok = rc == KB_ERR_CONFIG && strstr(kb_ctx_last_error(ctx)->message, "no.such.key");
    printf("kbpkg %s from the installed library: %s\n", kb_version(), ok ? "ok" : "FAIL");
    kb_ctx_free(ctx);
    return ok ? 0 : 1;
}
