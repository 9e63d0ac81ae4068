/* The kbpkg binary: version, help, unknown commands, exit codes. */
#include "kbtest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(cli, version_prints_library_version)
{
    const char *args[] = {"--version", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 0);
    cr_expect(strstr(r.out, KBPKG_VERSION_STRING), "got: %s", r.out);
    kbt_run_free(&r);
    const char *jargs[] = {"--version", "--json", NULL};
    r = kbt_kbpkg(NULL, jargs);
    cr_expect(strstr(r.out, "\"version\": \"" KBPKG_VERSION_STRING "\""), "got: %s", r.out);
    kbt_run_free(&r);
}

Test(cli, help_lists_every_command)
{
    const char *args[] = {"help", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 0);
    cr_expect(strstr(r.out, "help"));
    kbt_run_free(&r);
}

Test(cli, unknown_command_is_a_usage_error_with_suggestion)
{
    const char *args[] = {"hlep", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "kbpkg: unknown command 'hlep'; did you mean 'help'?"), "got: %s",
              r.err);
    kbt_run_free(&r);
}

Test(cli, no_command_prints_usage_and_fails)
{
    const char *args[] = {NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.out, "usage: kbpkg"));
    kbt_run_free(&r);
}

Test(cli, bad_setting_flag_names_the_key)
{
    const char *args[] = {"--set", "bogus.key=1", "help", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_neq(r.exit_code, 0);
    cr_expect(strstr(r.err, "unknown configuration key 'bogus.key'"), "got: %s", r.err);
    kbt_run_free(&r);
}

Test(cli, no_command_with_json_prints_the_error_document)
{
    /* --json promises one JSON document on stdout, a bad command line included */
    const char *args[] = {"--json", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 2);
    json_error_t jerr;
    json_t *doc = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(doc, "not JSON (%s): %s", jerr.text, r.out);
    cr_expect(json_is_false(json_object_get(doc, "ok")), "%s", r.out);
    cr_expect_eq(json_integer_value(json_object_get(doc, "kbpkg_json")), 1, "%s", r.out);
    json_t *err = json_object_get(doc, "error");
    cr_expect_eq(json_integer_value(json_object_get(err, "code")), KB_ERR_INVALID, "%s", r.out);
    cr_expect_str_eq(json_string_value(json_object_get(err, "message")), "no command given");
    cr_expect(strstr(r.err, "kbpkg: no command given"), "got: %s", r.err);
    json_decref(doc);
    kbt_run_free(&r);
}

/* ---- typos in subcommands and options: the closest valid one, through the usage error ---- */

static void expect_usage_error(const char *const *args, const char *first_line)
{
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 2, "%s", r.err);
    char *want = kbi_asprintf("kbpkg: %s\nusage: kbpkg %s ", first_line, args[0]);
    /* the message, then the usage line: nothing of getopt's own "unrecognized option" */
    cr_expect(kbi_str_starts(r.err, want), "want '%s', got: %s", want, r.err);
    cr_expect_str_eq(r.out, "");
    free(want);
    kbt_run_free(&r);
}

Test(cli, subcommand_typos_suggest_the_closest)
{
    expect_usage_error((const char *const[]){"config", "lst", NULL},
                       "unknown config subcommand 'lst'; did you mean 'list'?");
    expect_usage_error((const char *const[]){"key", "lst", NULL},
                       "unknown key subcommand 'lst'; did you mean 'list'?");
    expect_usage_error((const char *const[]){"manifest", "chek", "x", NULL},
                       "unknown manifest subcommand 'chek'; did you mean 'check'?");
    /* nothing close: no guess */
    expect_usage_error((const char *const[]){"key", "rotate", NULL},
                       "unknown key subcommand 'rotate'");
}

/* `help key revoke` and `key revoke --help`: that subcommand's usage and options alone. */
static void expect_subcommand_help(const char *const *args)
{
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(kbi_str_starts(r.out, "usage: kbpkg key revoke ID [--reason R]"), "got: %s", r.out);
    cr_expect(strstr(r.out, "--reason R"), "got: %s", r.out);
    cr_expect(!strstr(r.out, "key generate"), "the whole command's help: %s", r.out);
    cr_expect(!strstr(r.out, "--name"), "another subcommand's option: %s", r.out);
    kbt_run_free(&r);
}

