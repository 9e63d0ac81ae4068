/* The shared report rows of publish, farm and sync, and the words for each kb_status. */
#include "core/internal.h"

#include <criterion/criterion.h>
#include <stdlib.h>

/* The words are the CLI's and --json's (docs/json.md): pinned here so an enum edit cannot
 * change what scripts read. */
Test(report, status_names_are_todays_words)
{
    static const struct {
        kb_status status;
        const char *name;
    } table[] = {
        {KB_STATUS_PUBLISHED, "published"},
        {KB_STATUS_UNCHANGED, "unchanged"},
        {KB_STATUS_REPLACED, "replaced"},
        {KB_STATUS_ALREADY_THERE, "already there"},
        {KB_STATUS_STAGED, "staged"},
        {KB_STATUS_MERGED, "merged"},
        {KB_STATUS_CONFLICT, "conflict"},
        {KB_STATUS_SKIPPED, "skipped"},
        {KB_STATUS_FAILED, "failed"},
        {KB_STATUS_INSTALLED, "installed"},
        {KB_STATUS_ALREADY_INSTALLED, "already installed"},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        cr_expect_str_eq(kb_status_name(table[i].status), table[i].name);
    cr_expect_str_eq(kb_status_name((kb_status)0), "unknown");
    cr_expect_str_eq(kb_status_name((kb_status)99), "unknown");
}

Test(report, rows_copy_strings_and_count_by_status)
{
    kb_report_rows rows = {0};
    char target[] = "cpu-x86_64_v3-x86_64-linux";
    for (int i = 0; i < 20; i++) {
        kb_report_row row = {.package = "org/a",
                             .version = "1.0.0",
                             .target = target,
                             .status = i % 3 ? KB_STATUS_PUBLISHED : KB_STATUS_FAILED,
                             .message = i % 3 ? NULL : "no toolchain"};
        cr_assert_eq(kbi_report_rows_add(&rows, &row), 0);
    }
    target[0] = 'X'; /* the rows hold copies */
    const kb_report_row *got = NULL;
    cr_assert_eq(kbi_report_rows_get(&got, &rows, 19), 0);
    cr_expect_str_eq(got->target, "cpu-x86_64_v3-x86_64-linux");
    cr_expect_null(got->digest);
    cr_expect_null(got->dir);
    cr_expect_eq(kbi_report_rows_get(&got, &rows, 20), KB_ERR_NOT_FOUND);
    cr_expect_eq(kbi_report_rows_count_status(&rows, KB_STATUS_FAILED), 7);
    cr_expect_eq(kbi_report_rows_count_status(&rows, KB_STATUS_PUBLISHED), 13);
    cr_expect_eq(kbi_report_rows_count_status(&rows, KB_STATUS_SKIPPED), 0);
    kbi_report_rows_free(&rows);
    cr_expect_eq(rows.len, 0);
}
