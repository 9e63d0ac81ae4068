/* Registry helpers: reference URLs, digests and tags, WWW-Authenticate and OCI error bodies. */
#include "registry/registry.h"

#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *kbi_digest_hex(const char *digest)
{
    if (!digest || !kbi_str_starts(digest, "sha256:"))
        return NULL;
    const char *hex = digest + 7;
    size_t n = 0;
    for (; hex[n]; n++)
        if (!isdigit((unsigned char)hex[n]) && !(hex[n] >= 'a' && hex[n] <= 'f'))
            return NULL;
    return n == 64 ? hex : NULL;
}

bool kbi_digest_valid(const char *digest)
{
    return kbi_digest_hex(digest) != NULL;
}

bool kbi_tag_valid(const char *tag)
{
    if (!tag || !*tag || strlen(tag) > 128)
        return false;
    if (!isalnum((unsigned char)tag[0]) && tag[0] != '_')
        return false;
    for (const char *p = tag; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '-')
            return false;
    return true;
}

bool kbi_host_is_loopback(const char *host)
{
    /* host may carry a port: compare the name part */
    size_t n = strlen(host);
    if (host[0] == '[') {
        const char *end = strchr(host, ']');
        return end && (size_t)(end - host) == 4 && strncmp(host, "[::1]", 5) == 0;
    }
    const char *colon = strchr(host, ':');
    if (colon)
        n = (size_t)(colon - host);
    if (n == 9 && strncmp(host, "localhost", 9) == 0)
        return true;
    return n >= 4 && strncmp(host, "127.", 4) == 0;
}

void kbi_registry_url_free(kb_registry_url *u)
{
    free(u->path);
    free(u->base);
    free(u->host);
    free(u->namespace);
    free(u->ref);
    memset(u, 0, sizeof(*u));
}

static int parse_layout(kb_registry_url *out, kb_ctx *ctx, const char *path)
{
    if (!*path)
        return kbi_error_set(ctx, KB_ERR_CONFIG, "registry: empty layout folder path");
    out->layout = true;
    out->path = kbi_strdup(path);
    /* a trailing slash would make joined paths look different for the same folder */
    size_t n = out->path ? strlen(out->path) : 0;
    while (n > 1 && out->path[n - 1] == '/')
        out->path[--n] = '\0';
    out->ref = out->path ? kbi_strdup(out->path) : NULL;
    return out->ref ? 0 : kbi_error_oom(ctx);
}

int kbi_registry_url_parse(kb_registry_url *out, kb_ctx *ctx, const char *ref, bool insecure)
{
    memset(out, 0, sizeof(*out));
    if (!ref || !*ref)
        return kbi_error_set(ctx, KB_ERR_CONFIG, "registry: no registry given");
    if (kbi_str_starts(ref, "file://"))
        return parse_layout(out, ctx, ref + 7);
    const char *sep = strstr(ref, "://");
    if (!sep)
        return parse_layout(out, ctx, ref);

    const char *scheme_end = sep;
    size_t scheme_len = (size_t)(scheme_end - ref);
    const char *hostp = sep + 3;
    const char *slash = strchr(hostp, '/');
    size_t host_len = slash ? (size_t)(slash - hostp) : strlen(hostp);
    const char *at = memchr(hostp, '@', host_len);
    if (at) {
        /* Never echoed: the part before '@' may be a password. */
        size_t rest = strlen(at + 1);
        return kbi_error_set(ctx, KB_ERR_CONFIG,
                             "registry '%.*s://***@%.*s': a user name or password in the registry "
                             "URL is refused (it would end up in logs, errors and install "
                             "records); log in instead: kbpkg login %.*s://%.*s --username USER "
                             "--password-stdin",
                             (int)scheme_len, ref, (int)rest, at + 1, (int)scheme_len, ref,
                             (int)rest, at + 1);
    }
    if (host_len == 0)
        return kbi_error_set(ctx, KB_ERR_CONFIG, "registry '%s': no host", ref);
    char *host = kbi_strndup(hostp, host_len);
    if (!host)
        return kbi_error_oom(ctx);
    bool loopback = kbi_host_is_loopback(host);
    const char *scheme;
    if (scheme_len == 3 && strncmp(ref, "oci", 3) == 0) {
        scheme = loopback || insecure ? "http" : "https";
    } else if (scheme_len == 5 && strncmp(ref, "https", 5) == 0) {
        scheme = "https";
    } else if (scheme_len == 4 && strncmp(ref, "http", 4) == 0) {
        if (!loopback && !insecure) {
            free(host);
            return kbi_error_set(ctx, KB_ERR_CONFIG,
                                 "registry '%s': plain http is only allowed to loopback "
                                 "(set insecure=true to allow it)",
                                 ref);
        }
        scheme = "http";
    } else {
        free(host);
        return kbi_error_set(ctx, KB_ERR_CONFIG,
                             "registry '%s': unknown scheme (use a folder, file://, oci://, "
                             "https:// or http://)",
                             ref);
    }
    const char *ns = slash ? slash + 1 : "";
    size_t ns_len = strlen(ns);
    while (ns_len && ns[ns_len - 1] == '/')
        ns_len--;
    out->host = host;
    out->base = kbi_asprintf("%s://%s", scheme, host);
    out->namespace = kbi_strndup(ns, ns_len);
    out->ref = !out->base ? NULL
               : ns_len   ? kbi_asprintf("%s/%.*s", out->base, (int)ns_len, ns)
                          : kbi_strdup(out->base);
    if (!out->base || !out->namespace || !out->ref) {
        kbi_registry_url_free(out);
        return kbi_error_oom(ctx);
    }
    if (ns_len && !kbi_repo_valid(out->namespace)) {
        int rc = kbi_error_set(ctx, KB_ERR_CONFIG, "registry '%s': invalid namespace '%s'", ref,
                               out->namespace);
        kbi_registry_url_free(out);
        return rc;
    }
    return 0;
}

