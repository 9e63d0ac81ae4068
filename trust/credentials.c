/* Registry credentials: <config.dir>/credentials.json ({host: {user, password}}), 0600. */
#include "registry/registry.h"
#include "trust/trust_internal.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

static char *credentials_path(const kb_ctx *ctx)
{
    return kbi_path_join(kbi_config_str(ctx, "config.dir"), "credentials.json");
}

/* The host ("host:port") credentials are stored under; layout folders have none. */
static int host_of(char **out, kb_ctx *ctx, const char *registry_ref)
{
    *out = NULL;
    kb_registry_url u = {0};
    int rc = kbi_registry_url_parse(&u, ctx, registry_ref ? registry_ref : "", true);
    if (rc)
        return rc;
    if (u.layout)
        rc = kbi_error_set(ctx, KB_ERR_INVALID, "%s is a layout folder: it needs no credentials",
                           registry_ref);
    else if (!(*out = kbi_strdup(u.host)))
        rc = kbi_error_oom(ctx);
    kbi_registry_url_free(&u);
    return rc;
}

/* The file's JSON object ({} when absent). Parse errors name the file, line and column. */
static int load_credentials(json_t **out, kb_ctx *ctx, const char *path)
{
    *out = NULL;
    if (!kbi_path_exists(path)) {
        *out = json_object();
        return *out ? 0 : kbi_error_oom(ctx);
    }
    kb_buf text = KB_BUF_INIT;
    int rc = kbi_read_file(ctx, path, &text);
    if (rc)
        return rc;
    json_error_t jerr;
    json_t *root = json_loadb(text.data ? text.data : "", text.len, JSON_REJECT_DUPLICATES, &jerr);
    if (text.data)
        OPENSSL_cleanse(text.data, text.len);
    kbi_buf_free(&text);
    if (!root)
        /* jerr.text may quote the file's content, so only the position is reported */
        return kbi_error_set_path(ctx, KB_ERR_PARSE, path, (unsigned)jerr.line,
                                  (unsigned)jerr.column, "%s:%d:%d: not valid JSON", path,
                                  jerr.line, jerr.column);
    if (!json_is_object(root)) {
        json_decref(root);
        return kbi_error_set_path(ctx, KB_ERR_PARSE, path, 1, 1, "%s: expected an object of hosts",
                                  path);
    }
    *out = root;
    return 0;
}

static int save_credentials(kb_ctx *ctx, const char *path, const json_t *root)
{
    int rc = kbi_mkdir_p(ctx, kbi_config_str(ctx, "config.dir"), 0700);
    if (rc)
        return rc;
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (!text)
        return kbi_error_oom(ctx);
    size_t len = strlen(text);
    rc = kbi_write_file_atomic(ctx, path, text, len, 0600);
    OPENSSL_cleanse(text, len);
    free(text);
    return rc;
}

static int from_environment(char **user, char **password)
{
    const char *u = getenv("KBPKG_REGISTRY_USER");
    if (!u || !*u)
        return 0;
    const char *p = getenv("KBPKG_REGISTRY_PASSWORD");
    *user = kbi_strdup(u);
    *password = kbi_strdup(p ? p : "");
    return *user && *password ? 1 : -1;
}

KB_EXTERN int kb_trust_credentials_for(char **user, char **password, kb_ctx *ctx,
                                       const char *registry_ref)
{
    *user = NULL;
    *password = NULL;
    int env = from_environment(user, password);
    if (env > 0)
        return 0;
    if (env < 0) {
        kb_trust_credentials_free(*user, *password);
        *user = *password = NULL;
        return kbi_error_oom(ctx);
    }
    kb_registry_url u = {0};
    int rc = kbi_registry_url_parse(&u, ctx, registry_ref ? registry_ref : "", true);
    bool layout = !rc && u.layout;
    char *host = !rc && !layout ? kbi_strdup(u.host) : NULL;
    kbi_registry_url_free(&u);
    if (rc || layout)
        return rc; /* a layout folder needs none */
    char *path = credentials_path(ctx);
    json_t *root = NULL;
    rc = host && path ? load_credentials(&root, ctx, path) : kbi_error_oom(ctx);
    json_t *entry = rc ? NULL : json_object_get(root, host);
    const char *u_s = json_string_value(json_object_get(entry, "user"));
    const char *p_s = json_string_value(json_object_get(entry, "password"));
    if (u_s && p_s) {
        *user = kbi_strdup(u_s);
        *password = kbi_strdup(p_s);
        if (!*user || !*password) {
            kb_trust_credentials_free(*user, *password);
            *user = *password = NULL;
            rc = kbi_error_oom(ctx);
        }
    }
    json_decref(root);
    free(path);
    free(host);
    return rc;
}

KB_EXTERN int kb_trust_credentials_store(kb_ctx *ctx, const char *registry_ref, const char *user,
                                         const char *password)
{
    if (!user || !*user || !password)
        return kbi_error_set(ctx, KB_ERR_INVALID, "a login needs a user name and a password");
    char *host = NULL, *path = NULL;
    json_t *root = NULL;
    int rc = host_of(&host, ctx, registry_ref);
    if (!rc)
        rc = (path = credentials_path(ctx)) ? load_credentials(&root, ctx, path)
                                            : kbi_error_oom(ctx);
    if (!rc) {
        json_t *entry = json_pack("{s:s,s:s}", "user", user, "password", password);
        rc = entry && json_object_set_new(root, host, entry) == 0 ? 0 : kbi_error_oom(ctx);
    }
    if (!rc)
        rc = save_credentials(ctx, path, root);
    json_decref(root);
    free(path);
    free(host);
    return rc;
}

KB_EXTERN int kb_trust_credentials_remove(kb_ctx *ctx, const char *registry_ref)
{
    char *host = NULL, *path = NULL;
    json_t *root = NULL;
    int rc = host_of(&host, ctx, registry_ref);
    if (!rc)
        rc = (path = credentials_path(ctx)) ? load_credentials(&root, ctx, path)
                                            : kbi_error_oom(ctx);
    if (!rc && json_object_del(root, host) != 0)
        rc = kbi_error_set(ctx, KB_ERR_NOT_FOUND, "no credentials stored for %s", host);
    if (!rc)
        rc = save_credentials(ctx, path, root);
    json_decref(root);
    free(path);
    free(host);
    return rc;
}

KB_EXTERN void kb_trust_credentials_free(char *user, char *password)
{
    if (password)
        OPENSSL_cleanse(password, strlen(password));
    free(user);
    free(password);
}

KB_EXTERN int kb_trust_registry_open(kb_registry **out, kb_ctx *ctx, const char *registry_ref)
{
    const char *url = registry_ref ? registry_ref : kbi_config_str(ctx, "registry");
    int rc = kb_registry_open(out, ctx, url);
    if (rc)
        return rc;
    char *user = NULL, *password = NULL;
    rc = kb_trust_credentials_for(&user, &password, ctx, url);
    if (!rc && user)
        rc = kb_registry_set_credentials(*out, user, password);
    kb_trust_credentials_free(user, password);
    if (rc) {
        kb_registry_free(*out);
        *out = NULL;
    }
    return rc;
}
