/* Typed exports: kernel.yaml's exports mappings parsed and refused with file:line:col, the
 * C declaration the header check compiles, the kbpkg.json form and the one-line text. */
#include "builder/builder.h"
#include "kbtest.h"
#include "manifests/manifest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define HEAD "name: a/b\nversion: 1.0.0\nabi: 1\nheader: b.h\nbackends: {cpu: {sources: [b.c]}}\n"

static const char typed_text[] =
    HEAD "exports:\n"
         "  - plain_f32\n"
         "  - name: rms_bf16\n"
         "    args:\n"
         "      - {name: out, type: bf16, dir: out, shape: [rows, cols]}\n"
         "      - {name: x, type: bf16, dir: in, shape: [rows, (cols + 1) / 2 * 2]}\n"
         "      - {name: rows, type: i64}\n"
         "      - {name: cols, type: i32}\n"
         "      - {name: eps, type: f32}\n"
         "      - {name: stream, type: stream}\n"
         "  - name: count\n"
         "    returns: u64\n";

static kb_manifest *parse_ok(kb_ctx *ctx, const char *text)
{
    kb_manifest *m = NULL;
    int rc = kbi_manifest_parse(ctx, &m, "k.yaml", text, strlen(text));
    cr_assert_eq(rc, 0, "%s", kb_ctx_last_error(ctx)->message);
    return m;
}

Test(signatures, typed_and_plain_exports_parse_in_order)
{
    kb_ctx *ctx = kbt_ctx();
    kb_manifest *m = parse_ok(ctx, typed_text);
    cr_assert_eq(m->exports.len, 3);
    cr_expect_str_eq(m->exports.items[0], "plain_f32");
    cr_expect_null(m->export_sigs[0].returns, "a plain name declares no signature");
    const kb_export_sig *s = &m->export_sigs[1];
    cr_expect_str_eq(s->name, "rms_bf16");
    cr_expect_str_eq(s->returns, "status", "returns defaults to status");
    cr_assert_eq(s->arg_count, 6);
    cr_expect_eq(s->args[0].dir, KB_ARG_OUT);
    cr_expect_eq(s->args[1].dir, KB_ARG_IN);
    cr_expect_str_eq(s->args[1].shape.items[1], "(cols + 1) / 2 * 2");
    cr_expect_eq(s->args[2].dir, KB_ARG_SCALAR);
    cr_expect_str_eq(m->export_sigs[2].returns, "u64");
    cr_expect_eq(m->export_sigs[2].arg_count, 0);
    kb_manifest_free(m);
    kb_ctx_free(ctx);
}

Test(signatures, c_declaration_json_and_text)
{
    kb_ctx *ctx = kbt_ctx();
    kb_manifest *m = parse_ok(ctx, typed_text);
    kb_buf b = KB_BUF_INIT;
    cr_assert_eq(kbi_export_sig_c_decl(&b, &m->export_sigs[1]), 0);
    cr_expect_str_eq(b.data, "int (*const kb_sig_rms_bf16)(uint16_t *, const uint16_t *, int64_t, "
                             "int32_t, float, void *) = rms_bf16;\n");
    kbi_buf_free(&b);
    cr_assert_eq(kbi_export_sig_c_decl(&b, &m->export_sigs[2]), 0);
    cr_expect_str_eq(b.data, "uint64_t (*const kb_sig_count)(void) = count;\n");
    kbi_buf_free(&b);

    json_t *sigs = json_object();
    json_object_set_new(sigs, "rms_bf16", kbi_export_sig_json(&m->export_sigs[1]));
    char *text = json_dumps(sigs, JSON_COMPACT);
    cr_expect_str_eq(text,
                     "{\"rms_bf16\":{\"returns\":\"status\",\"args\":["
                     "{\"name\":\"out\",\"type\":\"bf16\",\"dir\":\"out\",\"shape\":"
                     "[\"rows\",\"cols\"]},{\"name\":\"x\",\"type\":\"bf16\",\"dir\":\"in\","
                     "\"shape\":[\"rows\",\"(cols + 1) / 2 * 2\"]},{\"name\":\"rows\","
                     "\"type\":\"i64\"},{\"name\":\"cols\",\"type\":\"i32\"},{\"name\":"
                     "\"eps\",\"type\":\"f32\"},{\"name\":\"stream\",\"type\":\"stream\"}]}}");
    char *line = NULL;
    cr_assert_eq(kb_signature_text(&line, ctx, text, "rms_bf16"), 0);
    cr_expect_str_eq(line, "rms_bf16(out: out bf16[rows, cols], x: in bf16[rows, (cols + 1) / 2 * "
                           "2], rows: i64, cols: i32, eps: f32, stream) -> status");
    free(line);
    cr_expect_eq(kb_signature_text(&line, ctx, text, "nope"), KB_ERR_NOT_FOUND);
    cr_expect_eq(kb_signature_text(&line, ctx, "{\"x\": ", "x"), KB_ERR_PARSE);
    cr_expect_null(line);
    free(text);
    json_decref(sigs);
    kb_manifest_free(m);
    kb_ctx_free(ctx);
}

