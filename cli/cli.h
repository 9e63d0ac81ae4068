/* Shared pieces of the kbpkg command line: the command table, output modes, helpers. */
#ifndef KB_CLI_H
#define KB_CLI_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kbpkg/kbpkg.h"
#include "progress.h"

/* Process exit codes (documented in docs/cli.md). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILURE = 1,      /* the operation failed; the message says why */
    CLI_EXIT_USAGE = 2,        /* bad command line */
    CLI_EXIT_NOT_FOUND = 3,    /* package, version or compatible artifact not found */
    CLI_EXIT_VERIFY = 4,       /* digest, signature or ABI check failed */
    CLI_EXIT_INVALID_INPUT = 5 /* bad manifest, archive or configuration */
};

typedef struct cli {
    kb_ctx *ctx;
    bool json;      /* machine-readable output on stdout */
    bool quiet;     /* nothing but errors */
    bool verbose;   /* debug log: HTTP requests, compiler command lines */
    bool color;     /* stderr colors (never with NO_COLOR or when stderr is no terminal) */
    bool color_out; /* stdout colors (never with NO_COLOR or when stdout is no terminal) */
    bool tty;       /* stderr is a terminal: progress bars */
    const char *argv0;
    cli_progress *progress; /* stderr's progress display; every stderr line goes through it */
} cli;

/* One option of a command, declared once: the command's getopt_long tables, its usage line, its
 * help, its man page and the completion scripts are all made from its rows (cli/options.c). */
typedef struct cli_option {
    int key;          /* what getopt_long returns for it: the command switches on this */
    const char *name; /* "target" (typed --target) */
    bool short_form;  /* -<key> works too ("-t T") */
    const char *arg;  /* "T" when it takes a value, else NULL */
    const char *help; /* a '\n' continues it on the next line */
    unsigned flags;   /* CLI_OPT_* */
    const struct cli_option *group; /* a shared group's rows in place of this row (name NULL) */
} cli_option;
enum {
    CLI_OPT_REPEAT = 1,  /* may be given more than once: "[--target T]..." */
    CLI_OPT_REQUIRED = 2 /* the (sub)command needs it: "--out DIR", no brackets */
};
/* Keys of options with no one-letter form. Global options (CLI_KEY_GLOBAL and up) are taken
 * out of argv by main before the command parses; a command lists one (--json, --device) in its
 * table, through its group, to say it uses it. */
enum {
    CLI_KEY_ALLOW_UNSIGNED = 0x100,
    CLI_KEY_GLOBAL = 0x200,
    CLI_KEY_JSON,
    CLI_KEY_NO_COLOR,
    CLI_KEY_REGISTRY,
    CLI_KEY_DEVICE,
    CLI_KEY_CACHE,
    CLI_KEY_OFFLINE,
    CLI_KEY_INSECURE,
    CLI_KEY_SET,
    CLI_KEY_VERSION
};
#define CLI_OPTION_GROUP(rows)                                                                     \
    {                                                                                              \
        0, NULL, false, NULL, NULL, 0, (rows)                                                      \
    }
#define CLI_OPTIONS_END                                                                            \
    {                                                                                              \
        0, NULL, false, NULL, NULL, 0, NULL                                                        \
    }
#define CLI_OPTIONS_MAX 24
/* A table's rows with its groups expanded, in order (at most CLI_OPTIONS_MAX). */
typedef struct cli_option_list {
    const cli_option *rows[CLI_OPTIONS_MAX];
    size_t count;
} cli_option_list;
void cli_options_flatten(cli_option_list *out, const cli_option *options);
/* getopt_long's tables made from a command's options (the global ones left out: main took
 * them). */
typedef struct cli_getopt {
    struct option longs[CLI_OPTIONS_MAX + 1];
    char shorts[2 * CLI_OPTIONS_MAX + 2]; /* ":t:j:": the leading ':' keeps getopt quiet */
} cli_getopt;
/* One operand (positional argument) of a command, declared in the table with its options. */
typedef struct cli_arg {
    const char *name; /* "DIR", "org/name[@constraint]" */
    unsigned flags;   /* CLI_ARG_* */
    const char *help; /* NULL: the synopsis names it, the option list does not */
} cli_arg;
enum {
    CLI_ARG_OPTIONAL = 1, /* "[DIR]" */
    CLI_ARG_REPEAT = 2,   /* "PATH..." */
    CLI_ARG_PACKAGE = 4   /* a package name: completion offers the installed ones */
};
#define CLI_ARGS_END                                                                               \
    {                                                                                              \
        NULL, 0, NULL                                                                              \
    }
