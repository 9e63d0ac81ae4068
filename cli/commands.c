/* The one table of kbpkg commands; `kbpkg help` is generated from it. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* Keep sorted by name. Adding a command: one file in cli/, one row here. */
const cli_command cli_commands[] = {
    {"bench", cmd_bench, "build and run a package's benchmark against the vendor library",
     "kbpkg bench [DIR | org/name[@v]] [--target T]... [--quick] [--publish] " CLI_TRUST_USAGE
     " [--json]",
     "  prints shape, time, TFLOP/s or GB/s and the baseline per case (docs/bench.md); a\n"
     "  package name benches its installed artifacts, a folder builds from source\n" CLI_TRUST_HELP,
     cli_bench_options},
    {"build", cmd_build, "compile, verify and package a kernel package for its targets",
     "kbpkg build [DIR] [--target T]... [-j N] [--out DIR] [--json]",
     "  --target T, -t T     only targets whose id is or starts with T (cpu, cuda13-sm_80)\n"
     "  -j N                 build N targets at a time (default: build.jobs, else cores)\n"
     "  --out DIR            where artifacts go (default: DIR/dist)\n"
     "  exit 1 when any target failed; skipped targets say why",
     NULL},
    {"completion", cmd_completion, "print a shell completion script for bash or zsh",
     "kbpkg completion bash|zsh",
     "  bash                 source <(kbpkg completion bash), e.g. from ~/.bashrc\n"
     "  zsh                  source <(kbpkg completion zsh), or save as _kbpkg in $fpath\n"
     "  completes commands, their subcommands and flags, and installed package names",
     NULL},
    {"config", cmd_config, "show or change settings and where they come from",
     "kbpkg config [list] | get KEY | set KEY VALUE [--user|--project|--system]",
     "  list                 every setting, its value and its layer (and file); the default\n"
     "  get KEY              one setting's value\n"
     "  set KEY VALUE        write KEY into a config file (default: the user file); warns\n"
     "                       when a higher layer (project, env, flag) still overrides it\n"
     "  --user               <config.dir>/config.yaml\n"
     "  --project            ./kbpkg.yaml\n"
     "  --system             $KBPKG_SYSTEM_CONFIG or /etc/kbpkg/config.yaml",
     NULL},
    {"doctor", cmd_doctor, "check toolchains, GPUs, registry, cache and trust; say how to fix",
     "kbpkg doctor [--json]",
     "  each check passes, warns or fails, with the fix for anything not passing\n"
     "  --json               {ok, checks: [{check, status, message, fix}], summary}\n"
     "  exit 1 when a check failed; warnings alone exit 0",
     NULL},
    {"farm", cmd_farm, "build and publish every target a registry does not hold yet",
     "kbpkg farm DIR... [--registry R] [-j N] [--out DIR] [--json]\n"
     "       kbpkg farm plan DIR... [--pools FILE] [--format json|github]\n"
     "       kbpkg farm build DIR --target T [--stage] [-j N] [--out DIR] [--json]\n"
     "       kbpkg farm merge org/name@version... [--json]",
     "  DIR...               package folders, or folders searched for kernel.yaml (hidden,\n"
     "                       build* and dist folders are skipped)\n"
     "  -j N                 build N targets of a package at a time\n"
     "  --out DIR            where builds go (default: <cache>/farm)\n"
     "  a target whose build key the registry holds is not built again;\n"
     "  exit 1 when any row failed\n"
     "  plan                 what to build (one item per target, with its pool) and merge,\n"
     "                       without building; --format github: $GITHUB_OUTPUT lines chunks=N,\n"
     "                       chunk<i>= (matrices of at most 256 jobs), merges=\n"
     "  --pools FILE         the farm's pools and their toolchain ids (docs/farm.md)\n"
     "  build --stage        on a worker: build one target, push it and its staging tag, never\n"
     "                       the version tag or latest (without --stage: merge too)\n"
     "  merge                union of the version's index and its staged targets; a target\n"
     "                       staged with other bytes is a conflict, reported and skipped",
     NULL},
    {"fetch", cmd_fetch, "store a package's sources in the cache for offline builds",
     "kbpkg fetch [DIR] | kbpkg fetch --source org/name[@constraint]... " CLI_TRUST_USAGE,
     "  DIR                  a package folder: download its url sources and dependencies\n"
     "                       (verified by sha256, kept in <cache>/deps; builds then work "
     "offline)\n" CLI_TRUST_HELP,
     cli_fetch_options},
    {"gc", cmd_gc, "remove downloaded blobs that no install, fetch or lockfile needs",
     "kbpkg gc [--keep-lock FILE]... [--json]",
     "  kept too: fetched sources, and what the lockfiles of the gc.keep_locks setting pin\n"
     "  (default ./kbpkg.lock when present; --set gc.keep_locks= for none)",
     cli_gc_options},
    {"help", cmd_help, "show the commands, or one command's options",
     "kbpkg help [COMMAND] | help --man [COMMAND]",
     "  --man                the roff man page (kbpkg(1), or kbpkg-COMMAND(1))", NULL},
    {"hub", cmd_hub, "render a registry as a static web site to browse and search",
     "kbpkg hub render --out DIR [--registry R]",
     "  render               write DIR/index.html and one page per package\n"
     "  --out DIR            where the site goes (created; pages are replaced)\n"
     "  --registry R         the registry to render (default: the registry setting)",
     NULL},
    {"import", cmd_import, "turn a Hugging Face kernel-builder project into a kbpkg package",
     "kbpkg import PROJECT DIR [--name org/name] [--json]",
     "  PROJECT              a kernel-builder project (its build.toml is read)\n"
     "  DIR                  the new package folder (must not hold a kernel.yaml)\n"
     "  prints what was not carried over: the torch bindings, kernel-builder's dependencies,\n"
     "  keys kbpkg has no place for",
     cli_import_options},
    {"info", cmd_info, "versions, summary and targets of a package in the registry",
     "kbpkg info org/name[@constraint] [--json]", "", NULL},
    {"inspect", cmd_inspect, "show a library's or artifact's exports, libc needs and GPU code",
     "kbpkg inspect FILE [--json]",
     "  FILE                 an ELF shared library, or a .tar.zst artifact (its lib/*.so are\n"
     "                       inspected too)\n"
     "  --json               machine-readable output",
     NULL},
    {"install", cmd_install, "install the best artifact of a package for this machine",
     "kbpkg install org/name[@constraint]... [--target T] [--no-build] " CLI_TRUST_USAGE,
     CLI_TRUST_HELP "\n  --device D, --registry R, --offline: see 'kbpkg --help'",
     cli_install_options},
    {"key", cmd_key, "create, trust, list, revoke and export package signing keys",
     "kbpkg key generate [--name N] | trust FILE | list | revoke ID [--reason R] | export ID",
     "  generate [--name N]  a new ed25519 key; prints its id (the default when none is)\n"
     "  trust FILE           trust signatures by the ed25519 public key in a PEM file\n"
     "  list                 every key: id, private/public, default, revoked (--json)\n"
     "  revoke ID            never trust ID again (--reason R is recorded)\n"
     "  export ID            print ID's public key (PEM) to share",
     NULL},
    {"list", cmd_list, "list installed packages", "kbpkg list [org/name] [--json]", "", NULL},
    {"lock", cmd_lock, "pin package versions and artifact digests in kbpkg.lock",
     "kbpkg lock org/name[@constraint]... [--target T]... [--file F] [--registry "
     "R] " CLI_TRUST_USAGE,
     "  each version's signature is checked under the trust policy before it is "
     "pinned\n" CLI_TRUST_HELP,
     cli_lock_options},
    {"login", cmd_login, "check and store a user and password for a registry",
     "kbpkg login REGISTRY [--username U] [--password-stdin]",
     "  REGISTRY             oci://host[:port] (credentials are kept per host)\n"
     "  --username U         the user (default $KBPKG_REGISTRY_USER)\n"
     "  --password-stdin     read the password from stdin instead of prompting",
     NULL},
    {"logout", cmd_logout, "forget the credentials stored for a registry", "kbpkg logout REGISTRY",
     "  REGISTRY             oci://host[:port]", NULL},
    {"manifest", cmd_manifest, "validate kernel.yaml manifests", "kbpkg manifest check PATH...",
     "  check PATH...        validate each kernel.yaml (or folder holding one);\n"
     "                       exit 5 when any is invalid",
     NULL},
    {"new", cmd_new, "create a new kernel package that builds and tests on CPU",
     "kbpkg new org/name [DIR]", "  DIR                  where to create it (default: name)", NULL},
    {"probe", cmd_probe, "show the GPUs, CPU level and OS that kernels are chosen for",
     "kbpkg probe [--json]",
     "  --json      {host: {cpu, level, os, glibc},\n"
     "               devices: [{backend, index, arch, name, memory_bytes, pci_id, runtime}],\n"
     "               drivers: {cuda, hip_runtime, hip_driver},\n"
     "               notes: [{source, message}], overridden}\n"
     "              strings are \"\" when unknown; runtime is \"any\" for an override without one\n"
     "  --device D  pretend the machine has device D instead of probing (none: no GPU)\n"
     "  --set probe.cpu=x86_64_v3  pretend the CPU is at that level",
     NULL},
    {"publish", cmd_publish, "push a package's artifacts and source to a registry",
     "kbpkg publish DIR [--registry R] [--out DIR] [--force] [--target T]... [--json]",
     "  --out DIR            where built artifacts are (default: DIR/dist, as kbpkg build);\n"
     "                       when none of this version is there (or they are stale), builds\n"
     "  --target T, -t T     only targets whose id is or starts with T\n"
     "  --force              replace a target published with different bytes",
     NULL},
    {"resolve", cmd_resolve, "say which target this machine would install, and why",
     "kbpkg resolve org/name[@constraint] [--explain] [--target T] [--no-build] " CLI_TRUST_USAGE,
     CLI_TRUST_HELP, cli_resolve_options},
    {"search", cmd_search, "find packages in the registry by name", "kbpkg search [TERM] [--json]",
     "", NULL},
    {"sync", cmd_sync, "install exactly what kbpkg.lock pins",
     "kbpkg sync [--file F] [--offline] " CLI_TRUST_USAGE,
     CLI_TRUST_HELP
     "\n"
     "  --offline            open no network connection: pinned artifacts already installed\n"
     "                       are kept; one missing from a remote registry is an error",
     cli_sync_options},
    {"targets", cmd_targets, "list the targets kbpkg builds and whether each fits a device",
     "kbpkg targets [--json] [--device D] [TARGET...]",
     "--device D   also say whether each target runs on D (sm_86, gfx1030@rocm5.2, none)\n"
     "TARGET...    check only these target ids; exit 3 when one does not fit --device",
     NULL},
    {"test", cmd_test, "build and run a package's test on every target this machine runs",
     "kbpkg test [DIR] [--target T]... [--json]",
     "  exit 1 when a test failed; targets that cannot run here are skipped with the reason",
     cli_test_options},
    {"toolchains", cmd_toolchains, "list the compilers found, their versions and archs",
     "kbpkg toolchains [--json]", "", NULL},
    {"uninstall", cmd_uninstall, "remove installed packages",
     "kbpkg uninstall org/name[@version]... [--target T]", "", cli_uninstall_options},
    {"verify", cmd_verify, "re-hash installed files against their install records",
     "kbpkg verify [org/name] [--json]", "", NULL},
};

