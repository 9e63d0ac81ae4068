/* libFuzzer target: what a registry's 401 and error responses carry, read by registry/util.c:
 * the WWW-Authenticate challenge (kbi_auth_challenge_parse) and the OCI error body
 * (kbi_oci_error_summary). Invariants: a refused challenge leaves no field set; an accepted one
 * has a scheme without spaces, and its realm/service/scope written back as quoted strings
 * (escaping '"' and '\') parse to the same values; an error summary is NULL or non-empty. */
#include "fuzz_common.h"
#include "registry/registry.h"

static void quoted(kb_buf *b, const char *name, const char *value)
{
    if (!value)
        return;
    kbi_buf_printf(b, ",%s=\"", name);
    for (const char *s = value; *s; s++) {
        if (*s == '"' || *s == '\\')
            kbi_buf_append(b, "\\", 1);
        kbi_buf_append(b, s, 1);
    }
    kbi_buf_append(b, "\"", 1);
}

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void fuzz_challenge(const char *header)
{
    kb_auth_challenge c;
    if (kbi_auth_challenge_parse(&c, header) != 0) {
        FUZZ_CHECK(!c.scheme && !c.realm && !c.service && !c.scope, "refused, fields kept");
        return;
    }
    FUZZ_CHECK(c.scheme && *c.scheme && !strchr(c.scheme, ' '), "scheme '%s'",
               c.scheme ? c.scheme : "(null)");
    kb_buf b = KB_BUF_INIT;
    kbi_buf_printf(&b, "%s ", c.scheme);
    quoted(&b, "realm", c.realm);
    quoted(&b, "service", c.service);
    quoted(&b, "scope", c.scope);
    kb_auth_challenge again;
    FUZZ_CHECK(kbi_auth_challenge_parse(&again, b.data) == 0, "rewritten challenge refused: %s",
               b.data);
    FUZZ_CHECK(same(c.scheme, again.scheme) && same(c.realm, again.realm) &&
                   same(c.service, again.service) && same(c.scope, again.scope),
               "rewritten challenge reads differently: %s", b.data);
    kbi_auth_challenge_free(&again);
    kbi_auth_challenge_free(&c);
    kbi_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *header = fuzz_cstr(data, size);
    fuzz_challenge(header);
    free(header);
    char *summary = kbi_oci_error_summary((const char *)data, size);
    FUZZ_CHECK(!summary || *summary, "empty error summary");
    free(summary);
    return 0;
}