/* A command or a subcommand: what `kbpkg help`, its --json, the usage lines, man pages and
 * completion are generated from, and what main dispatches on. */
typedef struct cli_command {
    const char *name;
    /* argv[0] is the (sub)command name; NULL: a subcommand is required. A command with
     * subcommands runs this when argv[1] names none of them. */
    int (*run)(cli *c, int argc, char **argv);
    const char *summary;       /* one line for `kbpkg help` */
    const cli_arg *args;       /* its operands, ending with CLI_ARGS_END; NULL: none */
    const cli_option *options; /* ending with CLI_OPTIONS_END; every command has a table */
    const struct cli_command *subcommands; /* ending with a row whose name is NULL; or NULL */
    const char *help; /* prose after the operands and options (no option lists) */
} cli_command;
/* Fill g from options (at most CLI_OPTIONS_MAX rows before CLI_OPTIONS_END). */
void cli_getopt_build(cli_getopt *g, const cli_option *options);
/* Parse a command that takes no option of its own (its table holds global groups only): every
 * option is refused as getopt_long would; on success *first is the first operand. */
int cli_parse_none(int *first, cli *c, const char *command, const cli_option *options, int argc,
                   char **argv);
/* The synopsis: "kbpkg NAME OPERANDS [OPTIONS]", one line per (sub)command that runs, lines
 * joined by "\n       " (under "usage: "). Owned by the caller; NULL when out of memory. */
char *cli_usage_text(const cli_command *cmd);
/* The synopsis of a command ("key") or subcommand ("key revoke"); NULL when there is none. */
char *cli_usage_for(const char *path);
/* The operands, options, prose and subcommands, as `kbpkg help COMMAND` shows them below the
 * usage. */
void cli_print_options(FILE *out, const cli_command *cmd);
/* The same text, owned by the caller (for --json and man pages); NULL when out of memory. */
char *cli_options_text(const cli_command *cmd);
/* Its own flags ("--target", "-t") for completion, through add(word, payload); a subcommand's
 * are its own (completion offers them once the subcommand is on the line). */
void cli_option_words(const cli_command *cmd, void (*add)(const char *word, void *payload),
                      void *payload);
/* A usage error for cmd's argv that names no subcommand: the option that is not one, the
 * subcommands when none is given, or the closest to the word given. */
int cli_subcommand_error(cli *c, const cli_command *cmd, int argc, char **argv);
/* Run cmd: the subcommand argv[1] names, else cmd->run, else cli_subcommand_error. */
int cli_run_command(cli *c, const cli_command *cmd, int argc, char **argv);

/* -j N (--jobs N): N from 1 to 256 into *out, else a usage error of command. */
int cli_parse_jobs(cli *c, const char *command, const char *num, unsigned *out);
/* Shared groups, written once (cli/commands.c, cli/trust_options.c) and referenced with
 * CLI_OPTION_GROUP from the tables that take them. */
extern const cli_option cli_json_options[];
extern const cli_option cli_device_options[];
extern const cli_option cli_registry_options[];
extern const cli_option cli_offline_options[];
extern const cli_option cli_target_filter_options[];
extern const cli_option cli_jobs_options[];
extern const cli_option cli_trust_options[];
extern const cli_option cli_no_options[];

/* The option tables, each in its cmd_<name>.c. */
extern const cli_option cli_bench_options[];
extern const cli_option cli_build_options[];
extern const cli_option cli_fetch_options[];
extern const cli_option cli_farm_options[];
extern const cli_option cli_gc_options[];
extern const cli_option cli_help_options[];
extern const cli_option cli_import_options[];
extern const cli_option cli_install_options[];
extern const cli_option cli_lock_options[];
extern const cli_option cli_login_options[];
extern const cli_option cli_probe_options[];
extern const cli_option cli_publish_options[];
extern const cli_option cli_resolve_options[];
extern const cli_option cli_sync_options[];
extern const cli_option cli_targets_options[];
extern const cli_option cli_test_options[];
extern const cli_option cli_uninstall_options[];
/* Subcommand tables, each in its cmd_<name>.c. */
extern const cli_command cli_completion_subcommands[];
extern const cli_command cli_config_subcommands[];
extern const cli_command cli_farm_subcommands[];
extern const cli_command cli_hub_subcommands[];
extern const cli_command cli_key_subcommands[];
extern const cli_command cli_manifest_subcommands[];