Test(cli, help_names_one_subcommand)
{
    expect_subcommand_help((const char *const[]){"help", "key", "revoke", NULL});
    expect_subcommand_help((const char *const[]){"key", "revoke", "--help", NULL});
    const char *jargs[] = {"--json", "help", "farm", "merge", NULL};
    kbt_run r = kbt_kbpkg(NULL, jargs);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    json_t *doc = json_loads(r.out, 0, NULL);
    cr_assert(doc, "not JSON: %s", r.out);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "name")), "merge");
    cr_expect(kbi_str_starts(json_string_value(json_object_get(doc, "usage")), "kbpkg farm merge"),
              "%s", r.out);
    json_decref(doc);
    kbt_run_free(&r);
    /* bad input: the same usage errors as on the command line */
    const char *typo[] = {"help", "key", "revok", NULL};
    r = kbt_kbpkg(NULL, typo);
    cr_expect_eq(r.exit_code, 2, "%s", r.err);
    cr_expect(kbi_str_starts(r.err, "kbpkg: unknown key subcommand 'revok'; did you mean "
                                    "'revoke'?\nusage: kbpkg key generate"),
              "got: %s", r.err); /* then every subcommand's usage line, to pick from */
    cr_expect_str_eq(r.out, "");
    kbt_run_free(&r);
    expect_usage_error((const char *const[]){"help", "install", "x", NULL},
                       "'install' has no subcommands");
    expect_usage_error((const char *const[]){"help", "key", "revoke", "x", NULL},
                       "unexpected argument 'x'");
}

Test(cli, unknown_long_option_is_named_with_the_closest)
{
    expect_usage_error((const char *const[]){"install", "--allow-unsgined", "x", NULL},
                       "unknown option '--allow-unsgined'; did you mean --allow-unsigned?");
    /* after the package (getopt permutes) and with a value attached */
    expect_usage_error((const char *const[]){"uninstall", "x", "--tagret=cpu", NULL},
                       "unknown option '--tagret'; did you mean --target?");
    expect_usage_error((const char *const[]){"fetch", "--sorce", "x", NULL},
                       "unknown option '--sorce'; did you mean --source?");
    expect_usage_error((const char *const[]){"resolve", "--frobnicate", "x", NULL},
                       "unknown option '--frobnicate'");
    expect_usage_error((const char *const[]){"install", "-x", "y", NULL}, "unknown option '-x'");
    expect_usage_error((const char *const[]){"install", "x", "--target", NULL},
                       "option '--target' needs a value");
    expect_usage_error((const char *const[]){"install", "--no-build=1", "x", NULL},
                       "option '--no-build' takes no value");
}

/* ---- every command and subcommand from the one table (cli/commands.c) ---- */

/* A folder of its own for the cache, config and registry (none there), and the working folder:
 * running a command with any one option changes nothing outside it. */
typedef struct sandbox {
    char *tmp;
    char *env_cache, *env_config, *env_registry;
    const char *env[6];
} sandbox;

static void sandbox_init(sandbox *sb)
{
    sb->tmp = kbt_mkdtemp();
    sb->env_cache = kbi_asprintf("KBPKG_CACHE=%s/cache", sb->tmp);
    sb->env_config = kbi_asprintf("XDG_CONFIG_HOME=%s/config", sb->tmp);
    sb->env_registry = kbi_asprintf("KBPKG_REGISTRY=%s/no-registry", sb->tmp);
    const char *env[] = {sb->env_cache,        sb->env_config,         sb->env_registry,
                         "KBPKG_DEVICES=none", "KBPKG_REGISTRY_USER=", NULL};
    memcpy(sb->env, env, sizeof(env));
    cr_assert_eq(chdir(sb->tmp), 0);
}

static void sandbox_free(sandbox *sb)
{
    cr_assert_eq(chdir("/"), 0); /* out of the folder about to go */
    kbt_rmtree(sb->tmp);
    free(sb->tmp);
    free(sb->env_cache);
    free(sb->env_config);
    free(sb->env_registry);
}

