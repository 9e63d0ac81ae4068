/* The report rows shared by publish, farm and sync, and the words for each kb_status. */
#include "core/internal.h"

#include <stdlib.h>
#include <string.h>

KB_EXTERN const char *kb_status_name(kb_status status)
{
    switch (status) {
    case KB_STATUS_PUBLISHED:
        return "published";
    case KB_STATUS_UNCHANGED:
        return "unchanged";
    case KB_STATUS_REPLACED:
        return "replaced";
    case KB_STATUS_ALREADY_THERE:
        return "already there";
    case KB_STATUS_STAGED:
        return "staged";
    case KB_STATUS_MERGED:
        return "merged";
    case KB_STATUS_CONFLICT:
        return "conflict";
    case KB_STATUS_SKIPPED:
        return "skipped";
    case KB_STATUS_FAILED:
        return "failed";
    case KB_STATUS_INSTALLED:
        return "installed";
    case KB_STATUS_ALREADY_INSTALLED:
        return "already installed";
    }
    return "unknown";
}

static void row_clear(kb_report_row *row)
{
    free((char *)row->package);
    free((char *)row->version);
    free((char *)row->target);
    free((char *)row->digest);
    free((char *)row->message);
    free((char *)row->dir);
}

/* A copy of each string that is set; false when one could not be copied. */
static bool row_copy(kb_report_row *dst, const kb_report_row *src)
{
    *dst = (kb_report_row){
        .package = kbi_strdup(src->package),
        .version = kbi_strdup(src->version),
        .target = kbi_strdup(src->target),
        .status = src->status,
        .digest = kbi_strdup(src->digest),
        .message = kbi_strdup(src->message),
        .dir = kbi_strdup(src->dir),
    };
    return (!src->package || dst->package) && (!src->version || dst->version) &&
           (!src->target || dst->target) && (!src->digest || dst->digest) &&
           (!src->message || dst->message) && (!src->dir || dst->dir);
}

int kbi_report_rows_add(kb_report_rows *rows, const kb_report_row *row)
{
    if (kbi_array_grow((void **)&rows->items, &rows->cap, rows->len + 1, sizeof(*rows->items)))
        return KB_ERR_NOMEM;
    kb_report_row *dst = &rows->items[rows->len];
    if (!row_copy(dst, row)) {
        row_clear(dst);
        return KB_ERR_NOMEM;
    }
    rows->len++;
    return 0;
}

int kbi_report_rows_get(const kb_report_row **out, const kb_report_rows *rows, size_t index)
{
    if (!rows || index >= rows->len)
        return KB_ERR_NOT_FOUND;
    *out = &rows->items[index];
    return 0;
}

size_t kbi_report_rows_count_status(const kb_report_rows *rows, kb_status status)
{
    size_t n = 0;
    for (size_t i = 0; rows && i < rows->len; i++)
        n += rows->items[i].status == status;
    return n;
}

void kbi_report_rows_free(kb_report_rows *rows)
{
    for (size_t i = 0; i < rows->len; i++)
        row_clear(&rows->items[i]);
    free(rows->items);
    memset(rows, 0, sizeof(*rows));
}
