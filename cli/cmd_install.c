/* kbpkg install org/name[@constraint]: probe, resolve, fetch, verify, install. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

json_t *cli_install_result_json(const kb_install_result *r, bool with_candidates)
{
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:s,s:s?,s:s?,s:s?,s:b,s:b}", "name", kb_install_result_name(r), "version",
        kb_install_result_version(r), "target", kb_install_result_target(r), "reason",
        kb_install_result_reason(r), "dir", kb_install_result_dir(r), "index_digest",
        kb_install_result_index_digest(r), "artifact_digest", kb_install_result_artifact_digest(r),
        "local_build", kb_install_result_local_build(r), "already_installed",
        kb_install_result_was_installed(r));
    if (!with_candidates || !o)
        return o;
    json_t *arr = json_array();
    for (size_t i = 0; i < kb_install_result_candidate_count(r); i++) {
        const char *target, *rank, *reason;
        int taken;
        kb_install_result_candidate(&target, &taken, &rank, &reason, r, i);
        json_array_append_new(arr, json_pack("{s:s,s:b,s:s,s:s}", "target", target, "taken", taken,
                                             "rank", rank, "reason", reason));
    }
    json_object_set_new(o, "candidates", arr);
    return o;
}

const cli_option cli_install_options[] = {
    {'t', "target", true, "T", "install this target id whatever the machine has (cross installs)"},
    {'n', "no-build", false, NULL, "fail instead of building from source when no artifact fits"},
    CLI_OPTION_GROUP(cli_trust_options),
    CLI_OPTION_GROUP(cli_device_options),
    CLI_OPTION_GROUP(cli_registry_options),
    CLI_OPTION_GROUP(cli_offline_options),
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_install(cli *c, int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_build(&g, cli_install_options);
    kb_install_options o = KB_INSTALL_OPTIONS_INIT;
    cli_trust trust = {0};
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 't')
            o.target = optarg;
        else if (opt == 'n')
            o.allow_build = 0;
        else if (!cli_trust_option(&trust, opt))
            return cli_option_error(c, "install", opt, g.longs, argv);
    }
    cli_trust_warn(c, &trust);
    o.allow_unsigned = trust.allow_unsigned;
    if (optind >= argc)
        return cli_usage_error(c, "install", "which package? e.g. kbpkg install radeonflow/gemm");
    json_t *all = c->json ? json_array() : NULL;
    int exit_code = CLI_EXIT_OK;
    for (int i = optind; i < argc; i++) {
        kb_install_result *r = NULL;
        int rc = kb_install_package(&r, c->ctx, argv[i], &o);
        if (rc) { /* what was installed before stays in the report */
            exit_code = cli_fail_package(c, rc, argv[i], CLI_SUGGEST_REGISTRY,
                                         all ? json_pack("{s:o}", "installed", all) : NULL);
            all = NULL;
            break;
        }
        if (all)
            json_array_append_new(all, cli_install_result_json(r, false));
        else
            cli_say(c, "%s %s %s %s: %s",
                    kb_install_result_was_installed(r) ? "up to date"
                    : kb_install_result_local_build(r) ? "built and installed"
                                                       : "installed",
                    kb_install_result_name(r), kb_install_result_version(r),
                    kb_install_result_target(r), kb_install_result_reason(r));
        kb_install_result_free(r);
    }
    if (all && exit_code == CLI_EXIT_OK)
        cli_json_print(json_pack("{s:b,s:o}", "ok", 1, "installed", all));
    else
        json_decref(all);
    return exit_code;
}
