/* ed25519 signing keys: generate, trust, list, revoke, export, all under <config.dir>/keys. */
#include "trust/trust_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_NAME_MAX 100

char *kbi_trust_keys_dir(const kb_ctx *ctx)
{
    return kbi_path_join(kbi_config_str(ctx, "config.dir"), "keys");
}

char *kbi_trust_key_file(const kb_ctx *ctx, const char *id, const char *suffix)
{
    char *dir = kbi_trust_keys_dir(ctx);
    char *path = dir ? kbi_asprintf("%s/%s%s", dir, id, suffix) : NULL;
    free(dir);
    return path;
}

bool kbi_trust_key_id_valid(const char *id)
{
    if (!id || strlen(id) != KB_TRUST_KEY_ID_LEN)
        return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

int kbi_trust_key_id_of(kb_ctx *ctx, EVP_PKEY *key, char id[KB_TRUST_KEY_ID_LEN + 1])
{
    unsigned char raw[32];
    size_t len = sizeof(raw);
    if (EVP_PKEY_get_raw_public_key(key, raw, &len) != 1 || len != sizeof(raw)) {
        ERR_clear_error();
        return kbi_error_set(ctx, KB_ERR_SIGNATURE, "cannot read the raw ed25519 public key");
    }
    char hex[65];
    kbi_sha256_hex(raw, len, hex);
    memcpy(id, hex, KB_TRUST_KEY_ID_LEN);
    id[KB_TRUST_KEY_ID_LEN] = '\0';
    return 0;
}

static int bad_id(kb_ctx *ctx, const char *id)
{
    return kbi_error_set(ctx, KB_ERR_INVALID, "invalid key id '%s' (expected %d lowercase hex)",
                         id ? id : "", KB_TRUST_KEY_ID_LEN);
}

/* The keys folder, created 0700 (and tightened when it exists wider). */
static int ensure_keys_dir(kb_ctx *ctx, char **dir_out)
{
    char *dir = kbi_trust_keys_dir(ctx);
    if (!dir)
        return kbi_error_oom(ctx);
    int rc = kbi_mkdir_p(ctx, dir, 0700);
    if (!rc && chmod(dir, 0700) != 0)
        rc = kbi_error_set_path(ctx, KB_ERR_IO, dir, 0, 0, "cannot make %s private: %s", dir,
                                strerror(errno));
    if (rc) {
        free(dir);
        return rc;
    }
    *dir_out = dir;
    return 0;
}

/* Private keys are created with O_EXCL and 0600 from the start: never a moment readable. */
static int write_exclusive(kb_ctx *ctx, const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return kbi_error_set_path(ctx, errno == EEXIST ? KB_ERR_EXISTS : KB_ERR_IO, path, 0, 0,
                                  "cannot create %s: %s", path, strerror(errno));
    const char *p = data;
    int rc = 0;
    while (len && !rc) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = kbi_error_set_path(ctx, KB_ERR_IO, path, 0, 0, "cannot write %s: %s", path,
                                    strerror(errno));
        else
            p += n, len -= (size_t)n;
    }
    if (!rc && fsync(fd) != 0)
        rc = kbi_error_set_path(ctx, KB_ERR_IO, path, 0, 0, "cannot sync %s: %s", path,
                                strerror(errno));
    close(fd);
    if (rc)
        unlink(path);
    return rc;
}

/* PEM text of the public or the private half; owned, NUL-terminated. */
static char *pem_of(EVP_PKEY *key, bool private_half)
{
    BIO *bio = BIO_new(BIO_s_mem());
    if (!bio)
        return NULL;
    int ok = private_half ? PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL)
                          : PEM_write_bio_PUBKEY(bio, key);
    char *data = NULL;
    long len = BIO_get_mem_data(bio, &data);
    char *pem = ok == 1 && len > 0 ? kbi_strndup(data, (size_t)len) : NULL;
    BIO_free(bio);
    return pem;
}