/* `kbpkg --json help NAME`, parsed. */
static json_t *help_json(const char *name)
{
    kbt_run r = kbt_kbpkg(NULL, (const char *const[]){"--json", "help", name, NULL});
    cr_assert_eq(r.exit_code, 0, "help %s: %s", name ? name : "", r.err);
    json_t *doc = json_loads(r.out, 0, NULL);
    cr_assert_not_null(doc, "not JSON: %s", r.out);
    kbt_run_free(&r);
    return doc;
}

/* Did the command's parser take the option? Whatever the command made of the rest (no operand
 * given, nothing to work on), getopt's refusals are the only ones that name an option. */
static void expect_accepted(const sandbox *sb, const char *cmd, const char *sub, const char *flag,
                            const char *value)
{
    const char *args[6] = {cmd};
    size_t n = 1;
    if (sub)
        args[n++] = sub;
    args[n++] = flag;
    if (value)
        args[n++] = value;
    kbt_run r = kbt_kbpkg(sb->env, args);
    const char *refusals[] = {"unknown option", "needs a value", "takes no value", "is ambiguous",
                              "unexpected argument '-"};
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
        cr_expect_null(strstr(r.err, refusals[i]), "kbpkg %s %s %s: the parser refused it: %s", cmd,
                       sub ? sub : "", flag, r.err);
    kbt_run_free(&r);
}

/* The table's options of one (sub)command: each is taken by its parser (long and short form)
 * and named in help and the man page; one that is not in the table is refused with exit 2. */
static void check_options(const sandbox *sb, const char *cmd, const char *sub, json_t *entry,
                          const char *help, const char *man)
{
    const char *who = sub ? sub : cmd;
    json_t *options = json_object_get(entry, "options");
    cr_assert(json_is_array(options), "%s %s has no option table", cmd, sub ? sub : "");
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o)
    {
        const char *name = json_string_value(json_object_get(o, "name"));
        const char *arg = json_string_value(json_object_get(o, "arg"));
        const char *shrt = json_string_value(json_object_get(o, "short"));
        char *flag = kbi_asprintf("--%s", name);
        expect_accepted(sb, cmd, sub, flag, arg ? "1" : NULL);
        if (shrt)
            expect_accepted(sb, cmd, sub, shrt, arg ? "1" : NULL);
        cr_expect(strstr(help, flag), "help %s does not name %s: %s", cmd, flag, help);
        char *roff = kbi_asprintf("\\-\\-%s", name);
        for (char *p = strchr(roff + 4, '-'); p; p = strchr(p + 2, '-')) { /* no-build */
            memmove(p + 1, p, strlen(p) + 1);
            *p = '\\';
        }
        cr_expect(strstr(man, roff), "kbpkg-%s(1) does not name %s", cmd, flag);
        free(roff);
        free(flag);
    }
    const char *args[4] = {cmd};
    size_t n = 1;
    if (sub)
        args[n++] = sub;
    args[n++] = "--zz-not-an-option";
    kbt_run r = kbt_kbpkg(sb->env, args);
    cr_expect_eq(r.exit_code, 2, "%s --zz-not-an-option: %s", who, r.err);
    cr_expect(strstr(r.err, "kbpkg: unknown option '--zz-not-an-option'"), "%s: %s", who, r.err);
    kbt_run_free(&r);
}

/* Every command and subcommand has a table, and each of its options is taken by the parser and
 * shown by help, --json help and the man page (tests/cli/test_completion.c checks completion):
 * a command whose parser, help or table drift apart fails here, a new one without a table too. */
