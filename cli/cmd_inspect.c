/* kbpkg inspect: what a built library or an artifact holds (exports, libc needs, GPU code). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static json_t *json_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

static json_t *library_json(const kb_inspect *ins)
{
    json_t *exports = json_array(), *uniques = json_array(), *codes = json_array();
    for (size_t i = 0; i < kb_inspect_export_count(ins); i++)
        json_array_append_new(exports, json_string(kb_inspect_export(ins, i)));
    for (size_t i = 0; i < kb_inspect_unique_count(ins); i++)
        json_array_append_new(uniques, json_string(kb_inspect_unique(ins, i)));
    for (size_t i = 0; i < kb_inspect_gpu_code_count(ins); i++) {
        const kb_gpu_code *c = kb_inspect_gpu_code(ins, i);
        json_array_append_new(codes, json_pack("{s:s,s:s,s:s,s:b}", "kind",
                                               kb_gpu_code_kind_name(c->kind), "arch", c->arch,
                                               "detail", c->detail, "compressed", c->compressed));
    }
    return json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:o}", "name", kb_inspect_name(ins), "kind", "elf",
                     "exports", exports, "gnu_unique", uniques, "glibc",
                     json_or_null(kb_inspect_glibc_needed(ins)), "glibcxx",
                     json_or_null(kb_inspect_glibcxx_needed(ins)), "gpu_code", codes);
}

static json_t *inspect_json(const kb_inspect *ins)
{
    if (kb_inspect_get_kind(ins) == KB_INSPECT_ELF)
        return library_json(ins);
    json_t *members = json_array(), *libs = json_array();
    for (size_t i = 0; i < kb_inspect_member_count(ins); i++)
        json_array_append_new(members, json_string(kb_inspect_member(ins, i)));
    for (size_t i = 0; i < kb_inspect_library_count(ins); i++)
        json_array_append_new(libs, library_json(kb_inspect_library(ins, i)));
    return json_pack("{s:s,s:s,s:o,s:o}", "name", kb_inspect_name(ins), "kind", "archive",
                     "members", members, "libraries", libs);
}

static void print_list(const char *label, size_t count,
                       const char *(*get)(const kb_inspect *, size_t), const kb_inspect *ins)
{
    printf("  %-12s", label);
    if (!count)
        printf("(none)");
    for (size_t i = 0; i < count; i++)
        printf("%s%s", i ? ", " : "", get(ins, i));
    printf("\n");
}

static void print_library(cli *c, const kb_inspect *ins)
{
    if (c->quiet)
        return;
    printf("%s%s%s\n", cli_color_out(c, "1"), kb_inspect_name(ins), cli_color_out(c, "0"));
    print_list("exports:", kb_inspect_export_count(ins), kb_inspect_export, ins);
    print_list("gnu_unique:", kb_inspect_unique_count(ins), kb_inspect_unique, ins);
    const char *glibc = kb_inspect_glibc_needed(ins), *glibcxx = kb_inspect_glibcxx_needed(ins);
    printf("  %-12s%s%s%s%s\n", "needs:", *glibc ? "GLIBC_" : "", *glibc ? glibc : "(no glibc)",
           *glibcxx ? ", GLIBCXX_" : "", glibcxx);
    printf("  %-12s", "gpu code:");
    size_t n = kb_inspect_gpu_code_count(ins);
    if (!n)
        printf("(none)");
    for (size_t i = 0; i < n; i++) {
        const kb_gpu_code *code = kb_inspect_gpu_code(ins, i);
        printf("%s%s %s%s", i ? ", " : "", kb_gpu_code_kind_name(code->kind),
               *code->arch ? code->arch : code->detail, code->compressed ? " (compressed)" : "");
    }
    printf("\n");
}

static void print_inspect(cli *c, const kb_inspect *ins)
{
    if (kb_inspect_get_kind(ins) == KB_INSPECT_ELF) {
        print_library(c, ins);
        return;
    }
    cli_say(c, "%s%s%s (artifact, %zu members)", cli_color_out(c, "1"), kb_inspect_name(ins),
            cli_color_out(c, "0"), kb_inspect_member_count(ins));
    for (size_t i = 0; i < kb_inspect_member_count(ins); i++)
        cli_say(c, "  %s", kb_inspect_member(ins, i));
    for (size_t i = 0; i < kb_inspect_library_count(ins); i++)
        print_library(c, kb_inspect_library(ins, i));
}

int cmd_inspect(cli *c, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, "inspect", cli_json_options, argc, argv);
    if (rc)
        return rc;
    if (first >= argc)
        return cli_usage_error(c, "inspect", "missing FILE");
    if (first + 1 < argc)
        return cli_usage_error(c, "inspect", "inspect takes one FILE, got '%s' too",
                               argv[first + 1]);
    const char *path = argv[first];
    kb_inspect *ins = NULL;
    rc = kb_inspect_file(&ins, c->ctx, path);
    if (rc)
        return cli_fail(c, rc);
    if (c->json)
        cli_json_print(inspect_json(ins));
    else
        print_inspect(c, ins);
    kb_inspect_free(ins);
    return CLI_EXIT_OK;
}
