/* kbpkg resolve org/name [--explain] [--allow-unsigned]: which target this machine would get, and
 * why. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

const cli_option cli_resolve_options[] = {
    {'e', "explain", false, NULL, "every candidate with the reason it was taken or refused"},
    {'t', "target", true, "T", "resolve this target id whatever the machine has"},
    {'n', "no-build", false, NULL, "never pick a build from source"},
    CLI_OPTION_GROUP(cli_trust_options),
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_resolve(cli *c, int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_build(&g, cli_resolve_options);
    kb_install_options o = KB_INSTALL_OPTIONS_INIT;
    cli_trust trust = {0}; /* the trust policy applies here as in install: same options */
    bool explain = false;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 'e')
            explain = true;
        else if (opt == 't')
            o.target = optarg;
        else if (opt == 'n')
            o.allow_build = 0;
        else if (!cli_trust_option(&trust, opt))
            return cli_option_error(c, "resolve", opt, g.longs, argv);
    }
    cli_trust_warn(c, &trust);
    o.allow_unsigned = trust.allow_unsigned;
    if (optind + 1 != argc)
        return cli_usage_error(c, "resolve", "give one package, e.g. radeonflow/gemm@^1");
    kb_install_result *r = NULL;
    int rc = kb_resolve_package(&r, c->ctx, argv[optind], &o);
    if (rc)
        return cli_fail_package(c, rc, argv[optind], CLI_SUGGEST_REGISTRY, NULL);
    if (c->json) {
        cli_json_print(cli_install_result_json(r, true));
        kb_install_result_free(r);
        return CLI_EXIT_OK;
    }
    printf("%s %s -> %s (%s)\n", kb_install_result_name(r), kb_install_result_version(r),
           kb_install_result_target(r), kb_install_result_reason(r));
    if (explain) {
        printf("candidates, best first:\n");
        for (size_t i = 0; i < kb_install_result_candidate_count(r); i++) {
            const char *target, *rank, *reason;
            int taken;
            kb_install_result_candidate(&target, &taken, &rank, &reason, r, i);
            printf("  %s %-36s %-11s %s\n", taken ? "*" : " ", target, rank, reason);
        }
    }
    kb_install_result_free(r);
    return CLI_EXIT_OK;
}
