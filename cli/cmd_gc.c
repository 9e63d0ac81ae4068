/* kbpkg gc [--keep-lock F]...: remove downloaded blobs nothing installed, fetched or locked
 * needs. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int cmd_gc(cli *c, int argc, char **argv)
{
    const char **locks = calloc((size_t)argc + 1, sizeof(*locks));
    if (!locks)
        return cli_fail(c, KB_ERR_NOMEM);
    kb_gc_options o = KB_GC_OPTIONS_INIT;
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        if (strcmp(argv[i], "--keep-lock") == 0 && i + 1 < argc)
            locks[o.keep_lock_count++] = argv[++i];
        else
            rc = cli_usage_error(c, "gc", "unknown or incomplete option '%s'", argv[i]);
    }
    o.keep_locks = locks;
    size_t removed = 0;
    uint64_t bytes = 0;
    if (!rc) {
        int err = kb_cache_collect_garbage(&removed, &bytes, c->ctx, &o);
        if (err)
            rc = cli_fail(c, err);
    }
    if (!rc && c->json)
        cli_json_print(json_pack("{s:b,s:I,s:I}", "ok", 1, "removed", (json_int_t)removed,
                                 "bytes_freed", (json_int_t)bytes));
    else if (!rc)
        cli_say(c, "removed %zu blob%s, freed %.1f MiB", removed, removed == 1 ? "" : "s",
                (double)bytes / (1024.0 * 1024.0));
    free(locks);
    return rc;
}
