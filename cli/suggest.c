/* "Did you mean ...?": the closest command or package name to a typo, by edit distance. */
#define _GNU_SOURCE
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
 * neighbours ("gmem" -> "gemm") cost one each. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    size_t *rows = calloc(3 * (m + 1), sizeof(*rows));
    if (!rows)
        return (size_t)-1;
    size_t *prev2 = rows, *prev = rows + m + 1, *cur = rows + 2 * (m + 1);
    for (size_t j = 0; j <= m; j++)
        prev[j] = j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            size_t d = sub < del ? sub : del;
            d = d < ins ? d : ins;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < d)
                d = prev2[j - 2] + 1;
            cur[j] = d;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    size_t d = prev[m];
    free(rows);
    return d;
}

/* How many edits still read as a typo of a word this long. */
static size_t typo_limit(size_t len)
{
    if (len <= 4)
        return 1;
    if (len <= 12)
        return 2;
    return len / 5 > 2 ? len / 5 : 2;
}

const char *cli_closest(const char *word, const char *const *candidates, size_t count)
{
    const char *best = NULL;
    size_t best_d = typo_limit(strlen(word)) + 1;
    for (size_t i = 0; i < count; i++) {
        size_t d = edit_distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    return best;
}

const char *cli_suggest_command(const char *name)
{
    const char *names[64];
    size_t n = 0;
    for (size_t i = 0; i < cli_command_count && n < sizeof(names) / sizeof(names[0]); i++)
        names[n++] = cli_commands[i].name;
    return cli_closest(name, names, n);
}

/* ---- packages ---- */

typedef struct name_list {
    char **items;
    size_t len;
} name_list;

static void names_add(name_list *l, const char *name)
{
    for (size_t i = 0; i < l->len; i++)
        if (strcmp(l->items[i], name) == 0)
            return;
    char **items = realloc(l->items, (l->len + 1) * sizeof(*items));
    char *copy = strdup(name);
    if (!items || !copy) {
        free(copy);
        if (items)
            l->items = items;
        return;
    }
    l->items = items;
    l->items[l->len++] = copy;
}

static void names_free(name_list *l)
{
    for (size_t i = 0; i < l->len; i++)
        free(l->items[i]);
    free(l->items);
}

/* Every name the registry has and/or the cache holds. Failures just mean fewer names (the
 * command fails anyway; this only adds a hint). */
static void known_names(name_list *out, cli *c, unsigned from)
{
    if (from & CLI_SUGGEST_REGISTRY) {
        char **names = NULL;
        size_t n = 0;
        if (kb_package_search(&names, &n, c->ctx, "", NULL) == 0)
            for (size_t i = 0; i < n; i++)
                names_add(out, names[i]);
        kb_strings_free(names, n);
    }
    if (from & CLI_SUGGEST_INSTALLED) {
        kb_package_list *list = NULL;
        if (kb_cache_list_installed(&list, c->ctx, NULL) == 0)
            for (size_t i = 0; i < kb_package_list_count(list); i++)
                names_add(out, kb_package_list_at(list, i)->name);
        kb_package_list_free(list);
    }
}

char *cli_suggest_package(cli *c, const char *ref, unsigned from)
{
    size_t name_len = strcspn(ref, "@");
    char *name = strndup(ref, name_len);
    if (!name)
        return NULL;
    name_list known = {0};
    known_names(&known, c, from);
    const char *best = NULL;
    bool exists = false;
    for (size_t i = 0; i < known.len; i++)
        exists |= strcmp(known.items[i], name) == 0;
    if (!exists && strchr(name, '/')) {
        best = cli_closest(name, (const char *const *)known.items, known.len);
    } else if (!exists) {
        /* "gemm" for "radeonflow/gemm": match the part after the org */
        const char **short_names = calloc(known.len + 1, sizeof(*short_names));
        for (size_t i = 0; short_names && i < known.len; i++) {
            const char *slash = strchr(known.items[i], '/');
            short_names[i] = slash ? slash + 1 : known.items[i];
        }
        const char *hit = short_names ? cli_closest(name, short_names, known.len) : NULL;
        for (size_t i = 0; hit && i < known.len; i++)
            if (short_names[i] == hit)
                best = known.items[i];
        free(short_names);
    }
    /* keep what followed the name ("@^1"): the suggestion is a command line away */
    char *out = NULL;
    if (best && asprintf(&out, "%s%s", best, ref + name_len) < 0)
        out = NULL;
    names_free(&known);
    free(name);
    return out;
}

int cli_fail_package(cli *c, int code, const char *ref, unsigned from, json_t *report)
{
    if (code != KB_ERR_NOT_FOUND && code != KB_ERR_INVALID)
        return cli_fail_report(c, code, report);
    if (code == KB_ERR_INVALID && strchr(ref, '/'))
        return cli_fail_report(c, code, report); /* a bad name, not a short one */
    /* looking names up resets the ctx's error: keep it for the report */
    cli_error_copy e;
    cli_error_save(&e, c, code);
    char *suggestion = cli_suggest_package(c, ref, from);
    int exit_code = cli_fail_saved(c, &e, suggestion, report);
    cli_error_copy_free(&e);
    free(suggestion);
    return exit_code;
}

int cli_fail_not_installed(cli *c, const char *name, json_t *report)
{
    char *msg = NULL;
    if (asprintf(&msg, "%s is not installed (kbpkg list shows what is)", name) < 0)
        msg = NULL;             /* kb_strerror(code) is said instead */
    kb_ctx_clear_error(c->ctx); /* no stale path or URL in the report */
    cli_error_copy e = {.code = KB_ERR_NOT_FOUND, .message = msg};
    char *suggestion = cli_suggest_package(c, name, CLI_SUGGEST_INSTALLED);
    int exit_code = cli_fail_saved(c, &e, suggestion, report);
    cli_error_copy_free(&e);
    free(suggestion);
    return exit_code;
}
