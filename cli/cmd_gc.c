/* kbpkg gc [--keep-lock F]...: remove downloaded blobs nothing installed, fetched or locked
 * needs. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>

const cli_option cli_gc_options[] = {
    {'k', "keep-lock", false, "FILE",
     "also keep every blob FILE pins (a kbpkg.lock; must exist); repeatable"},
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_gc(cli *c, int argc, char **argv)
{
    const char **locks = calloc((size_t)argc + 1, sizeof(*locks));
    if (!locks)
        return cli_fail(c, KB_ERR_NOMEM);
    kb_gc_options o = KB_GC_OPTIONS_INIT;
    int rc = 0, opt;
    cli_getopt g;
    cli_getopt_build(&g, cli_gc_options);
    optind = 1;
    while (!rc && (opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 'k')
            locks[o.keep_lock_count++] = optarg;
        else
            rc = cli_option_error(c, "gc", opt, g.longs, argv);
    }
    if (!rc && optind < argc)
        rc = cli_usage_error(c, "gc", "unexpected argument '%s'", argv[optind]);
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
