/* The one table of kbpkg commands; `kbpkg help` is generated from it. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* Shared option groups: each written once, listed with CLI_OPTION_GROUP by the tables that
 * take it (the global table below too). */
const cli_option cli_json_options[] = {
    {CLI_KEY_JSON, "json", false, NULL,
     "machine-readable output on stdout (no progress on stderr)"},
    CLI_OPTIONS_END,
};
const cli_option cli_device_options[] = {
    {CLI_KEY_DEVICE, "device", false, "D",
     "pretend the machine has device D (repeatable): sm_86, gfx1030@rocm5.2, none", CLI_OPT_REPEAT},
    CLI_OPTIONS_END,
};
const cli_option cli_registry_options[] = {
    {CLI_KEY_REGISTRY, "registry", false, "R",
     "registry: layout folder, file://, oci://host/ns, https://"},
    CLI_OPTIONS_END,
};
const cli_option cli_offline_options[] = {
    {CLI_KEY_OFFLINE, "offline", false, NULL, "never open a network connection"},
    CLI_OPTIONS_END,
};
/* The targets of a package folder a command works on (build, test, bench, publish). */
const cli_option cli_target_filter_options[] = {
    {'t', "target", true, "T", "only targets whose id is or starts with T (cpu, cuda13-sm_80)",
     CLI_OPT_REPEAT},
    CLI_OPTIONS_END,
};
const cli_option cli_jobs_options[] = {
    {'j', "jobs", true, "N", "build N targets at a time (default: build.jobs, else cores)"},
    CLI_OPTIONS_END,
};
const cli_option cli_no_options[] = {
    CLI_OPTIONS_END,
};

/* Operands met more than once. */
#define ARG_PACKAGE_DIR                                                                            \
    {                                                                                              \
        "DIR", CLI_ARG_OPTIONAL, "the package folder (default: .)"                                 \
    }
#define ARG_INSTALLED_NAME                                                                         \
    {                                                                                              \
        "org/name", CLI_ARG_OPTIONAL | CLI_ARG_PACKAGE, "only this package (default: every one)"   \
    }