/* Parse PEM text; what names the source in errors. */
static int parse_pem(EVP_PKEY **out, kb_ctx *ctx, const kb_buf *text, bool private_half,
                     const char *what)
{
    *out = NULL;
    BIO *bio = BIO_new_mem_buf(text->data, (int)text->len);
    if (!bio)
        return kbi_error_oom(ctx);
    EVP_PKEY *key = private_half ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL)
                                 : PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    BIO_free(bio);
    ERR_clear_error();
    if (!key)
        return kbi_error_set_path(
            ctx, KB_ERR_PARSE, what, 0, 0,
            "%s: not a PEM %s key (expected a '-----BEGIN %s KEY-----' block)", what,
            private_half ? "private" : "public", private_half ? "PRIVATE" : "PUBLIC");
    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_ED25519) {
        const char *type = EVP_PKEY_get0_type_name(key);
        EVP_PKEY_free(key);
        return kbi_error_set_path(ctx, KB_ERR_UNSUPPORTED, what, 0, 0,
                                  "%s: the key is %s, but kbpkg signs and trusts only ed25519 keys",
                                  what, type ? type : "of an unknown type");
    }
    *out = key;
    return 0;
}

static int load_key(EVP_PKEY **out, kb_ctx *ctx, const char *id, bool private_half)
{
    *out = NULL;
    if (!kbi_trust_key_id_valid(id))
        return bad_id(ctx, id);
    char *path = kbi_trust_key_file(ctx, id, private_half ? ".key" : ".pub");
    if (!path)
        return kbi_error_oom(ctx);
    int rc = 0;
    if (!kbi_path_exists(path))
        rc = kbi_error_set_path(ctx, KB_ERR_NOT_FOUND, path, 0, 0, "no %s key %s (%s)",
                                private_half ? "private" : "trusted public", id, path);
    kb_buf text = KB_BUF_INIT;
    if (!rc)
        rc = kbi_read_file(ctx, path, &text);
    if (!rc)
        rc = parse_pem(out, ctx, &text, private_half, path);
    if (text.data)
        OPENSSL_cleanse(text.data, text.len);
    kbi_buf_free(&text);
    free(path);
    return rc;
}

int kbi_trust_load_public(EVP_PKEY **out, kb_ctx *ctx, const char *id)
{
    return load_key(out, ctx, id, false);
}

int kbi_trust_load_private(EVP_PKEY **out, kb_ctx *ctx, const char *id)
{
    return load_key(out, ctx, id, true);
}

/* First line of a small file in keys/, trimmed; NULL when absent. */
static char *read_first_line(kb_ctx *ctx, const char *leaf)
{
    char *dir = kbi_trust_keys_dir(ctx);
    char *path = dir ? kbi_path_join(dir, leaf) : NULL;
    free(dir);
    kb_buf b = KB_BUF_INIT;
    char *line = NULL;
    if (path && kbi_path_exists(path) && kbi_read_file(ctx, path, &b) == 0 && b.data)
        line = kbi_strndup(b.data, strcspn(b.data, "\r\n"));
    kbi_buf_free(&b);
    free(path);
    return line;
}

int kbi_trust_default_id(kb_ctx *ctx, char id[KB_TRUST_KEY_ID_LEN + 1])
{
    char *line = read_first_line(ctx, "default");
    int rc = 0;
    if (!line || !*line)
        rc = kbi_error_set(ctx, KB_ERR_NOT_FOUND,
                           "no default signing key: run 'kbpkg key generate' or name a key id");
    else if (!kbi_trust_key_id_valid(line))
        rc = kbi_error_set(ctx, KB_ERR_CONFIG, "keys/default names '%s', which is not a key id",
                           line);
    else
        memcpy(id, line, KB_TRUST_KEY_ID_LEN + 1);
    free(line);
    return rc;
}

/* keys/revoked: "<id> <reason>" per line; '#' lines are comments. */
static int read_revoked(kb_ctx *ctx, kb_strv *ids, kb_strv *reasons)
{
    char *dir = kbi_trust_keys_dir(ctx);
    char *path = dir ? kbi_path_join(dir, "revoked") : NULL;
    free(dir);
    if (!path)
        return kbi_error_oom(ctx);
    kb_buf b = KB_BUF_INIT;
    int rc = kbi_path_exists(path) ? kbi_read_file(ctx, path, &b) : 0;
    for (char *line = b.data; !rc && line && *line;) {
        size_t n = strcspn(line, "\n");
        char *next = line[n] ? line + n + 1 : line + n;
        line[n] = '\0';
        if (*line && *line != '#') {
            size_t idn = strcspn(line, " \t");
            char *reason = line + idn + strspn(line + idn, " \t");
            line[idn] = '\0';
            if (kbi_strv_push(ids, line) || kbi_strv_push(reasons, reason))
                rc = kbi_error_oom(ctx);
        }
        line = next;
    }
    kbi_buf_free(&b);
    free(path);
    return rc;
}

