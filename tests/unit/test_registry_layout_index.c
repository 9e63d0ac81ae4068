/* Registry: lookups in a layout's index.json (tags, manifest by tag and by digest) give what
 * jansson reading the whole file gives, whether the fast scanner or the jansson path serves
 * them: crafted files (escapes, UTF-8, duplicate keys, odd entries), random ones, broken ones,
 * and a file replaced under an open handle. */
#include "kbtest.h"
#include "registry/registry.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fixture {
    char *dir;
    char *index;
    kb_ctx *ctx;
    kb_registry *reg;
    char digest[2][72]; /* two manifest blobs in the layout */
} fixture;

static void put_blob(fixture *f, const char *text, char *digest_out)
{
    char hex[65];
    kbi_sha256_hex(text, strlen(text), hex);
    snprintf(digest_out, 72, "sha256:%s", hex);
    char *path = kbi_asprintf("%s/blobs/sha256/%s", f->dir, hex);
    kbt_write(path, text);
    free(path);
}

static fixture setup(void)
{
    fixture f = {0};
    f.dir = kbt_mkdtemp();
    f.index = kbi_asprintf("%s/index.json", f.dir);
    char *blobs = kbi_asprintf("%s/blobs/sha256", f.dir);
    cr_assert_eq(kbi_mkdir_p(NULL, blobs, 0755), 0);
    free(blobs);
    char *layout = kbi_asprintf("%s/oci-layout", f.dir);
    kbt_write(layout, "{\"imageLayoutVersion\":\"1.0.0\"}");
    free(layout);
    put_blob(&f, "{\"schemaVersion\":2,\"n\":1}", f.digest[0]);
    put_blob(&f, "{\"schemaVersion\":2,\"n\":2}", f.digest[1]);
    f.ctx = kbt_ctx();
    cr_assert_eq(kb_registry_open(&f.reg, f.ctx, f.dir), 0);
    return f;
}

static void teardown(fixture *f)
{
    kb_registry_free(f->reg);
    kb_ctx_free(f->ctx);
    kbt_rmtree(f->dir);
    free(f->dir);
    free(f->index);
}

static const char *msg(const fixture *f)
{
    return kb_ctx_last_error(f->ctx)->message;
}

/* What a whole-file jansson read says: repo's tags, sorted, without repeats. False
 * when the file is not an index (not JSON, not an object, manifests not an array). */
static bool reference_tags(const char *text, const char *repo, kb_strv *tags)
{
    json_t *root = json_loads(text, 0, NULL);
    json_t *manifests = json_object_get(root, "manifests");
    if (!json_is_object(root) || (manifests && !json_is_array(manifests))) {
        json_decref(root);
        return false;
    }
    size_t i, rlen = strlen(repo);
    json_t *e;
    json_array_foreach(json_object_get(root, "manifests"), i, e)
    {
        const char *name = json_string_value(json_object_get(json_object_get(e, "annotations"),
                                                             "org.opencontainers.image.ref.name"));
        if (name && strncmp(name, repo, rlen) == 0 && name[rlen] == ':' &&
            !kbi_strv_contains(tags, name + rlen + 1))
            kbi_strv_push(tags, name + rlen + 1);
    }
    json_decref(root);
    kbi_strv_sort(tags); /* as kbi_registry_tags gives them */
    return true;
}

/* The digest of the first entry tagged repo:tag. */
static const char *reference_digest(json_t *root, const char *repo, const char *tag)
{
    char *want = kbi_asprintf("%s:%s", repo, tag);
    size_t i;
    json_t *e;
    const char *digest = NULL;
    json_array_foreach(json_object_get(root, "manifests"), i, e)
    {
        const char *name = json_string_value(json_object_get(json_object_get(e, "annotations"),
                                                             "org.opencontainers.image.ref.name"));
        if (!digest && name && strcmp(name, want) == 0)
            digest = json_string_value(json_object_get(e, "digest"));
    }
    free(want);
    return digest;
}