/* Keep sorted by name. Adding a command: one file in cli/, one row here. */
const cli_command cli_commands[] = {
    {
        .name = "bench",
        .run = cmd_bench,
        .summary = "build and run a package's benchmark against the vendor library",
        .args = (const cli_arg[]){{"DIR|org/name[@v]", CLI_ARG_OPTIONAL | CLI_ARG_PACKAGE,
                                   "a package folder (default: .), or an installed package"},
                                  CLI_ARGS_END},
        .options = cli_bench_options,
        .help =
            "  prints shape, time, TFLOP/s or GB/s and the baseline per case (docs/bench.md); a\n"
            "  package name benches its installed artifacts, a folder builds from source",
    },
    {
        .name = "build",
        .run = cmd_build,
        .summary = "compile, verify and package a kernel package for its targets",
        .args = (const cli_arg[]){ARG_PACKAGE_DIR, CLI_ARGS_END},
        .options = cli_build_options,
        .help = "  exit 1 when any target failed; skipped targets say why",
    },
    {
        .name = "completion",
        .run = cmd_completion,
        .summary = "print a shell completion script for bash or zsh",
        .options = cli_no_options,
        .subcommands = cli_completion_subcommands,
        .help = "  completes commands, their subcommands and flags, and installed package names",
    },
    {
        .name = "config",
        .run = cmd_config,
        .summary = "show or change settings and where they come from",
        .options = cli_no_options,
        .subcommands = cli_config_subcommands,
        .help = "  without a subcommand: list",
    },
    {
        .name = "doctor",
        .run = cmd_doctor,
        .summary = "check toolchains, GPUs, registry, cache and trust; say how to fix",
        .options = cli_json_options,
        .help = "  each check passes, warns or fails, with the fix for anything not passing;\n"
                "  --json: {ok, checks: [{check, status, message, fix}], summary}\n"
                "  exit 1 when a check failed; warnings alone exit 0",
    },
    {
        .name = "farm",
        .run = cmd_farm,
        .summary = "build and publish every target a registry does not hold yet",
        .args = (const cli_arg[]){{"DIR", CLI_ARG_REPEAT,
                                   "package folders, or folders searched for kernel.yaml (hidden,\n"
                                   "build* and dist folders are skipped)"},
                                  CLI_ARGS_END},
        .options = cli_farm_options,
        .subcommands = cli_farm_subcommands,
        .help = "  a target whose build key the registry holds is not built again;\n"
                "  exit 1 when any row failed",
    },
    {
        .name = "fetch",
        .run = cmd_fetch,
        .summary = "store a package's sources in the cache for offline builds",
        .args = (const cli_arg[]){{"DIR", CLI_ARG_OPTIONAL,
                                   "a package folder: download its url sources and dependencies\n"
                                   "(verified by sha256, kept in <cache>/deps; builds then work "
                                   "offline)"},
                                  {"org/name[@constraint]",
                                   CLI_ARG_OPTIONAL | CLI_ARG_REPEAT | CLI_ARG_PACKAGE,
                                   "with --source: the packages whose source to keep"},
                                  CLI_ARGS_END},
        .options = cli_fetch_options,
    },
    {
        .name = "gc",
        .run = cmd_gc,
        .summary = "remove downloaded blobs that no install, fetch or lockfile needs",
        .options = cli_gc_options,
        .help =
            "  kept too: fetched sources, and what the lockfiles of the gc.keep_locks setting pin\n"
            "  (default ./kbpkg.lock when present; --set gc.keep_locks= for none)",
    },
    {
        .name = "help",
        .run = cmd_help,
        .summary = "show the commands, or one command's options",
        .args = (const cli_arg[]){{"COMMAND", CLI_ARG_OPTIONAL, "that command's usage and options"},
                                  {"SUBCOMMAND", CLI_ARG_OPTIONAL,
                                   "that subcommand's alone (help key revoke)"},
                                  CLI_ARGS_END},
        .options = cli_help_options,
    },
    {
        .name = "hub",
        .summary = "render a registry as a static web site to browse and search",
        .options = cli_no_options,
        .subcommands = cli_hub_subcommands,
    },
    {
        .name = "import",
        .run = cmd_import,
        .summary = "turn a Hugging Face kernel-builder project into a kbpkg package",
        .args =
            (const cli_arg[]){{"PROJECT", 0, "a kernel-builder project (its build.toml is read)"},
                              {"DIR", 0, "the new package folder (must not hold a kernel.yaml)"},
                              CLI_ARGS_END},
        .options = cli_import_options,
        .help = "  prints what was not carried over: the torch bindings, kernel-builder's "
                "dependencies,\n  keys kbpkg has no place for",
    },
    {
        .name = "info",
        .run = cmd_info,
        .summary = "versions, summary and targets of a package in the registry",
        .args = (const cli_arg[]){{"org/name[@constraint]", CLI_ARG_PACKAGE, NULL}, CLI_ARGS_END},
        .options = cli_json_options,
    },
    {
        .name = "inspect",
        .run = cmd_inspect,
        .summary = "show a library's or artifact's exports, libc needs and GPU code",
        .args =
            (const cli_arg[]){{"FILE", 0,
                               "an ELF shared library, or a .tar.zst artifact (its lib/*.so are\n"
                               "inspected too)"},
                              CLI_ARGS_END},
        .options = cli_json_options,
    },
    {
        .name = "install",
        .run = cmd_install,
        .summary = "install the best artifact of a package for this machine",
        .args = (const cli_arg[]){{"org/name[@constraint]", CLI_ARG_REPEAT | CLI_ARG_PACKAGE, NULL},
                                  CLI_ARGS_END},
        .options = cli_install_options,
    },
    {
        .name = "key",
        .summary = "create, trust, list, revoke and export package signing keys",
        .options = cli_no_options,
        .subcommands = cli_key_subcommands,
    },
    {
        .name = "list",
        .run = cmd_list,
        .summary = "list installed packages",
        .args = (const cli_arg[]){ARG_INSTALLED_NAME, CLI_ARGS_END},
        .options = cli_json_options,
    },
    {
        .name = "lock",
        .run = cmd_lock,
        .summary = "pin package versions and artifact digests in kbpkg.lock",
        .args = (const cli_arg[]){{"org/name[@constraint]", CLI_ARG_REPEAT | CLI_ARG_PACKAGE, NULL},
                                  CLI_ARGS_END},
        .options = cli_lock_options,
        .help = "  each version's signature is checked under the trust policy before it is pinned",
    },
    {
        .name = "login",
        .run = cmd_login,
        .summary = "check and store a user and password for a registry",
        .args =
            (const cli_arg[]){{"REGISTRY", 0, "oci://host[:port] (credentials are kept per host)"},
                              CLI_ARGS_END},
        .options = cli_login_options,
    },
    {
        .name = "logout",
        .run = cmd_logout,
        .summary = "forget the credentials stored for a registry",
        .args = (const cli_arg[]){{"REGISTRY", 0, "oci://host[:port]"}, CLI_ARGS_END},
        .options = cli_no_options,
    },
    {
        .name = "manifest",
        .summary = "validate kernel.yaml manifests",
        .options = cli_no_options,
        .subcommands = cli_manifest_subcommands,
    },
    {
        .name = "new",
        .run = cmd_new,
        .summary = "create a new kernel package that builds and tests on CPU",
        .args = (const cli_arg[]){{"org/name", 0, NULL},
                                  {"DIR", CLI_ARG_OPTIONAL, "where to create it (default: name)"},
                                  CLI_ARGS_END},
        .options = cli_no_options,
    },
    {
        .name = "probe",
        .run = cmd_probe,
        .summary = "show the GPUs, CPU level and OS that kernels are chosen for",
        .options = cli_probe_options,
        .help =
            "  --json: {host: {cpu, level, os, glibc},\n"
            "          devices: [{backend, index, arch, name, memory_bytes, pci_id, runtime}],\n"
            "          drivers: {cuda, hip_runtime, hip_driver},\n"
            "          notes: [{source, message}], overridden}\n"
            "  strings are \"\" when unknown; runtime is \"any\" for a device given without one\n"
            "  --set probe.cpu=x86_64_v3 pretends the CPU is at that level",
    },
    {
        .name = "publish",
        .run = cmd_publish,
        .summary = "push a package's artifacts and source to a registry",
        .args = (const cli_arg[]){{"DIR", 0, "the package folder"}, CLI_ARGS_END},
        .options = cli_publish_options,
    },
    {
        .name = "resolve",
        .run = cmd_resolve,
        .summary = "say which target this machine would install, and why",
        .args = (const cli_arg[]){{"org/name[@constraint]", CLI_ARG_PACKAGE, NULL}, CLI_ARGS_END},
        .options = cli_resolve_options,
    },
    {
        .name = "search",
        .run = cmd_search,
        .summary = "find packages in the registry by name",
        .args =
            (const cli_arg[]){{"TERM", CLI_ARG_OPTIONAL, "part of a name (default: every package)"},
                              CLI_ARGS_END},
        .options = cli_json_options,
    },
    {
        .name = "sync",
        .run = cmd_sync,
        .summary = "install exactly what kbpkg.lock pins",
        .options = cli_sync_options,
        .help = "  with --offline no network connection is opened: pinned artifacts already\n"
                "  installed are kept; one missing from a remote registry is an error",
    },
    {
        .name = "targets",
        .run = cmd_targets,
        .summary = "list the targets kbpkg builds and whether each fits a device",
        .args = (const cli_arg[]){{"TARGET", CLI_ARG_OPTIONAL | CLI_ARG_REPEAT,
                                   "check only these target ids; exit 3 when one does not fit "
                                   "--device"},
                                  CLI_ARGS_END},
        .options = cli_targets_options,
        .help = "  with --device, also says whether each target runs on it",
    },
    {
        .name = "test",
        .run = cmd_test,
        .summary = "build and run a package's test on every target this machine runs",
        .args = (const cli_arg[]){ARG_PACKAGE_DIR, CLI_ARGS_END},
        .options = cli_test_options,
        .help = "  exit 1 when a test failed; targets that cannot run here are skipped with the "
                "reason",
    },
    {
        .name = "toolchains",
        .run = cmd_toolchains,
        .summary = "list the compilers found, their versions and archs",
        .options = cli_json_options,
    },
    {
        .name = "uninstall",
        .run = cmd_uninstall,
        .summary = "remove installed packages",
        .args = (const cli_arg[]){{"org/name[@version]", CLI_ARG_REPEAT | CLI_ARG_PACKAGE, NULL},
                                  CLI_ARGS_END},
        .options = cli_uninstall_options,
    },
    {
        .name = "verify",
        .run = cmd_verify,
        .summary = "re-hash installed files against their install records",
        .args = (const cli_arg[]){ARG_INSTALLED_NAME, CLI_ARGS_END},
        .options = cli_json_options,
    },
};

