/* kbpkg targets: the targets kbpkg builds, what each runs on, and whether it fits --device. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct target_row {
    char id[128]; /* canonical */
    const char *runs_on;
    int fits;
    char reason[256];
} target_row;

/* The runs-on text of a known target, "" for one kbpkg does not build by default. */
static const char *known_runs_on(const char *id)
{
    const char *kid, *runs_on;
    for (size_t i = 0; kb_target_known(&kid, &runs_on, i) == 0; i++)
        if (strcmp(kid, id) == 0)
            return runs_on;
    return "";
}

static int fill_row(cli *c, target_row *row, const char *id, const char *devices)
{
    int rc = kb_target_canonical(row->id, sizeof(row->id), c->ctx, id);
    if (!rc && devices)
        rc = kb_target_check(&row->fits, row->reason, sizeof(row->reason), c->ctx, id, devices);
    row->runs_on = known_runs_on(row->id);
    return rc;
}

static void print_json(const target_row *rows, size_t n, const char *devices)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_pack("{s:s,s:s}", "id", rows[i].id, "runs_on", rows[i].runs_on);
        if (o && devices) {
            json_object_set_new(o, "fits", json_boolean(rows[i].fits));
            json_object_set_new(o, "reason", json_string(rows[i].reason));
        }
        json_array_append_new(arr, o);
    }
    cli_json_print(json_pack("{s:s?,s:o}", "device", devices, "targets", arr));
}

static void print_table(cli *c, const target_row *rows, size_t n, const char *devices)
{
    int id_w = 6, runs_w = 7; /* "TARGET", "RUNS ON" */
    for (size_t i = 0; i < n; i++) {
        int w = (int)strlen(rows[i].id), r = (int)strlen(rows[i].runs_on);
        id_w = w > id_w ? w : id_w;
        runs_w = r > runs_w ? r : runs_w;
    }
    if (!devices) {
        printf("%-*s  %s\n", id_w, "TARGET", "RUNS ON");
        for (size_t i = 0; i < n; i++)
            printf("%-*s  %s\n", id_w, rows[i].id, rows[i].runs_on);
        return;
    }
    printf("device: %s\n%-*s  %-4s  %-*s  %s\n", devices, id_w, "TARGET", "FITS", runs_w, "RUNS ON",
           "WHY");
    for (size_t i = 0; i < n; i++)
        printf("%-*s  %s%-4s%s  %-*s  %s\n", id_w, rows[i].id,
               cli_color_out(c, rows[i].fits ? "32" : "31"), rows[i].fits ? "yes" : "no",
               cli_color_out(c, "0"), runs_w, rows[i].runs_on, rows[i].reason);
}

static int list_targets(cli *c, char **ids, size_t n_ids, const char *devices)
{
    size_t n = n_ids;
    if (!n_ids)
        while (kb_target_known(NULL, NULL, n) == 0)
            n++;
    target_row *rows = calloc(n ? n : 1, sizeof(*rows));
    if (!rows)
        return cli_fail(c, KB_ERR_NOMEM);
    bool all_fit = true;
    /* Check everything before printing: a bad id or device prints an error, not half a table. */
    for (size_t i = 0; i < n; i++) {
        const char *id = NULL;
        if (n_ids)
            id = ids[i];
        else
            kb_target_known(&id, NULL, i);
        int rc = fill_row(c, &rows[i], id, devices);
        if (rc) {
            free(rows);
            return cli_fail(c, rc);
        }
        all_fit = all_fit && rows[i].fits;
    }
    if (c->json)
        print_json(rows, n, devices);
    else if (!c->quiet)
        print_table(c, rows, n, devices);
    free(rows);
    /* Named targets that do not fit the device: a script can branch on the exit code. */
    return n_ids && devices && !all_fit ? CLI_EXIT_NOT_FOUND : CLI_EXIT_OK;
}

const cli_option cli_targets_options[] = {
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTION_GROUP(cli_device_options),
    CLI_OPTIONS_END,
};

int cmd_targets(cli *c, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, "targets", cli_targets_options, argc, argv);
    if (rc)
        return rc;
    char **ids = argv + first;
    size_t n_ids = (size_t)(argc - first);
    const char *devices = NULL;
    rc = kb_ctx_get(&devices, c->ctx, "probe.devices");
    if (rc)
        return cli_fail(c, rc);
    if (devices && !*devices)
        devices = NULL;
    return list_targets(c, ids, n_ids, devices);
}
