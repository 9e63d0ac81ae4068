/* kbpkg gc: remove downloaded blobs nothing installed needs (fetched sources are kept). */
#include "cli.h"

int cmd_gc(cli *c, int argc, char **argv)
{
    (void)argv;
    if (argc > 1)
        return cli_usage_error(c, "gc", "gc takes no arguments");
    size_t removed = 0;
    uint64_t bytes = 0;
    int rc = kb_cache_collect_garbage(&removed, &bytes, c->ctx);
    if (rc)
        return cli_fail(c, rc);
    if (c->json)
        cli_json_print(json_pack("{s:b,s:I,s:I}", "ok", 1, "removed", (json_int_t)removed,
                                 "bytes_freed", (json_int_t)bytes));
    else
        cli_say(c, "removed %zu blob%s, freed %.1f MiB", removed, removed == 1 ? "" : "s",
                (double)bytes / (1024.0 * 1024.0));
    return CLI_EXIT_OK;
}