void kbi_auth_challenge_free(kb_auth_challenge *c)
{
    free(c->scheme);
    free(c->realm);
    free(c->service);
    free(c->scope);
    memset(c, 0, sizeof(*c));
}

/* One auth-param: name=token or name="quoted \" string"; advances *p. */
static int next_param(const char **p, char **name, char **value)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t' || *s == ',')
        s++;
    if (!*s)
        return 0;
    const char *eq = s;
    while (*eq && *eq != '=' && *eq != ',' && *eq != ' ')
        eq++;
    if (*eq != '=')
        return -1;
    *name = kbi_strndup(s, (size_t)(eq - s));
    const char *v = eq + 1;
    kb_buf b = KB_BUF_INIT;
    if (*v == '"') {
        v++;
        while (*v && *v != '"') {
            if (*v == '\\' && v[1])
                v++;
            kbi_buf_append(&b, v, 1);
            v++;
        }
        if (*v != '"') {
            kbi_buf_free(&b);
            free(*name);
            return -1;
        }
        v++;
    } else {
        const char *end = v;
        while (*end && *end != ',' && *end != ' ')
            end++;
        kbi_buf_append(&b, v, (size_t)(end - v));
        v = end;
    }
    kbi_buf_grow(&b, 0);
    *value = kbi_buf_detach(&b);
    *p = v;
    return 1;
}

int kbi_auth_challenge_parse(kb_auth_challenge *out, const char *header)
{
    memset(out, 0, sizeof(*out));
    const char *s = header;
    while (*s == ' ')
        s++;
    const char *end = s;
    while (*end && *end != ' ')
        end++;
    if (end == s)
        return KB_ERR_PARSE;
    out->scheme = kbi_strndup(s, (size_t)(end - s));
    const char *p = end;
    for (;;) {
        char *name = NULL, *value = NULL;
        int got = next_param(&p, &name, &value);
        if (got < 0) {
            kbi_auth_challenge_free(out);
            return KB_ERR_PARSE;
        }
        if (got == 0)
            break;
        char **slot = NULL;
        if (strcasecmp(name, "realm") == 0)
            slot = &out->realm;
        else if (strcasecmp(name, "service") == 0)
            slot = &out->service;
        else if (strcasecmp(name, "scope") == 0)
            slot = &out->scope;
        if (slot) {
            free(*slot);
            *slot = value;
        } else {
            free(value); /* error=, and params we do not use */
        }
        free(name);
    }
    return 0;
}

char *kbi_oci_error_summary(const char *body, size_t len)
{
    if (!body || !len)
        return NULL;
    json_t *root = json_loadb(body, len, 0, NULL);
    json_t *errors = root ? json_object_get(root, "errors") : NULL;
    json_t *first = json_is_array(errors) ? json_array_get(errors, 0) : NULL;
    const char *code = json_string_value(json_object_get(first, "code"));
    const char *message = json_string_value(json_object_get(first, "message"));
    char *summary = NULL;
    if (code && *code) /* an empty code says nothing: the caller falls back to the status */
        summary = message && *message ? kbi_asprintf("%s: %s", code, message) : kbi_strdup(code);
    json_decref(root);
    return summary;
}