bool kbi_trust_is_revoked(kb_ctx *ctx, const char *id, char **reason_out)
{
    kb_strv ids = KB_STRV_INIT, reasons = KB_STRV_INIT;
    bool found = false;
    if (read_revoked(ctx, &ids, &reasons) == 0)
        for (size_t i = 0; i < ids.len && !found; i++)
            if (strcmp(ids.items[i], id) == 0) {
                found = true;
                if (reason_out)
                    *reason_out = kbi_strdup(reasons.items[i]);
            }
    kbi_strv_free(&ids);
    kbi_strv_free(&reasons);
    return found;
}

static kb_trust_key *key_new(const char *id)
{
    kb_trust_key *k = calloc(1, sizeof(*k));
    if (k && !(k->id = kbi_strdup(id))) {
        free(k);
        k = NULL;
    }
    return k;
}

/* Fill the flags and name of k from the files in keys/. */
static int describe_key(kb_ctx *ctx, kb_trust_key *k, const char *default_id)
{
    char *priv = kbi_trust_key_file(ctx, k->id, ".key");
    char *pub = kbi_trust_key_file(ctx, k->id, ".pub");
    char *name_leaf = kbi_asprintf("%s.name", k->id);
    int rc = priv && pub && name_leaf ? 0 : kbi_error_oom(ctx);
    if (!rc) {
        k->has_private = kbi_path_exists(priv);
        k->has_public = kbi_path_exists(pub);
        k->is_default = default_id && strcmp(default_id, k->id) == 0;
        k->revoked = kbi_trust_is_revoked(ctx, k->id, &k->revoked_reason);
        k->name = read_first_line(ctx, name_leaf);
    }
    free(priv);
    free(pub);
    free(name_leaf);
    return rc;
}

static int write_small(kb_ctx *ctx, const char *dir, const char *leaf, const char *text)
{
    char *path = kbi_path_join(dir, leaf);
    int rc = path ? kbi_write_file_atomic(ctx, path, text, strlen(text), 0644) : kbi_error_oom(ctx);
    free(path);
    return rc;
}

static int check_name(kb_ctx *ctx, const char *name)
{
    if (!name)
        return 0;
    size_t n = strlen(name);
    if (n == 0 || n > KEY_NAME_MAX || strpbrk(name, "\r\n"))
        return kbi_error_set(ctx, KB_ERR_INVALID,
                             "key name must be 1 to %d characters on one line, got '%s'",
                             KEY_NAME_MAX, name);
    return 0;
}

/* Write <id>.key (exclusive), <id>.pub, <id>.name and, when there is none, default. */
static int store_new_key(kb_ctx *ctx, const char *dir, EVP_PKEY *key, const char *id,
                         const char *name)
{
    char *priv_pem = pem_of(key, true);
    char *pub_pem = pem_of(key, false);
    char *priv_path = kbi_trust_key_file(ctx, id, ".key");
    char *pub_leaf = kbi_asprintf("%s.pub", id);
    int rc = priv_pem && pub_pem && priv_path && pub_leaf ? 0 : kbi_error_oom(ctx);
    if (!rc)
        rc = write_exclusive(ctx, priv_path, priv_pem, strlen(priv_pem));
    if (!rc)
        rc = write_small(ctx, dir, pub_leaf, pub_pem);
    if (!rc && name) {
        char *leaf = kbi_asprintf("%s.name", id);
        char *line = kbi_asprintf("%s\n", name);
        rc = leaf && line ? write_small(ctx, dir, leaf, line) : kbi_error_oom(ctx);
        free(leaf);
        free(line);
    }
    char current[KB_TRUST_KEY_ID_LEN + 1];
    if (!rc && kbi_trust_default_id(ctx, current) != 0) {
        kb_ctx_clear_error(ctx);
        char *line = kbi_asprintf("%s\n", id);
        rc = line ? write_small(ctx, dir, "default", line) : kbi_error_oom(ctx);
        free(line);
    }
    if (priv_pem)
        OPENSSL_cleanse(priv_pem, strlen(priv_pem));
    free(priv_pem);
    free(pub_pem);
    free(priv_path);
    free(pub_leaf);
    return rc;
}

