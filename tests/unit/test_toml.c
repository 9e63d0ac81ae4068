/* The TOML subset reader of kbpkg import (import/toml.c): what it reads, and line:col errors
 * for everything outside the subset. */
#include "kbtest.h"
#include "import/toml.h"

#include <string.h>

static kb_toml *parse_ok(kb_ctx *ctx, const char *text)
{
    kb_toml *t = NULL;
    cr_assert_eq(kbi_toml_parse(&t, ctx, "t.toml", text, strlen(text)), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    return t;
}

Test(toml, tables_dotted_names_strings_arrays_integers_booleans)
{
    kb_ctx *ctx = kbt_ctx();
    const char *text = "\xEF\xBB\xBF# comment\n"
                       "top = 'lit\\eral'  # trailing comment\n"
                       "[general]\n"
                       "name = \"act\\u00e9 \\\"q\\\"\\t\"\n"
                       "universal = false\n"
                       "n = -1_000\n"
                       "big = 9223372036854775807\n"
                       "[ kernel . \"a b\" ]\r\n"
                       "src = [\n  \"x.cu\", # one\n  'y.h',\n]\n"
                       "empty = []\n"
                       "nested = [[1, 2], [true]]\n"
                       "sub.key = \"dotted\"\n";
    kb_toml *t = parse_ok(ctx, text);
    cr_expect_str_eq(kbi_toml_get(t, "top")->str, "lit\\eral");
    const kb_toml *g = kbi_toml_get(t, "general");
    cr_expect_str_eq(kbi_toml_get(g, "name")->str, "act\xc3\xa9 \"q\"\t");
    cr_expect_eq(kbi_toml_get(g, "universal")->type, KB_TOML_BOOL);
    cr_expect_not(kbi_toml_get(g, "universal")->flag);
    cr_expect_eq(kbi_toml_get(g, "n")->num, -1000);
    cr_expect_eq(kbi_toml_get(g, "big")->num, INT64_MAX);
    const kb_toml *k = kbi_toml_get(kbi_toml_get(t, "kernel"), "a b");
    cr_assert_not_null(k);
    cr_expect_eq(k->line, 8);
    const kb_toml *src = kbi_toml_get(k, "src");
    cr_assert_eq(src->count, 2);
    cr_expect_str_eq(src->items[1]->str, "y.h");
    cr_expect_eq(src->line, 9);
    cr_expect_eq(kbi_toml_get(k, "empty")->count, 0);
    cr_expect_eq(kbi_toml_get(k, "nested")->items[1]->items[0]->flag, true);
    cr_expect_str_eq(kbi_toml_get(kbi_toml_get(k, "sub"), "key")->str, "dotted");
    kbi_toml_free(t);
    kb_ctx_free(ctx);
}

Test(toml, errors_name_line_and_column)
{
    struct {
        const char *text, *want;
    } cases[] = {
        {"a = 1\na = 2\n", "t.toml:2:1: duplicate key 'a' (first at line 1)"},
        {"[x]\n[x]\n", "t.toml:2:1: table [x] is defined twice (first at line 1)"},
        {"a = \"open\n", "t.toml:1:5: unterminated string"},
        {"a = 1.5\n", "t.toml:1:5: only decimal integers are supported"},
        {"a = 1979-05-27\n", "t.toml:1:5: only decimal integers are supported"},
        {"a = {b = 1}\n", "t.toml:1:5: inline tables are not supported"},
        {"[[k]]\n", "t.toml:1:1: arrays of tables ([[...]]) are not supported"},
        {"a = \"\\q\"\n", "t.toml:1:6: unknown escape in a string"},
        {"a = \"\\ud800\"\n", "t.toml:1:6: \\u escape U+D800 is not a Unicode scalar value"},
        {"a 1\n", "t.toml:1:3: expected '=' after the key"},
        {"a = 1 2\n", "t.toml:1:7: expected the end of the line, found '2'"},
        {"a = 9223372036854775808\n", "t.toml:1:5: integer out of range"},
        {"a = 007\n", "t.toml:1:5: leading zeros are not allowed"},
        {"a = [1 2]\n", "t.toml:1:8: expected ',' or ']' in an array"},
        {"a = [\"x\",\n", "t.toml:1:5: unterminated array"},
        {"a = \"\"\"x\"\"\"\n", "t.toml:1:5: multi-line strings are not supported"},
        {"a = nope\n", "t.toml:1:5: not a value this reader supports"},
        {"a =\n", "t.toml:1:4: expected a value"},
        {"a = 1\n[a]\n", "t.toml:2:2: 'a' is already a integer (line 1), not a table"},
        {"[a\n", "t.toml:1:3: expected ']' to close the table header"},
        {"= 1\n", "t.toml:1:1: expected a key"},
        {"a = \"x\\u0000\"\n", "t.toml:1:5: a string may not hold a NUL character"},
        {"a = \"\x01\"\n", "t.toml:1:6: control character 0x01 in a string"},
    };
    for (size_t i = 0; i < KB_ARRAY_LEN(cases); i++) {
        kb_ctx *ctx = kbt_ctx();
        kb_toml *t = (kb_toml *)1;
        int rc = kbi_toml_parse(&t, ctx, "t.toml", cases[i].text, strlen(cases[i].text));
        cr_expect_eq(rc, KB_ERR_PARSE, "case %zu: %s", i, cases[i].text);
        cr_expect_null(t, "case %zu leaves no tree", i);
        const char *msg = kb_ctx_last_error(ctx)->message;
        cr_expect(strncmp(msg, cases[i].want, strlen(cases[i].want)) == 0,
                  "case %zu: got '%s', want '%s'", i, msg, cases[i].want);
        kb_ctx_free(ctx);
    }
}

Test(toml, deep_nesting_is_an_error_not_a_crash)
{
    kb_ctx *ctx = kbt_ctx();
    char text[256] = "a = ";
    memset(text + 4, '[', 60);
    kb_toml *t = NULL;
    cr_expect_eq(kbi_toml_parse(&t, ctx, "t.toml", text, strlen(text)), KB_ERR_PARSE);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "arrays nested deeper than 32"), "%s",
              kb_ctx_last_error(ctx)->message);
    kb_ctx_free(ctx);
}