/* Command entry points, one file each in cli/ (cmd_<name>.c). */
int cmd_build(cli *c, int argc, char **argv);
int cmd_completion(cli *c, int argc, char **argv);
int cmd_config(cli *c, int argc, char **argv);
int cmd_doctor(cli *c, int argc, char **argv);
int cmd_farm(cli *c, int argc, char **argv);
int cmd_fetch(cli *c, int argc, char **argv);
int cmd_gc(cli *c, int argc, char **argv);
int cmd_help(cli *c, int argc, char **argv);
int cmd_info(cli *c, int argc, char **argv);
int cmd_inspect(cli *c, int argc, char **argv);
int cmd_install(cli *c, int argc, char **argv);
int cmd_list(cli *c, int argc, char **argv);
int cmd_lock(cli *c, int argc, char **argv);
int cmd_login(cli *c, int argc, char **argv);
int cmd_logout(cli *c, int argc, char **argv);
int cmd_import(cli *c, int argc, char **argv);
int cmd_new(cli *c, int argc, char **argv);
int cmd_probe(cli *c, int argc, char **argv);
int cmd_publish(cli *c, int argc, char **argv);
int cmd_resolve(cli *c, int argc, char **argv);
int cmd_search(cli *c, int argc, char **argv);
int cmd_sync(cli *c, int argc, char **argv);
int cmd_targets(cli *c, int argc, char **argv);
int cmd_test(cli *c, int argc, char **argv);
int cmd_bench(cli *c, int argc, char **argv);
int cmd_toolchains(cli *c, int argc, char **argv);
int cmd_uninstall(cli *c, int argc, char **argv);
int cmd_verify(cli *c, int argc, char **argv);

/* The one table of commands (cli/commands.c). */
extern const cli_command cli_commands[];
extern const size_t cli_command_count;
/* A command ("key"), or one of its subcommands ("key revoke"); NULL when there is none. */
const cli_command *cli_find_command(const char *name);
/* The one table of global options (cli/commands.c), valid before or after any command: `kbpkg
 * help`, kbpkg(1) and the completion scripts are generated from it; main.c parses them. */
extern const cli_option cli_global_options[];
/* "--registry", "--registry=R" or "-q": its row, or NULL when arg is not a global option. */
const cli_option *cli_find_global_option(const char *arg);
/* "--target T, -t T" or "-q, --quiet": how help and man pages name an option. */
void cli_option_label(const cli_option *o, bool short_first, char *out, size_t size);
/* The trust options (cli/trust_options.c): the one group every command that admits a package
 * index through the trust policy lists in its table (CLI_OPTION_GROUP(cli_trust_options)). */
typedef struct cli_trust {
    bool allow_unsigned; /* admit packages that have no signature at all */
} cli_trust;
/* Record key in *t when it is a trust option; false when it is not one. */
bool cli_trust_option(cli_trust *t, int key);
/* The warning every command gives when unsigned packages are allowed (on stderr). */
void cli_trust_warn(cli *c, const cli_trust *t);
/* Suggestions for typos (cli/suggest.c). The candidate closest to word by edit distance
 * (swaps of neighbours count one), or NULL when none is close enough to be a typo. */
const char *cli_closest(const char *word, const char *const *candidates, size_t count);
/* The closest command name to a typo, or NULL. */
const char *cli_suggest_command(const char *name);
/* Where package names to suggest come from. */
enum { CLI_SUGGEST_REGISTRY = 1, CLI_SUGGEST_INSTALLED = 2 };
/* The closest known package to ref ("org/name[@constraint]"; "name" alone matches the part
 * after the org), with ref's constraint kept; NULL when ref's name is known or none is close.
 * Owned by the caller. */
char *cli_suggest_package(cli *c, const char *ref, unsigned from);
/* cli_fail_report for an error about package ref: a not-found (or a name without its org) adds
 * "did you mean org/name?" (error.suggestion in --json) when a close name exists in from.
 * report (owned) may be NULL. */
