/* kbpkg entry point: global flags, the ctx and its callbacks, dispatch to one command. */
#define _GNU_SOURCE
#include "cli.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_log(kb_log_level level, const char *message, void *payload)
{
    cli *c = payload;
    static const char *labels[] = {"error", "warning", "", "debug"};
    if (c->quiet && level > KB_LOG_ERROR)
        return;
    if (level == KB_LOG_INFO)
        cli_eprint(c, "%s", message);
    else
        cli_eprint(c, "kbpkg: %s%s%s: %s", cli_color(c, level <= KB_LOG_WARN ? "33" : "2"),
                   labels[level], cli_color(c, "0"), message);
}

void cli_on_event(const kb_event *ev, void *payload)
{
    cli *c = payload;
    if (c->json || c->quiet)
        return;
    /* the progress display says when each download and build ends, with sizes and times */
    if (ev->type == KB_EVENT_DOWNLOAD || ev->type == KB_EVENT_BUILD_START ||
        ev->type == KB_EVENT_BUILD_DONE)
        return;
    if (ev->type == KB_EVENT_WARNING)
        cli_eprint(c, "kbpkg: %swarning%s: %s%s%s", cli_color(c, "33"), cli_color(c, "0"),
                   ev->subject, *ev->subject ? ": " : "", ev->detail);
    else
        cli_eprint(c, "%s%s%s", ev->subject, *ev->subject && *ev->detail ? ": " : "", ev->detail);
}

static int on_progress(const kb_progress *p, void *payload)
{
    cli *c = payload;
    return cli_progress_update(c->progress, p);
}

/* Global flags that become ctx settings; the rest of argv goes to the command. */
static int apply_setting_flag(cli *c, int key, const char *value, char **devices)
{
    int rc = 0;
    if (key == CLI_KEY_REGISTRY)
        rc = kb_ctx_set(c->ctx, "registry", value);
    else if (key == CLI_KEY_CACHE)
        rc = kb_ctx_set(c->ctx, "cache.dir", value);
    else if (key == CLI_KEY_DEVICE) {
        size_t n = *devices ? strlen(*devices) + 1 : 0, len = strlen(value);
        char *joined = realloc(*devices, n + len + 1);
        if (!joined)
            return KB_ERR_NOMEM;
        if (n)
            joined[n - 1] = ',';
        memcpy(joined + n, value, len + 1);
        *devices = joined;
    } else if (key == CLI_KEY_SET) {
        const char *eq = strchr(value, '=');
        if (!eq)
            return cli_usage_error(c, NULL, "--set needs KEY=VALUE, got '%s'", value);
        char *key_name = strndup(value, (size_t)(eq - value));
        rc = key_name ? kb_ctx_set(c->ctx, key_name, eq + 1) : KB_ERR_NOMEM;
        free(key_name);
    }
    return rc ? cli_fail(c, rc) : 0;
}

/* A global flag without a value (--json, -q, --offline, ...): 0, or the exit code. */
static int apply_switch(cli *c, const cli_option *o, bool first, bool *want_version)
{
    switch (o->key) {
    case CLI_KEY_JSON:
        c->json = true;
        return 0;
    case 'q':
        c->quiet = true;
        return 0;
    case 'v':
        c->verbose = true;
        return 0;
    case CLI_KEY_NO_COLOR:
        c->color = c->color_out = false;
        return 0;
    case CLI_KEY_VERSION:
        *want_version = *want_version || first;
        return 0;
    case CLI_KEY_OFFLINE:
    case CLI_KEY_INSECURE: {
        int rc = kb_ctx_set(c->ctx, o->name, "true");
        return rc ? cli_fail(c, rc) : 0;
    }
    default:
        return 0;
    }
}

/* Pull global flags out of argv (anywhere before "--"); compacts argv in place. -h and --help
 * stay: they ask for the help of what precedes them. */
