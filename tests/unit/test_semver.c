/* Semver: parsing, precedence (semver.org's chain), constraints and their error messages. */
#include "kbtest.h"
#include "model/semver.h"

#include <stdio.h>
#include <string.h>

static kb_semver v(const char *text)
{
    kb_semver out;
    cr_assert_eq(kbi_semver_parse(NULL, &out, text), 0, "'%s' should parse", text);
    return out;
}

Test(semver, parses_all_parts)
{
    kb_semver s = v("1.22.333-rc.1+build.5-x");
    cr_expect_eq(s.major, 1);
    cr_expect_eq(s.minor, 22);
    cr_expect_eq(s.patch, 333);
    cr_expect_str_eq(s.pre, "rc.1");
    cr_expect_str_eq(s.build, "build.5-x");
    char buf[160];
    kbi_semver_format(&s, buf, sizeof(buf));
    cr_expect_str_eq(buf, "1.22.333-rc.1+build.5-x");
    s = v("0.0.0");
    kbi_semver_format(&s, buf, sizeof(buf));
    cr_expect_str_eq(buf, "0.0.0");
    s = v("18446744073709551615.0.0");
    cr_expect_eq(s.major, UINT64_MAX);
}

Test(semver, precedence_follows_semver_org_chain)
{
    static const char *chain[] = {"1.0.0-alpha",  "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
                                  "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1",       "1.0.0",
                                  "1.0.1",        "1.1.0",         "1.10.0",           "2.0.0"};
    size_t n = sizeof(chain) / sizeof(chain[0]);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            kb_semver a = v(chain[i]), b = v(chain[j]);
            int c = kbi_semver_cmp(&a, &b);
            int want = i < j ? -1 : i > j;
            cr_expect_eq(c < 0 ? -1 : c > 0, want, "cmp(%s, %s) = %d", chain[i], chain[j], c);
        }
}

Test(semver, build_metadata_is_ignored_in_ordering)
{
    kb_semver a = v("1.0.0+a"), b = v("1.0.0+b.2");
    cr_expect_eq(kbi_semver_cmp(&a, &b), 0);
}

static const struct {
    const char *text;
    const char *why;
} bad_versions[] = {
    {"1.0", "expected MAJOR.MINOR.PATCH"},
    {"1", "expected MAJOR.MINOR.PATCH"},
    {"01.0.0", "leading zero in a number"},
    {"1.02.0", "leading zero in a number"},
    {"1.0.00", "leading zero in a number"},
    {"1.0.0-01", "leading zero in a numeric identifier"},
    {"1.0.0-", "empty identifier"},
    {"1.0.0-a..b", "empty identifier"},
    {"1.0.0+", "empty identifier"},
    {"1.0.0-a_b", "identifiers may hold only [0-9A-Za-z-]"},
    {"v1.0.0", "expected a number"},
    {"1.0.0 ", "unexpected characters"},
    {"1.-1.0", "expected a number"},
    {"", "empty version"},
    {"18446744073709551616.0.0", "number too large"},
};

Test(semver, bad_versions_name_the_text_and_the_fault)
{
    kb_ctx *ctx = kbt_ctx();
    for (size_t i = 0; i < sizeof(bad_versions) / sizeof(bad_versions[0]); i++) {
        kb_semver s;
        cr_expect_eq(kbi_semver_parse(ctx, &s, bad_versions[i].text), KB_ERR_VERSION, "'%s'",
                     bad_versions[i].text);
        const char *msg = kb_ctx_last_error(ctx)->message;
        char quoted[64];
        snprintf(quoted, sizeof(quoted), "'%s'", bad_versions[i].text);
        cr_expect(strstr(msg, quoted), "message '%s' should name %s", msg, quoted);
        cr_expect(strstr(msg, bad_versions[i].why), "message '%s' should say '%s'", msg,
                  bad_versions[i].why);
    }
    kb_ctx_free(ctx);
}