KB_EXTERN int kb_trust_key_generate(kb_trust_key **out, kb_ctx *ctx, const char *name)
{
    *out = NULL;
    char *dir = NULL;
    int rc = check_name(ctx, name);
    if (!rc)
        rc = ensure_keys_dir(ctx, &dir);
    if (rc)
        return rc;
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    char id[KB_TRUST_KEY_ID_LEN + 1];
    if (!key) {
        ERR_clear_error();
        rc = kbi_error_set(ctx, KB_ERR_GENERIC, "OpenSSL could not generate an ed25519 key");
    }
    if (!rc)
        rc = kbi_trust_key_id_of(ctx, key, id);
    if (!rc)
        rc = store_new_key(ctx, dir, key, id, name);
    EVP_PKEY_free(key);
    free(dir);
    if (!rc)
        rc = kbi_trust_key_get_one(out, ctx, id);
    if (!rc)
        kbi_log(ctx, KB_LOG_DEBUG, "generated ed25519 key %s", id);
    return rc;
}

int kbi_trust_key_get_one(kb_trust_key **out, kb_ctx *ctx, const char *id)
{
    char default_id[KB_TRUST_KEY_ID_LEN + 1];
    bool has_default = kbi_trust_default_id(ctx, default_id) == 0;
    kb_ctx_clear_error(ctx);
    kb_trust_key *k = key_new(id);
    if (!k)
        return kbi_error_oom(ctx);
    int rc = describe_key(ctx, k, has_default ? default_id : NULL);
    if (rc) {
        kb_trust_key_free(k);
        return rc;
    }
    *out = k;
    return 0;
}

KB_EXTERN int kb_trust_key_import(kb_trust_key **out, kb_ctx *ctx, const char *pem_path)
{
    *out = NULL;
    kb_buf text = KB_BUF_INIT;
    EVP_PKEY *key = NULL;
    char *dir = NULL, *pem = NULL, *leaf = NULL;
    char id[KB_TRUST_KEY_ID_LEN + 1];
    int rc = kbi_read_file(ctx, pem_path, &text);
    if (!rc)
        rc = parse_pem(&key, ctx, &text, false, pem_path);
    if (!rc)
        rc = kbi_trust_key_id_of(ctx, key, id);
    char *reason = NULL;
    if (!rc && kbi_trust_is_revoked(ctx, id, &reason))
        rc = kbi_error_set_path(ctx, KB_ERR_SIGNATURE, pem_path, 0, 0,
                                "%s: key %s is revoked (%s); refusing to trust it", pem_path, id,
                                reason && *reason ? reason : "no reason given");
    free(reason);
    if (!rc)
        rc = ensure_keys_dir(ctx, &dir);
    if (!rc) {
        pem = pem_of(key, false); /* re-encoded: only the key, no surrounding text */
        leaf = kbi_asprintf("%s.pub", id);
        rc = pem && leaf ? write_small(ctx, dir, leaf, pem) : kbi_error_oom(ctx);
    }
    if (!rc)
        rc = kbi_trust_key_get_one(out, ctx, id);
    EVP_PKEY_free(key);
    kbi_buf_free(&text);
    free(dir);
    free(pem);
    free(leaf);
    return rc;
}

static int by_id(const void *a, const void *b)
{
    return strcmp(((const kb_trust_key *)a)->id, ((const kb_trust_key *)b)->id);
}

/* Ids named by *.key / *.pub files in dir, and by the revoked list. */
static int collect_ids(kb_ctx *ctx, kb_strv *ids)
{
    char *dir = kbi_trust_keys_dir(ctx);
    if (!dir)
        return kbi_error_oom(ctx);
    DIR *d = opendir(dir);
    struct dirent *e;
    int rc = 0;
    while (d && !rc && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n != KB_TRUST_KEY_ID_LEN + 4 ||
            !(kbi_str_ends(e->d_name, ".key") || kbi_str_ends(e->d_name, ".pub")))
            continue;
        char *id = kbi_strndup(e->d_name, KB_TRUST_KEY_ID_LEN);
        if (!id)
            rc = kbi_error_oom(ctx);
        else if (!kbi_trust_key_id_valid(id) || kbi_strv_contains(ids, id))
            free(id);
        else
            rc = kbi_strv_push_owned(ids, id);
    }
    if (d)
        closedir(d);
    free(dir);
    kb_strv revoked = KB_STRV_INIT, reasons = KB_STRV_INIT;
    if (!rc)
        rc = read_revoked(ctx, &revoked, &reasons);
    for (size_t i = 0; !rc && i < revoked.len; i++)
        if (kbi_trust_key_id_valid(revoked.items[i]) && !kbi_strv_contains(ids, revoked.items[i]))
            rc = kbi_strv_push(ids, revoked.items[i]);
    kbi_strv_free(&revoked);
    kbi_strv_free(&reasons);
    return rc;
}