/* Write text as index.json and check tags and manifests of repo against jansson's reading. */
static void check_against_reference(fixture *f, const char *text, const char *repo)
{
    kbt_write(f->index, text);
    kb_strv want = KB_STRV_INIT, got = KB_STRV_INIT;
    bool parses = reference_tags(text, repo, &want);
    int rc = kbi_registry_tags(&got, f->reg, repo);
    if (!parses) {
        cr_expect_eq(rc, KB_ERR_PARSE, "%s", text);
        cr_expect(kbi_str_starts(msg(f), f->index), "%s", msg(f));
    } else if (want.len == 0) {
        cr_expect_eq(rc, KB_ERR_NOT_FOUND, "%s: %s", text, msg(f));
    } else {
        cr_expect_eq(rc, 0, "%s: %s", text, msg(f));
        cr_expect_eq(got.len, want.len, "%s", text);
        for (size_t i = 0; i < got.len && i < want.len; i++)
            cr_expect_str_eq(got.items[i], want.items[i], "%s", text);
    }
    json_t *root = parses ? json_loads(text, 0, NULL) : NULL;
    for (size_t i = 0; i < want.len; i++) {
        const char *digest = reference_digest(root, repo, want.items[i]);
        kb_registry_manifest *m = NULL;
        rc = kbi_registry_manifest_get(&m, f->reg, repo, want.items[i]);
        if (digest && (strcmp(digest, f->digest[0]) == 0 || strcmp(digest, f->digest[1]) == 0)) {
            cr_expect_eq(rc, 0, "%s:%s in %s: %s", repo, want.items[i], text, msg(f));
            if (!rc)
                cr_expect_str_eq(m->digest, digest, "%s", text);
        } else {
            cr_expect_neq(rc, 0, "%s:%s points nowhere in %s", repo, want.items[i], text);
        }
        kbi_registry_manifest_free(m);
    }
    json_decref(root);
    kbi_strv_free(&want);
    kbi_strv_free(&got);
}