static const struct {
    const char *exports; /* the text after "exports:\n" (HEAD is 5 lines, exports: line 6) */
    const char *message; /* after "k.yaml:" */
} bad[] = {
    {"  - name: f\n    args:\n      - {name: x, type: bf17, dir: in}\n",
     "9:25: exports[0].args[0].type: unknown type 'bf17' (expected one of: f16, bf16,"},
    {"  - name: f\n    args:\n      - {name: x, type: f32, dir: sideways}\n",
     "9:35: exports[0].args[0].dir: 'sideways' is not a direction (in, out, inout)"},
    {"  - name: f\n    args:\n      - {name: x, type: f32, dir: in, shape: [n]}\n"
     "      - {name: n, type: f32}\n",
     "9:47: exports[0].args[0].shape[0]: 'n' is not an integer argument of this export"},
    {"  - name: f\n    args:\n      - {name: x, type: f32, dir: in, shape: [\"n +\"]}\n"
     "      - {name: n, type: i64}\n",
     "9:47: exports[0].args[0].shape[0]: expected a name, an integer or '(' at 'the end'"},
    {"  - name: f\n    args:\n      - {name: x, type: f32, dir: in, shape: [\"n; rm\"]}\n"
     "      - {name: n, type: i64}\n",
     "9:47: exports[0].args[0].shape[0]: unexpected '; rm' (expressions use names"},
    {"  - name: f\n    args:\n      - {name: x, type: bf16}\n",
     "9:25: exports[0].args[0]: a bf16 cannot be passed by value in C: pass it as f32, or give "
     "'x' a dir"},
    {"  - name: f\n    args:\n      - {name: n, type: i64, shape: [4]}\n",
     "9:37: exports[0].args[0]: 'shape' is for pointers: give 'n' a dir"},
    {"  - name: f\n    args:\n      - {name: s, type: stream, dir: in}\n",
     "9:25: exports[0].args[0]: the stream argument takes no 'dir' or 'shape'"},
    {"  - name: f\n    args:\n      - {name: n, type: i64}\n      - {name: n, type: i32}\n",
     "10:16: exports[0].args[1]: argument 'n' is listed twice"},
    {"  - name: f\n    returns: bf16\n", "8:14: exports[0].returns: 'bf16' is not a return type"},
    {"  - name: f\n    argz: []\n",
     "8:5: exports[0]: unknown key 'argz' (expected one of: name, returns, args)"},
    {"  - args: []\n", "7:5: exports[0]: missing required key 'name'"},
    {"  - f\n  - name: f\n", "8:11: exports[1].name: 'f' is listed twice"},
    {"  - name: 2f\n", "7:11: exports[0].name: '2f' is not a C identifier"},
    {"  - name: f\n    args:\n      - x\n",
     "9:9: exports[0].args[0]: expected a mapping {name, type, dir, shape}, got a scalar"},
};

Test(signatures, bad_declarations_name_file_line_column)
{
    kb_ctx *ctx = kbt_ctx();
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *text = kbi_asprintf(HEAD "exports:\n%s", bad[i].exports);
        kb_manifest *m = NULL;
        int rc = kbi_manifest_parse(ctx, &m, "k.yaml", text, strlen(text));
        cr_expect_eq(rc, KB_ERR_MANIFEST, "case %zu: %d", i, rc);
        const char *msg = kb_ctx_last_error(ctx)->message;
        cr_expect(strncmp(msg, "k.yaml:", 7) == 0 &&
                      strncmp(msg + 7, bad[i].message, strlen(bad[i].message)) == 0,
                  "case %zu:\n got: %s\nwant: k.yaml:%s", i, msg, bad[i].message);
        cr_expect_null(m);
        kb_manifest_free(m);
        free(text);
    }
    kb_ctx_free(ctx);
}