static int extract_global_flags(cli *c, int *argc, char **argv, bool *want_version)
{
    char *devices = NULL;
    int out = 1, rc = 0;
    bool passthrough = false;
    for (int i = 1; i < *argc && !rc; i++) {
        char *a = argv[i];
        const cli_option *o = passthrough || a[0] != '-' ? NULL : cli_find_global_option(a);
        passthrough = passthrough || strcmp(a, "--") == 0;
        bool keep_version = o && o->key == CLI_KEY_VERSION && out != 1; /* a command's operand */
        if (!o || o->key == 'h' || keep_version) {
            argv[out++] = a;
        } else if (!o->arg) {
            rc = apply_switch(c, o, out == 1, want_version);
        } else {
            const char *value;
            char *eq = strchr(a, '=');
            if (eq) {
                *eq = '\0';
                value = eq + 1;
            } else if (i + 1 < *argc) {
                value = argv[++i];
            } else {
                rc = cli_usage_error(c, NULL, "%s needs a value", a);
                break;
            }
            rc = apply_setting_flag(c, o->key, value, &devices);
        }
    }
    if (!rc && devices) {
        int set = kb_ctx_set(c->ctx, "probe.devices", devices);
        rc = set ? cli_fail(c, set) : 0;
    }
    free(devices);
    *argc = out;
    argv[out] = NULL;
    return rc;
}

int main(int argc, char **argv)
{
    cli c = {0};
    c.argv0 = argv[0];
    c.tty = isatty(2);
    const char *no_color_env = getenv("NO_COLOR");
    bool no_color = no_color_env && *no_color_env; /* any non-empty value, as no-color.org says */
    c.color = c.tty && !no_color;
    c.color_out = isatty(1) && !no_color;

    kb_ctx_options opts = KB_CTX_OPTIONS_INIT;
    opts.log = on_log;
    opts.event = cli_on_event;
    opts.progress = on_progress;
    opts.payload = &c;
    int rc = kb_ctx_new(&c.ctx, &opts);
    if (rc) { /* a bad config file was reported through on_log */
        if (!c.ctx)
            fprintf(stderr, "kbpkg: cannot start: %s\n", kb_strerror(rc));
        kb_ctx_free(c.ctx);
        return CLI_EXIT_FAILURE;
    }
    opterr = 0; /* commands say what is wrong with an option themselves (cli_option_error) */
    bool want_version = false;
    int exit_code = extract_global_flags(&c, &argc, argv, &want_version);
    if (exit_code)
        goto out;
    kb_ctx_set_log_level(c.ctx, c.verbose ? KB_LOG_DEBUG : c.quiet ? KB_LOG_ERROR : KB_LOG_INFO);
    cli_progress_opts popts = {
        .mode = cli_progress_mode_for(c.quiet, c.json, c.tty, getenv("TERM")),
        .out = stderr,
        .color = c.color,
    };
    c.progress = cli_progress_new(&popts); /* NULL (no memory): plain stderr lines, no progress */

    if (want_version) {
        if (c.json) {
            json_t *v = json_pack("{s:s}", "version", kb_version());
            cli_json_print(v);
        } else
            printf("kbpkg %s\n", kb_version());
        goto out;
    }
    if (argc >= 2 && cli_is_help_flag(argv[1])) {
        exit_code = cli_print_general_help();
        goto out;
    }
    if (argc < 2) {
        /* --json promises one JSON document on stdout, failures included */
        if (c.json)
            exit_code = cli_usage_error(&c, NULL, "no command given");
        else {
            cli_print_general_help();
            exit_code = CLI_EXIT_USAGE;
        }
        goto out;
    }
    const cli_command *cmd = cli_find_command(argv[1]);
    if (!cmd) {
        const char *s = cli_suggest_command(argv[1]);
        if (s)
            exit_code =
                cli_usage_error(&c, NULL, "unknown command '%s'; did you mean '%s'?", argv[1], s);
        else
            exit_code = cli_usage_error(&c, NULL, "unknown command '%s'", argv[1]);
        goto out;
    }
    if (argc >= 3 && cli_is_help_flag(argv[2])) {
        exit_code = cli_print_command_help(cmd);
        goto out;
    }
    exit_code = cli_run_command(&c, cmd, argc - 1, argv + 1);
out:
    cli_progress_free(c.progress);
    kb_ctx_free(c.ctx);
    return exit_code;
}