Test(registry_layout_index, crafted_files_read_as_jansson_reads_them)
{
    fixture f = setup();
    const char *d0 = f.digest[0], *d1 = f.digest[1];
    const char *const docs[] = {
        /* kbpkg's own, compact */
        "{\"manifests\":[{\"digest\":\"%0\",\"annotations\":{\"org.opencontainers.image.ref."
        "name\":\"a/b:1.0.0\"}},{\"digest\":\"%1\",\"annotations\":{\"org.opencontainers."
        "image.ref.name\":\"a/b:latest\"}}],\"schemaVersion\":2}",
        /* pretty, other keys around, "manifests"/"digest" deeper down, every kind of value */
        "{\n  \"schemaVersion\": 2,\n  \"x\": {\"manifests\": [1], \"digest\": \"%1\", "
        "\"l\": [true, false, null, -0, 1.5, 0.25, []]},\n  \"manifests\": [\n    {\n      "
        "\"size\": 12, \"digest\": \"%0\",\n      \"annotations\": {\"k\": {\"org."
        "opencontainers.image.ref.name\": \"a/b:nested\"}, \"org.opencontainers.image.ref."
        "name\": \"a/b:2.0.0\"}\n    }\n  ],\n  \"z\": {}\n}\n",
        /* an escaped slash, as some tools write it */
        "{\"manifests\":[{\"digest\":\"%1\",\"annotations\":{\"org.opencontainers.image.ref."
        "name\":\"a\\/b:1.0.0\"}}]}",
        /* UTF-8 and an exponent elsewhere in the file */
        "{\"manifests\":[{\"digest\":\"%0\",\"size\":1e3,\"annotations\":{\"d\":\"\xc3\xa9\","
        "\"org.opencontainers.image.ref.name\":\"a/b:1.0.0\"}}]}",
        /* repeated keys: the last one counts */
        "{\"manifests\":[{\"digest\":\"%0\",\"annotations\":{\"org.opencontainers.image.ref."
        "name\":\"x/y:9\",\"org.opencontainers.image.ref.name\":\"a/b:3.0.0\"}},{\"digest\":"
        "\"%0\",\"annotations\":{\"org.opencontainers.image.ref.name\":\"a/b:4.0.0\",\"org."
        "opencontainers.image.ref.name\":\"x/y:1\"}},{\"digest\":\"%1\",\"annotations\":{\"org."
        "opencontainers.image.ref.name\":\"a/b:5.0.0\"},\"annotations\":{}},{\"digest\":\"%0\","
        "\"digest\":\"%1\",\"annotations\":{\"org.opencontainers.image.ref.name\":\"a/b:6\"}}]}",
        /* entries that are not objects, names that only look alike, a tag given twice */
        "{\"manifests\":[17,\"a/b:7\",[{\"annotations\":{\"org.opencontainers.image.ref.name\":"
        "\"a/b:8\"}}],{\"digest\":\"%0\",\"annotations\":{\"org.opencontainers.image.ref.name\":"
        "\"xa/b:1\"}},{\"digest\":\"%0\",\"annotations\":{\"org.opencontainers.image.ref.name\":"
        "\"a/bc:1\"}},{\"digest\":\"%1\",\"annotations\":{\"org.opencontainers.image.ref.name\":"
        "\"a/b:9\"}},{\"digest\":\"%0\",\"annotations\":{\"org.opencontainers.image.ref.name\":"
        "\"a/b:9\"}}]}",
        /* a tag without a usable digest */
        "{\"manifests\":[{\"digest\":5,\"annotations\":{\"org.opencontainers.image.ref.name\":"
        "\"a/b:10\"}}]}",
        /* no manifests at all, and an empty one */
        "{\"schemaVersion\":2}",
        "{\"manifests\":[]}",
        /* broken or not an index: the error names index.json */
        "{\"manifests\":[{\"a\":1},]}",
        "{\"manifests\":{}}",
        "[1]",
        "{\"manifests\":[]} x",
        "",
        "{\"manifests\":[],\"manifests\":[{\"digest\":\"%0\",\"annotations\":{\"org."
        "opencontainers.image.ref.name\":\"a/b:11\"}}]}",
    };
    for (size_t i = 0; i < KB_ARRAY_LEN(docs); i++) {
        kb_buf text = KB_BUF_INIT;
        for (const char *p = docs[i]; *p; p++) {
            if (p[0] == '%' && (p[1] == '0' || p[1] == '1')) {
                kbi_buf_puts(&text, p[1] == '0' ? d0 : d1);
                p++;
            } else {
                kbi_buf_append(&text, p, 1);
            }
        }
        kbi_buf_grow(&text, 0);
        check_against_reference(&f, text.data, "a/b");
        kbi_buf_free(&text);
    }
    /* some answers spelled out, so the reference is not the only judge */
    kb_strv tags = KB_STRV_INIT;
    kbt_write(f.index, "{\"manifests\":[{\"digest\":\"x\",\"annotations\":{\"org.opencontainers."
                       "image.ref.name\":\"a/b:1\",\"org.opencontainers.image.ref.name\":"
                       "\"x/y:1\"}},{\"annotations\":{\"org.opencontainers.image.ref.name\":"
                       "\"a/b:2\"}}]}");
    cr_assert_eq(kbi_registry_tags(&tags, f.reg, "a/b"), 0, "%s", msg(&f));
    cr_assert_eq(tags.len, 1);
    cr_expect_str_eq(tags.items[0], "2");
    kbi_strv_free(&tags);
    kbt_write(f.index, "{\"manifests\":[{\"a\":1},]}");
    cr_expect_eq(kbi_registry_tags(&tags, f.reg, "a/b"), KB_ERR_PARSE);
    char *want = kbi_asprintf("%s:1:", f.index);
    cr_expect(kbi_str_starts(msg(&f), want), "%s", msg(&f));
    free(want);
    teardown(&f);
}