const size_t cli_command_count = sizeof(cli_commands) / sizeof(cli_commands[0]);

const cli_command *cli_find_command(const char *name)
{
    size_t len = strcspn(name, " ");
    for (size_t i = 0; i < cli_command_count; i++) {
        const cli_command *cmd = &cli_commands[i];
        if (strncmp(cmd->name, name, len) != 0 || cmd->name[len] != '\0')
            continue;
        if (name[len] == '\0')
            return cmd;
        for (const cli_command *s = cmd->subcommands; s && s->name; s++)
            if (strcmp(s->name, name + len + 1) == 0)
                return s;
        return NULL;
    }
    return NULL;
}

/* Keep in the order `kbpkg help` shows them. */
const cli_option cli_global_options[] = {
    CLI_OPTION_GROUP(cli_json_options),
    {'q', "quiet", true, NULL, "print nothing but errors (no progress either)"},
    {'v', "verbose", true, NULL, "also print HTTP requests, files read and compiler command lines"},
    {CLI_KEY_NO_COLOR, "no-color", false, NULL,
     "never color the output (NO_COLOR is honoured too)"},
    CLI_OPTION_GROUP(cli_registry_options),
    CLI_OPTION_GROUP(cli_device_options),
    {CLI_KEY_CACHE, "cache", false, "DIR", "cache folder (default $KBPKG_CACHE or ~/.cache/kbpkg)"},
    CLI_OPTION_GROUP(cli_offline_options),
    {CLI_KEY_INSECURE, "insecure", false, NULL, "allow plain http to non-loopback registries"},
    {CLI_KEY_SET, "set", false, "KEY=VALUE", "set any configuration key for this run"},
    {CLI_KEY_VERSION, "version", false, NULL, "print the version"},
    {'h', "help", true, NULL, "this help; COMMAND --help: that command's options"},
    CLI_OPTIONS_END,
};

const cli_option *cli_find_global_option(const char *arg)
{
    cli_option_list all;
    cli_options_flatten(&all, cli_global_options);
    size_t len = strcspn(arg, "=");
    for (size_t i = 0; i < all.count; i++) {
        const cli_option *o = all.rows[i];
        if (len > 2 && arg[0] == '-' && arg[1] == '-' && strncmp(arg + 2, o->name, len - 2) == 0 &&
            o->name[len - 2] == '\0' && (arg[len] == '\0' || o->arg))
            return o;
        if (o->short_form && arg[0] == '-' && arg[1] == o->key && arg[2] == '\0')
            return o;
    }
    return NULL;
}