static const struct {
    const char *constraint;
    const char *version;
    bool match;
} cases[] = {
    /* exact */
    {"1.2.3", "1.2.3", true},
    {"1.2.3", "1.2.4", false},
    {"=1.2.3", "1.2.3", true},
    {"=1.2.3", "1.2.3+build", true},
    {"=1.2", "1.2.9", true},
    {"=1.2", "1.3.0", false},
    {"1", "1.9.9", true},
    {"1", "2.0.0", false},
    /* caret, cargo semantics */
    {"^1.2", "1.2.0", true},
    {"^1.2", "1.9.0", true},
    {"^1.2", "1.1.9", false},
    {"^1.2", "2.0.0", false},
    {"^1.2.3", "1.2.2", false},
    {"^0.2.3", "0.2.3", true},
    {"^0.2.3", "0.2.9", true},
    {"^0.2.3", "0.3.0", false},
    {"^0.0.3", "0.0.3", true},
    {"^0.0.3", "0.0.4", false},
    {"^0.0", "0.0.7", true},
    {"^0.0", "0.1.0", false},
    {"^0", "0.9.0", true},
    {"^1", "1.0.0", true},
    /* tilde */
    {"~1.2", "1.2.7", true},
    {"~1.2", "1.3.0", false},
    {"~1.2.3", "1.2.2", false},
    {"~1.2.3", "1.2.9", true},
    {"~1", "1.9.0", true},
    {"~1", "2.0.0", false},
    /* ranges: comma is AND */
    {">=1.0,<2", "1.0.0", true},
    {">=1.0,<2", "1.99.99", true},
    {">=1.0,<2", "2.0.0", false},
    {">=1.0,<2", "0.9.9", false},
    {">= 1.0 , < 2", "1.5.0", true},
    {">1.2.3", "1.2.3", false},
    {">1.2.3", "1.2.4", true},
    {">1.2", "1.2.9", false},
    {">1.2", "1.3.0", true},
    {"<=1.2.3", "1.2.3", true},
    {"<=1.2", "1.2.9", true},
    {"<=1.2", "1.3.0", false},
    {"<1.2", "1.1.99", true},
    {"<1.2", "1.2.0", false},
    /* wildcards */
    {"*", "0.0.1", true},
    {"*", "99.0.0", true},
    {"1.x", "1.4.0", true},
    {"1.x", "2.0.0", false},
    {"1.2.*", "1.2.5", true},
    {"1.2.*", "1.3.0", false},
    /* pre-releases match only when the constraint names one of the same x.y.z */
    {"*", "1.0.0-rc.1", false},
    {"^1.0", "1.1.0-beta", false},
    {">=1.0,<2", "2.0.0-alpha", false},
    {"^1.2.3-beta.2", "1.2.3-beta.3", true},
    {"^1.2.3-beta.2", "1.2.3-beta.1", false},
    {"^1.2.3-beta.2", "1.2.4-beta.1", false},
    {"^1.2.3-beta.2", "1.2.4", true},
    {"=1.0.0-rc.1", "1.0.0-rc.1", true},
    {">=1.0.0-rc.1", "1.0.0", true},
    {">=1.0.0-rc.1", "1.0.0-rc.0", false},
    /* upper bounds at UINT64_MAX carry instead of wrapping to 0 (found by fuzz_semver) */
    {"^18446744073709551615.0.0", "18446744073709551615.0.0", true},
    {"^18446744073709551615.0.0", "18446744073709551615.7.1", true},
    {"~1.18446744073709551615.0", "1.18446744073709551615.9", true},
    {"~1.18446744073709551615.0", "2.0.0", false},
    {"^0.0.18446744073709551615", "0.0.18446744073709551615", true},
    {"^0.0.18446744073709551615", "0.1.0", false},
    {"1.18446744073709551615", "1.18446744073709551615.3", true},
    {"18446744073709551615", "18446744073709551615.2.3", true},
    {"<=18446744073709551615", "18446744073709551615.2.3", true},
    {">18446744073709551615", "18446744073709551615.2.3", false},
    {">1.18446744073709551615", "2.0.0", true},
};

Test(semver, constraints_match_per_table)
{
    kb_ctx *ctx = kbt_ctx();
    size_t n = sizeof(cases) / sizeof(cases[0]);
    cr_assert_geq(n, 30);
    for (size_t i = 0; i < n; i++) {
        kb_constraint *c = NULL;
        cr_assert_eq(kbi_constraint_parse(ctx, &c, cases[i].constraint), 0, "'%s': %s",
                     cases[i].constraint, kb_ctx_last_error(ctx)->message);
        kb_semver s = v(cases[i].version);
        cr_expect_eq(kbi_constraint_match(c, &s), cases[i].match, "'%s' vs %s: expected %s",
                     cases[i].constraint, cases[i].version, cases[i].match ? "match" : "no match");
        kbi_constraint_free(c);
    }
    kb_ctx_free(ctx);
}

static const struct {
    const char *text;
    const char *why;
} bad_constraints[] = {
    {"", "empty comparator"},
    {">=1.0,", "empty comparator"},
    {">=", "an operator needs a version"},
    {"^x", "needs a version, not '*'"},
    {"1.x.3", "a number cannot follow a wildcard"},
    {"1.2-beta", "a pre-release needs a full MAJOR.MINOR.PATCH"},
    {"01.2", "leading zero"},
    {"1.2.3.4", "too many components"},
    {"1.", "trailing '.'"},
    {"abc", "expected a number"},
    {"=>1.0", "expected a number"},
    {"<*", "matches nothing"},
};

Test(semver, bad_constraints_name_the_text)
{
    kb_ctx *ctx = kbt_ctx();
    for (size_t i = 0; i < sizeof(bad_constraints) / sizeof(bad_constraints[0]); i++) {
        kb_constraint *c = (kb_constraint *)1;
        cr_expect_eq(kbi_constraint_parse(ctx, &c, bad_constraints[i].text), KB_ERR_VERSION,
                     "'%s' should be refused", bad_constraints[i].text);
        cr_expect_null(c);
        const char *msg = kb_ctx_last_error(ctx)->message;
        char quoted[64];
        snprintf(quoted, sizeof(quoted), "'%s' is not a version constraint",
                 bad_constraints[i].text);
        cr_expect(strstr(msg, quoted), "message '%s' should start with %s", msg, quoted);
        cr_expect(strstr(msg, bad_constraints[i].why), "message '%s' should say '%s'", msg,
                  bad_constraints[i].why);
    }
    kb_ctx_free(ctx);
}

Test(semver, public_version_satisfies)
{
    kb_ctx *ctx = kbt_ctx();
    int ok = -1;
    cr_expect_eq(kb_version_satisfies(&ok, ctx, "1.4.0", "^1.2"), 0);
    cr_expect_eq(ok, 1);
    cr_expect_eq(kb_version_satisfies(&ok, ctx, "2.0.0", "^1.2"), 0);
    cr_expect_eq(ok, 0);
    cr_expect_eq(kb_version_satisfies(&ok, ctx, "1.4", "^1.2"), KB_ERR_VERSION);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "'1.4'"));
    cr_expect_eq(kb_version_satisfies(&ok, ctx, "1.4.0", "^^1"), KB_ERR_VERSION);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "'^^1'"));
    kb_ctx_free(ctx);
}