/* A small random JSON value that is not an entry: numbers, literals, strings, containers. */
static void random_value(kb_buf *b, unsigned *seed, int depth, bool plain)
{
    int pick = rand_r(seed) % (depth > 2 ? 5 : 7);
    static const char *const plain_values[] = {"0",     "-12",  "3.25", "true",
                                               "false", "null", "\"s\""};
    static const char *const odd_values[] = {"1e3", "\"\\u00e9\"", "\"\xc3\xa9\"", "\"\\\"\"",
                                             "12345678901234567890"};
    if (pick < 5) {
        if (!plain && rand_r(seed) % 4 == 0)
            kbi_buf_puts(b, odd_values[rand_r(seed) % KB_ARRAY_LEN(odd_values)]);
        else
            kbi_buf_puts(b, plain_values[rand_r(seed) % KB_ARRAY_LEN(plain_values)]);
    } else if (pick == 5) {
        kbi_buf_puts(b, "[");
        for (int i = rand_r(seed) % 3; i > 0; i--) {
            random_value(b, seed, depth + 1, plain);
            if (i > 1)
                kbi_buf_puts(b, ",");
        }
        kbi_buf_puts(b, "]");
    } else {
        kbi_buf_puts(b, "{\"digest\":");
        random_value(b, seed, depth + 1, plain);
        kbi_buf_puts(b, ",\"manifests\":[]}");
    }
}

static void random_ref(kb_buf *b, unsigned *seed, bool plain)
{
    static const char *const repos[] = {"a/b", "a/bc", "xa/b", "x/y"};
    static const char *const tags[] = {"1.0.0", "latest", "2.0.0", "1.0.0-rc.1"};
    const char *repo = repos[rand_r(seed) % KB_ARRAY_LEN(repos)];
    const char *tag = tags[rand_r(seed) % KB_ARRAY_LEN(tags)];
    bool escape = !plain && rand_r(seed) % 3 == 0;
    kbi_buf_puts(b, "\"org.opencontainers.image.ref.name\":\"");
    for (const char *p = repo; *p; p++)
        kbi_buf_puts(b, *p == '/' && escape ? "\\/" : (char[]){*p, 0});
    kbi_buf_printf(b, ":%s\"", tag);
}