Test(cli, option_table_drives_parser_help_and_man_page)
{
    sandbox sb;
    sandbox_init(&sb);
    json_t *list = help_json(NULL);
    size_t i, k, count = 0;
    json_t *entry, *sub;
    json_array_foreach(json_object_get(list, "commands"), i, entry)
    {
        const char *cmd = json_string_value(json_object_get(entry, "name"));
        json_t *doc = help_json(cmd);
        kbt_run help = kbt_kbpkg(NULL, (const char *const[]){"help", cmd, NULL});
        kbt_run man = kbt_kbpkg(NULL, (const char *const[]){"help", "--man", cmd, NULL});
        cr_expect_eq(man.exit_code, 0, "%s", man.err);
        /* the usage lines are the table's: the same in help, --json help and the man page */
        const char *usage = json_string_value(json_object_get(doc, "usage"));
        cr_assert_not_null(usage);
        cr_expect(kbi_str_starts(help.out, "usage: ") && strstr(help.out, usage), "%s", help.out);
        check_options(&sb, cmd, NULL, doc, help.out, man.out);
        json_array_foreach(json_object_get(doc, "subcommands"), k, sub)
        {
            const char *name = json_string_value(json_object_get(sub, "name"));
            char *line = kbi_asprintf("kbpkg %s %s", cmd, name);
            cr_expect(strstr(usage, line), "usage has no line for %s: %s", line, usage);
            free(line);
            check_options(&sb, cmd, name, sub, help.out, man.out);
        }
        kbt_run_free(&help);
        kbt_run_free(&man);
        json_decref(doc);
        count++;
    }
    cr_expect_geq(count, 30);
    json_decref(list);
    sandbox_free(&sb);

    /* the layout of the rows, and the trust group in a table that takes it */
    kbt_run r = kbt_kbpkg(NULL, (const char *const[]){"help", "resolve", NULL});
    cr_expect_eq(r.exit_code, 0);
    cr_expect(strstr(r.out, "\n  --target T, -t T     "), "got: %s", r.out);
    cr_expect(strstr(r.out, "\n  --no-build           "), "got: %s", r.out);
    cr_expect(strstr(r.out, "\n  --allow-unsigned     "), "got: %s", r.out);
    kbt_run_free(&r);
    r = kbt_kbpkg(NULL, (const char *const[]){"--json", "help", "gc", NULL});
    json_t *doc = json_loads(r.out, 0, NULL);
    const char *help = json_string_value(json_object_get(doc, "help"));
    cr_assert_not_null(help, "got: %s", r.out);
    cr_expect(kbi_str_starts(help, "  --keep-lock FILE     "), "got: %s", help);
    json_decref(doc);
    kbt_run_free(&r);
    /* typos get the closest, operands are refused */
    expect_usage_error((const char *const[]){"gc", "--kep-lock", "x", NULL},
                       "unknown option '--kep-lock'; did you mean --keep-lock?");
    expect_usage_error((const char *const[]){"gc", "stray", NULL}, "unexpected argument 'stray'");
    expect_usage_error((const char *const[]){"gc", "--keep-lock", NULL},
                       "option '--keep-lock' needs a value");
    expect_usage_error((const char *const[]){"sync", "stray", NULL}, "unexpected argument 'stray'");
    expect_usage_error((const char *const[]){"test", "--tagret", "cpu", NULL},
                       "unknown option '--tagret'; did you mean --target?");
    expect_usage_error((const char *const[]){"bench", "--quik", NULL},
                       "unknown option '--quik'; did you mean --quick?");
    expect_usage_error((const char *const[]){"lock", "--fiel", "x", "org/a", NULL},
                       "unknown option '--fiel'; did you mean --file?");
    expect_usage_error((const char *const[]){"build", "--tagret", "cpu", NULL},
                       "unknown option '--tagret'; did you mean --target?");
    expect_usage_error((const char *const[]){"farm", "plan", "--pols", "p", "x", NULL},
                       "unknown option '--pols'; did you mean --pools?");
    expect_usage_error((const char *const[]){"key", "revoke", "--reson", "r", "id", NULL},
                       "unknown option '--reson'; did you mean --reason?");
    expect_usage_error((const char *const[]){"probe", "--jsn", NULL},
                       "unknown option '--jsn'; did you mean --json?");
}

Test(cli, unknown_option_with_json_is_the_error_document)
{
    const char *args[] = {"--json", "install", "--allow-unsgined", "x", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 2);
    json_t *doc = json_loads(r.out, 0, NULL);
    cr_assert_not_null(doc, "not JSON: %s", r.out);
    json_t *err = json_object_get(doc, "error");
    cr_expect_str_eq(json_string_value(json_object_get(err, "message")),
                     "unknown option '--allow-unsgined'; did you mean --allow-unsigned?");
    cr_expect(kbi_str_starts(json_string_value(json_object_get(err, "usage")), "kbpkg install "),
              "%s", r.out);
    json_decref(doc);
    kbt_run_free(&r);
}
