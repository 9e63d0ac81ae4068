/* kbpkg lock org/name[@c]... [--target T]... [--file F]: pin versions and digests in kbpkg.lock. */
#include "cli.h"

#include <getopt.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_text(cli *c, const kb_lockfile *lock, const char *file)
{
    if (c->quiet)
        return;
    for (size_t i = 0; i < kb_lockfile_package_count(lock); i++) {
        const char *name, *constraint, *version, *index;
        size_t pins = 0;
        kb_lockfile_package(&name, &constraint, &version, &index, &pins, lock, i);
        printf("%s %s (%s): %zu pinned, index %s\n", name, version, constraint, pins, index);
    }
    printf("wrote %s\n", file);
}

/* Whether msg names the package name[0..len) as a whole word ("kbtest/cpu-ad", not the start of
 * "kbtest/cpu-add"). */
static bool names_package(const char *msg, const char *name)
{
    size_t len = strlen(name);
    for (const char *hit = msg; (hit = strstr(hit, name)) != NULL; hit++) {
        char next = hit[len];
        if (next == '\0' || (!isalnum((unsigned char)next) && !strchr("-_./", next)))
            return true;
    }
    return false;
}

/* The ref the resolver failed on: the first one the error message names (refs are locked in
 * order and the first failure stops it), so that a typo in it gets a suggestion. */
static const char *failed_ref(cli *c, const char **refs, size_t nrefs)
{
    const char *msg = kb_ctx_last_error(c->ctx)->message;
    const char *found = NULL;
    for (size_t i = 0; msg && !found && i < nrefs; i++) {
        char *name = strndup(refs[i], strcspn(refs[i], "@"));
        if (name && *name && names_package(msg, name))
            found = refs[i];
        free(name);
    }
    return found;
}

const cli_option cli_lock_options[] = {
    {'t', "target", true, "T",
     "pin only these targets (ids or prefixes); default: every\nartifact, so the lockfile works "
     "on any machine"},
    {'f', "file", false, "F", "write F instead of ./kbpkg.lock"},
    CLI_OPTION_GROUP(cli_registry_options),
    CLI_OPTION_GROUP(cli_trust_options),
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_lock(cli *c, int argc, char **argv)
{
    const char **refs = calloc((size_t)argc + 1, sizeof(*refs));
    const char **targets = calloc((size_t)argc + 1, sizeof(*targets));
    const char *file = KB_LOCKFILE_NAME;
    size_t nrefs = 0, ntargets = 0;
    cli_trust trust = {0}; /* each version's signature is checked before it is pinned */
    int rc = refs && targets ? 0 : cli_fail(c, KB_ERR_NOMEM), opt;
    cli_getopt g;
    cli_getopt_build(&g, cli_lock_options);
    optind = 1;
    while (!rc && (opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 't')
            targets[ntargets++] = optarg;
        else if (opt == 'f')
            file = optarg;
        else if (!cli_trust_option(&trust, opt))
            rc = cli_option_error(c, "lock", opt, g.longs, argv);
    }
    if (!rc)
        cli_trust_warn(c, &trust);
    for (int i = optind; !rc && i < argc; i++)
        refs[nrefs++] = argv[i];
    if (!rc && nrefs == 0)
        rc = cli_usage_error(c, "lock", "which packages?");
    kb_lockfile *lock = NULL;
    if (!rc) {
        kb_lock_options o = KB_LOCK_OPTIONS_INIT;
        o.targets = targets;
        o.target_count = ntargets;
        o.allow_unsigned = trust.allow_unsigned;
        int err = kb_lockfile_resolve(&lock, c->ctx, refs, nrefs, &o);
        if (!err)
            err = kb_lockfile_write(c->ctx, lock, file);
        const char *ref = err ? failed_ref(c, refs, nrefs) : NULL;
        if (ref) /* a typo in it: "did you mean" from the registry, as install says */
            rc = cli_fail_package(c, err, ref, CLI_SUGGEST_REGISTRY, NULL);
        else if (err)
            rc = cli_fail(c, err);
    }
    if (!rc && c->json)
        cli_json_print(json_pack("{s:s, s:i}", "file", file, "packages",
                                 (int)kb_lockfile_package_count(lock)));
    else if (!rc)
        print_text(c, lock, file);
    kb_lockfile_free(lock);
    free(refs);
    free(targets);
    return rc;
}