static void random_entry(kb_buf *b, const fixture *f, unsigned *seed, bool plain)
{
    int kind = rand_r(seed) % 10;
    if (kind == 0) {
        random_value(b, seed, 2, plain);
        return;
    }
    const char *ws = rand_r(seed) % 4 == 0 ? "\n  " : "";
    kbi_buf_printf(b, "{%s\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",", ws);
    int digests = kind == 1 ? 2 : 1;
    for (int i = 0; i < digests; i++)
        kbi_buf_printf(b, "\"digest\":\"%s\",%s", f->digest[rand_r(seed) % 2], ws);
    kbi_buf_puts(b, "\"x\":");
    random_value(b, seed, 3, plain);
    kbi_buf_puts(b, ",\"annotations\":{");
    int refs = kind == 2 ? 2 : kind == 3 ? 0 : 1;
    for (int i = 0; i < refs; i++) {
        random_ref(b, seed, plain);
        kbi_buf_puts(b, ",");
    }
    kbi_buf_puts(b, "\"k\":\"v\"}");
    if (kind == 4)
        kbi_buf_puts(b, ",\"annotations\":{}");
    kbi_buf_printf(b, "%s}", ws);
}

Test(registry_layout_index, random_files_read_as_jansson_reads_them)
{
    fixture f = setup();
    unsigned seed = 20240601;
    for (int round = 0; round < 400; round++) {
        bool plain = round % 2 == 0; /* half without escapes, UTF-8 or exponents */
        kb_buf b = KB_BUF_INIT;
        kbi_buf_puts(&b, "{\"schemaVersion\":2,");
        if (rand_r(&seed) % 2) {
            kbi_buf_puts(&b, "\"before\":");
            random_value(&b, &seed, 1, plain);
            kbi_buf_puts(&b, ",");
        }
        kbi_buf_puts(&b, "\"manifests\":[");
        for (int i = rand_r(&seed) % 8; i > 0; i--) {
            random_entry(&b, &f, &seed, plain);
            if (i > 1)
                kbi_buf_puts(&b, rand_r(&seed) % 5 ? "," : " ,\n");
        }
        kbi_buf_puts(&b, "]");
        if (rand_r(&seed) % 2) {
            kbi_buf_puts(&b, ",\"after\":");
            random_value(&b, &seed, 1, plain);
        }
        kbi_buf_puts(&b, "}");
        if (rand_r(&seed) % 20 == 0) /* now and then a broken file */
            b.data[rand_r(&seed) % b.len] = rand_r(&seed) % 2 ? ',' : '}';
        check_against_reference(&f, b.data, "a/b");
        kbi_buf_free(&b);
    }
    teardown(&f);
}

/* The handle keeps its reading of index.json only while the file is the one it read. */
Test(registry_layout_index, a_replaced_index_is_read_again)
{
    fixture f = setup();
    char *one = kbi_asprintf("{\"manifests\":[{\"digest\":\"%s\",\"annotations\":{\"org."
                             "opencontainers.image.ref.name\":\"a/b:1.0.0\"}}]}",
                             f.digest[0]);
    kbt_write(f.index, one);
    kb_registry_manifest *m = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&m, f.reg, "a/b", "1.0.0"), 0, "%s", msg(&f));
    cr_expect_str_eq(m->digest, f.digest[0]);
    kbi_registry_manifest_free(m);
    /* same size, same tag, other digest, written right away and renamed over it */
    char *two = kbi_asprintf("{\"manifests\":[{\"digest\":\"%s\",\"annotations\":{\"org."
                             "opencontainers.image.ref.name\":\"a/b:1.0.0\"}}]}",
                             f.digest[1]);
    cr_assert_eq(strlen(one), strlen(two));
    char *tmp = kbi_asprintf("%s.new", f.index);
    kbt_write(tmp, two);
    cr_assert_eq(rename(tmp, f.index), 0);
    cr_assert_eq(kbi_registry_manifest_get(&m, f.reg, "a/b", "1.0.0"), 0, "%s", msg(&f));
    cr_expect_str_eq(m->digest, f.digest[1], "the new file is read, not the remembered one");
    kbi_registry_manifest_free(m);
    /* another handle tags through the registry API: this one sees it */
    kb_registry *other = NULL;
    cr_assert_eq(kb_registry_open(&other, f.ctx, f.dir), 0);
    cr_assert_eq(kbi_registry_manifest_put(NULL, other, "a/b", "2.0.0",
                                           "application/vnd.oci.image.manifest.v1+json",
                                           "{\"schemaVersion\":2,\"n\":1}", 24),
                 0, "%s", msg(&f));
    kb_registry_free(other);
    kb_strv tags = KB_STRV_INIT;
    cr_assert_eq(kbi_registry_tags(&tags, f.reg, "a/b"), 0, "%s", msg(&f));
    cr_expect_eq(tags.len, 2);
    cr_expect(kbi_strv_contains(&tags, "2.0.0"));
    kbi_strv_free(&tags);
    /* gone: no repository */
    cr_assert_eq(unlink(f.index), 0);
    cr_expect_eq(kbi_registry_tags(&tags, f.reg, "a/b"), KB_ERR_NOT_FOUND);
    kbi_strv_free(&tags);
    free(tmp);
    free(one);
    free(two);
    teardown(&f);
}
