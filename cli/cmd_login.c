/* kbpkg login REGISTRY: check a user and password against the registry, then store them. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#define PASSWORD_MAX 4096

static void wipe(char *s)
{
    if (!s)
        return;
    volatile char *p = s;
    while (*p)
        *p++ = '\0';
}

/* One line from stdin without its newline; echo off when stdin is a terminal. */
static char *read_password(bool prompt)
{
    struct termios saved, quiet;
    bool tty = prompt && isatty(0) && tcgetattr(0, &saved) == 0;
    if (tty) {
        fprintf(stderr, "Password: ");
        fflush(stderr);
        quiet = saved;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(0, TCSAFLUSH, &quiet);
    }
    char *buf = calloc(1, PASSWORD_MAX);
    if (buf && !fgets(buf, PASSWORD_MAX, stdin))
        buf[0] = '\0';
    if (tty) {
        tcsetattr(0, TCSAFLUSH, &saved);
        fputc('\n', stderr);
    }
    if (buf)
        buf[strcspn(buf, "\r\n")] = '\0';
    return buf;
}

/* Does the registry accept these credentials? Errors name the URL, never the password. */
static int check_login(cli *c, const char *ref, const char *user, const char *password)
{
    kb_registry *r = NULL;
    int rc = kb_registry_open(&r, c->ctx, ref);
    if (!rc)
        rc = kb_registry_set_credentials(r, user, password);
    if (!rc)
        rc = kb_registry_check(r);
    kb_registry_free(r);
    return rc;
}

const cli_option cli_login_options[] = {
    {'u', "username", false, "U", "the user (default $KBPKG_REGISTRY_USER)"},
    {'p', "password-stdin", false, NULL, "read the password from stdin instead of prompting"},
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_login(cli *c, int argc, char **argv)
{
    const char *ref = NULL, *user = getenv("KBPKG_REGISTRY_USER");
    bool from_stdin = false;
    cli_getopt g;
    cli_getopt_build(&g, cli_login_options);
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 'p')
            from_stdin = true;
        else if (opt == 'u')
            user = optarg;
        else
            return cli_option_error(c, "login", opt, g.longs, argv);
    }
    if (optind + 1 < argc)
        return cli_usage_error(c, "login", "unexpected argument '%s'", argv[optind + 1]);
    if (optind < argc)
        ref = argv[optind];
    if (!ref)
        return cli_usage_error(c, "login", "login needs a registry (oci://host[:port])");
    if (!user || !*user)
        return cli_usage_error(c, "login", "login needs --username (or KBPKG_REGISTRY_USER)");
    if (!from_stdin && !isatty(0))
        return cli_usage_error(c, "login",
                               "stdin is not a terminal: pass the password with --password-stdin");
    char *password = read_password(!from_stdin);
    if (!password)
        return cli_fail(c, KB_ERR_NOMEM);
    int rc = check_login(c, ref, user, password);
    if (!rc)
        rc = kb_trust_credentials_store(c->ctx, ref, user, password);
    wipe(password);
    free(password);
    if (rc)
        return cli_fail(c, rc);
    if (c->json)
        cli_json_print(json_pack("{s:s,s:s,s:b}", "registry", ref, "user", user, "ok", 1));
    else
        cli_say(c, "logged in to %s as %s", ref, user);
    return CLI_EXIT_OK;
}