const size_t cli_command_count = sizeof(cli_commands) / sizeof(cli_commands[0]);

const cli_command *cli_find_command(const char *name)
{
    for (size_t i = 0; i < cli_command_count; i++)
        if (strcmp(cli_commands[i].name, name) == 0)
            return &cli_commands[i];
    return NULL;
}

/* Keep in the order `kbpkg help` shows them. */
const cli_global_option cli_global_options[] = {
    {"--json", NULL, NULL, "machine-readable output on stdout (no progress on stderr)"},
    {"--quiet", "-q", NULL, "print nothing but errors (no progress either)"},
    {"--verbose", "-v", NULL, "also print HTTP requests, files read and compiler command lines"},
    {"--no-color", NULL, NULL, "never color the output (NO_COLOR is honoured too)"},
    {"--registry", NULL, "R", "registry: layout folder, file://, oci://host/ns, https://"},
    {"--device", NULL, "D",
     "pretend the machine has device D (repeatable): sm_86, gfx1030@rocm5.2, none"},
    {"--cache", NULL, "DIR", "cache folder (default $KBPKG_CACHE or ~/.cache/kbpkg)"},
    {"--offline", NULL, NULL, "never open a network connection"},
    {"--insecure", NULL, NULL, "allow plain http to non-loopback registries"},
    {"--set", NULL, "KEY=VALUE", "set any configuration key for this run"},
    {"--version", NULL, NULL, "print the version"},
    {"--help", "-h", NULL, "this help; COMMAND --help: that command's options"},
};

const size_t cli_global_option_count = sizeof(cli_global_options) / sizeof(cli_global_options[0]);

const cli_global_option *cli_find_global_option(const char *arg)
{
    for (size_t i = 0; i < cli_global_option_count; i++) {
        const cli_global_option *o = &cli_global_options[i];
        if (strcmp(o->name, arg) == 0 || (o->short_name && strcmp(o->short_name, arg) == 0))
            return o;
    }
    return NULL;
}

void cli_global_option_label(const cli_global_option *o, char *out, size_t size)
{
    snprintf(out, size, "%s%s%s%s%s", o->short_name ? o->short_name : "", o->short_name ? ", " : "",
             o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}