KB_EXTERN int kb_trust_key_list(kb_trust_key **out, size_t *count_out, kb_ctx *ctx)
{
    *out = NULL;
    *count_out = 0;
    kb_strv ids = KB_STRV_INIT;
    int rc = collect_ids(ctx, &ids);
    kb_trust_key *keys = !rc && ids.len ? calloc(ids.len, sizeof(*keys)) : NULL;
    if (!rc && ids.len && !keys)
        rc = kbi_error_oom(ctx);
    char default_id[KB_TRUST_KEY_ID_LEN + 1];
    bool has_default = !rc && kbi_trust_default_id(ctx, default_id) == 0;
    kb_ctx_clear_error(ctx);
    size_t n = 0;
    for (; !rc && n < ids.len; n++) {
        keys[n].id = kbi_strdup(ids.items[n]);
        rc = keys[n].id ? describe_key(ctx, &keys[n], has_default ? default_id : NULL)
                        : kbi_error_oom(ctx);
    }
    kbi_strv_free(&ids);
    if (rc) {
        kb_trust_key_list_free(keys, n);
        return rc;
    }
    if (n)
        qsort(keys, n, sizeof(*keys), by_id);
    *out = keys;
    *count_out = n;
    return 0;
}

KB_EXTERN int kb_trust_key_revoke(kb_ctx *ctx, const char *key_id, const char *reason)
{
    if (!kbi_trust_key_id_valid(key_id))
        return bad_id(ctx, key_id);
    if (reason && strpbrk(reason, "\r\n"))
        return kbi_error_set(ctx, KB_ERR_INVALID, "a revocation reason must fit on one line");
    if (kbi_trust_is_revoked(ctx, key_id, NULL))
        return 0;
    char *dir = NULL;
    int rc = ensure_keys_dir(ctx, &dir);
    if (rc)
        return rc;
    char *path = kbi_path_join(dir, "revoked");
    kb_buf b = KB_BUF_INIT;
    if (!path)
        rc = kbi_error_oom(ctx);
    else if (kbi_path_exists(path))
        rc = kbi_read_file(ctx, path, &b);
    if (!rc && b.len && b.data[b.len - 1] != '\n')
        rc = kbi_buf_puts(&b, "\n");
    if (!rc)
        rc = kbi_buf_printf(&b, "%s %s\n", key_id, reason && *reason ? reason : "revoked");
    if (!rc)
        rc = kbi_write_file_atomic(ctx, path, b.data, b.len, 0644);
    kbi_buf_free(&b);
    free(path);
    free(dir);
    return rc;
}

KB_EXTERN int kb_trust_key_export(char **pem_out, kb_ctx *ctx, const char *key_id)
{
    *pem_out = NULL;
    EVP_PKEY *key = NULL;
    int rc = kbi_trust_load_public(&key, ctx, key_id);
    if (rc == KB_ERR_NOT_FOUND) {
        kb_ctx_clear_error(ctx);
        rc = kbi_trust_load_private(&key, ctx, key_id);
        if (rc == KB_ERR_NOT_FOUND)
            rc = kbi_error_set(ctx, KB_ERR_NOT_FOUND, "no key %s in %s", key_id,
                               kbi_config_str(ctx, "config.dir"));
    }
    if (!rc) {
        *pem_out = pem_of(key, false);
        if (!*pem_out)
            rc = kbi_error_oom(ctx);
    }
    EVP_PKEY_free(key);
    return rc;
}

KB_EXTERN void kb_trust_key_free(kb_trust_key *key)
{
    kb_trust_key_list_free(key, key ? 1 : 0);
}

KB_EXTERN void kb_trust_key_list_free(kb_trust_key *keys, size_t count)
{
    for (size_t i = 0; keys && i < count; i++) {
        free(keys[i].id);
        free(keys[i].name);
        free(keys[i].revoked_reason);
    }
    free(keys);
}