int cli_fail_package(cli *c, int code, const char *ref, unsigned from, json_t *report);
/* A package name a command was asked about (list, verify) that is not installed: not found
 * (exit 3), with "did you mean" from the installed names. report (owned) may be NULL. */
int cli_fail_not_installed(cli *c, const char *name, json_t *report);

/* Typos on the command line (cli/usage_hints.c), reported through cli_usage_error. An unknown
 * subcommand of command, with the closest of subcommands ("did you mean 'list'?"). */
int cli_unknown_subcommand(cli *c, const char *command, const char *word,
                           const char *const *subcommands, size_t count);
/* getopt_long returned opt ('?' or ':'; the optstring starts with ':' and main sets opterr to
 * 0, so getopt printed nothing): name the option as typed, and the closest of long_opts. */
int cli_option_error(cli *c, const char *command, int opt, const struct option *long_opts,
                     char **argv);

/* The version of the --json output: every top-level object carries it as "kbpkg_json".
 * Keys are only ever added within a version; a rename, removal or type change bumps it.
 * docs/json.md describes every command's output, docs/json/ holds the schemas. */
#define CLI_JSON_VERSION 1

/* The ctx's event callback: notices and warnings on stderr (quiet under --json and -q); tools
 * that report events of their own (tools/hub) hand them here too. */
void cli_on_event(const kb_event *ev, void *payload);

/* Report the ctx's last error as "kbpkg: <message>" on stderr, above the progress display
 * (and, with --json, as {"ok": false, "error": {...}} on stdout) and map the kb_err code to an
 * exit code. Every failure goes through this one path (cli/output.c). */
int cli_fail(cli *c, int code);
/* The same, with the command's partial report (owned) as the --json document: what was done
 * before the failure stays visible. */
int cli_fail_report(cli *c, int code, json_t *report);
/* The same with a message of our own for the kb_err code. */
int cli_failf(cli *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The ctx's last error, copied: later calls on the ctx (looking up names to suggest) replace
 * it. */
typedef struct cli_error_copy {
    int code;
    char *message;
    char *path;
    char *url;
    unsigned line;
    unsigned column;
} cli_error_copy;
void cli_error_save(cli_error_copy *out, cli *c, int code);
void cli_error_copy_free(cli_error_copy *e);
/* cli_fail_report for a saved error; with a suggestion, "kbpkg: did you mean X?" follows the
 * message, and --json gets it as error.suggestion. report (owned) may be NULL. */
int cli_fail_saved(cli *c, const cli_error_copy *e, const char *suggestion, json_t *report);
/* A line on stderr, above the progress display (which is redrawn below it). */
void cli_eprint(cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A bad command line: the message and the command's usage on stderr, exit 2 (and, with
 * --json, the error object with "usage"). */
int cli_usage_error(cli *c, const char *command, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int cli_exit_code(int kb_code);
/* Print a JSON value on stdout (indented, newline) and take ownership of it. */
void cli_json_print(json_t *value);
/* A plain line on stdout unless --quiet or --json. */
void cli_say(cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Terminal color wrappers: empty strings when colors are off. cli_color is for stderr lines,
 * cli_color_out for stdout: each stream is colored only when it is itself a terminal, so
 * `kbpkg doctor > file` run from a terminal writes no escape codes into the file. */
const char *cli_color(cli *c, const char *sgr);
const char *cli_color_out(cli *c, const char *sgr);

/* JSON renderings shared by commands. */
json_t *cli_install_result_json(const kb_install_result *r, bool with_candidates);
json_t *cli_installed_json(const kb_installed_pkg *p);

/* Parse the common per-command flag --json / -h; returns 1 when handled. */
bool cli_is_help_flag(const char *arg);
/* The general help: usage, every command and every global option (cli/cmd_help.c). */
int cli_print_general_help(void);
int cli_print_command_help(const cli_command *cmd);
/* `kbpkg help key revoke`, `kbpkg key revoke --help`: one subcommand's usage line (with its
 * command's name) and options, not the whole command's. */
int cli_print_subcommand_help(const cli_command *cmd, const cli_command *sub);
/* roff man pages from the table (cli/man_page.c): kbpkg-<name>(1), and kbpkg(1). */
int cli_print_man_page(const cli_command *cmd);
int cli_print_man_index(void);

#endif
