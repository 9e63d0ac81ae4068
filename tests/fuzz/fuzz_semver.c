/* libFuzzer target: semantic versions and constraints (manifests/semver.c). Lines: version a,
 * version b, constraint. Invariants: cmp is reflexive and antisymmetric, format/parse round-trips,
 * versions of equal precedence match a constraint alike, and a version matches the exact, caret,
 * tilde and >= constraints built from it. */
#include "fuzz_common.h"
#include "model/semver.h"

static int sign(int x)
{
    return (x > 0) - (x < 0);
}

/* Split text at the next newline; returns the rest (or "" at the end). */
static char *next_line(char *line)
{
    char *nl = strchr(line, '\n');
    if (!nl)
        return line + strlen(line);
    *nl = '\0';
    return nl + 1;
}

static void check_round_trip(kb_ctx *ctx, const kb_semver *v)
{
    char text[256];
    kbi_semver_format(v, text, sizeof(text));
    kb_semver again;
    FUZZ_CHECK(kbi_semver_parse(ctx, &again, text) == 0, "formatted '%s' does not parse", text);
    FUZZ_CHECK(kbi_semver_cmp(v, &again) == 0, "'%s' reparses to another precedence", text);
    FUZZ_CHECK(strcmp(v->build, again.build) == 0, "'%s' lost its build metadata", text);
    char twice[256];
    kbi_semver_format(&again, twice, sizeof(twice));
    FUZZ_CHECK(strcmp(text, twice) == 0, "format not stable: '%s' then '%s'", text, twice);
}

/* v matches "<op><v without build>". */
static void check_matches_own_constraint(kb_ctx *ctx, const kb_semver *v, const char *op)
{
    kb_semver bare = *v;
    bare.build[0] = '\0';
    char version[256], text[260];
    kbi_semver_format(&bare, version, sizeof(version));
    snprintf(text, sizeof(text), "%s%s", op, version);
    kb_constraint *c = NULL;
    int rc = kbi_constraint_parse(ctx, &c, text);
    FUZZ_CHECK(rc == 0, "constraint '%s' does not parse: %s", text,
               kb_ctx_last_error(ctx)->message);
    FUZZ_CHECK(kbi_constraint_match(c, v), "'%s' does not match %s", text, version);
    kbi_constraint_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    char *a_text = text;
    char *b_text = next_line(a_text);
    char *c_text = next_line(b_text);
    kb_ctx *ctx = fuzz_ctx();

    kb_semver a, b;
    int arc = kbi_semver_parse(ctx, &a, a_text);
    if (arc)
        fuzz_check_error(ctx, arc);
    int brc = kbi_semver_parse(ctx, &b, b_text);
    if (brc)
        fuzz_check_error(ctx, brc);
    if (!arc) {
        FUZZ_CHECK(kbi_semver_cmp(&a, &a) == 0, "'%s' differs from itself", a_text);
        check_round_trip(ctx, &a);
        static const char *const ops[] = {"", "=", ">=", "<=", "^", "~"};
        for (size_t i = 0; i < KB_ARRAY_LEN(ops); i++)
            check_matches_own_constraint(ctx, &a, ops[i]);
    }
    if (!arc && !brc)
        FUZZ_CHECK(sign(kbi_semver_cmp(&a, &b)) == -sign(kbi_semver_cmp(&b, &a)),
                   "cmp('%s','%s') not antisymmetric", a_text, b_text);

    kb_constraint *c = NULL;
    int crc = kbi_constraint_parse(ctx, &c, c_text);
    if (crc) {
        fuzz_check_error(ctx, crc);
        FUZZ_CHECK(c == NULL, "failed constraint parse returned one");
    } else if (!arc && !brc && kbi_semver_cmp(&a, &b) == 0) {
        FUZZ_CHECK(kbi_constraint_match(c, &a) == kbi_constraint_match(c, &b),
                   "'%s' and '%s' are equal but match '%s' differently", a_text, b_text, c_text);
    } else if (!arc) {
        (void)kbi_constraint_match(c, &a);
    }
    kbi_constraint_free(c);
    kb_ctx_free(ctx);
    free(text);
    return 0;
}
