/* Publish and read kbpkg package versions: artifact manifests under a per-version image index. */
#include "registry/package_index.h"
#include "registry/oci.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Version ordering for tags (x.y.z[-pre], semver 2.0 precedence). Local on
 * purpose: DESIGN.md lets registry/ use core/ only, and kb_semver_* lives in
 * manifests/. If semver moves to core/, call it from here instead.
 */
typedef struct tag_version {
    uint64_t n[3];
    const char *pre; /* points into the tag, NULL when none; ends at '+' or NUL */
} tag_version;

static bool parse_number(const char **p, uint64_t *out)
{
    const char *s = *p;
    if (!isdigit((unsigned char)*s) || (s[0] == '0' && isdigit((unsigned char)s[1])))
        return false;
    uint64_t v = 0;
    while (isdigit((unsigned char)*s)) {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s++ - '0');
    }
    *out = v;
    *p = s;
    return true;
}

static bool tag_version_parse(tag_version *v, const char *tag)
{
    const char *p = tag;
    memset(v, 0, sizeof(*v));
    for (int i = 0; i < 3; i++) {
        if (!parse_number(&p, &v->n[i]))
            return false;
        if (i < 2 && *p++ != '.')
            return false;
    }
    if (*p == '-') {
        v->pre = ++p;
        if (!*p || *p == '+')
            return false;
        while (*p && *p != '+')
            if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-')
                return false;
            else
                p++;
    }
    if (*p == '+')
        p++; /* build metadata: '+' is not valid in a tag anyway */
    return *p == '\0' || p[-1] == '+';
}

static size_t ident_len(const char *s)
{
    size_t n = 0;
    while (s[n] && s[n] != '.' && s[n] != '+')
        n++;
    return n;
}

static bool all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return n > 0;
}

static int cmp_pre(const char *a, const char *b)
{
    for (;;) {
        size_t la = ident_len(a), lb = ident_len(b);
        bool na = all_digits(a, la), nb = all_digits(b, lb);
        int c;
        if (na && nb)
            c = la != lb ? (la < lb ? -1 : 1) : strncmp(a, b, la);
        else if (na != nb)
            c = na ? -1 : 1;
        else {
            c = strncmp(a, b, la < lb ? la : lb);
            if (!c && la != lb)
                c = la < lb ? -1 : 1;
        }
        if (c)
            return c;
        a += la;
        b += lb;
        bool more_a = *a == '.', more_b = *b == '.';
        if (!more_a || !more_b)
            return more_a ? 1 : more_b ? -1 : 0;
        a++;
        b++;
    }
}

static int tag_version_cmp(const tag_version *a, const tag_version *b)
{
    for (int i = 0; i < 3; i++)
        if (a->n[i] != b->n[i])
            return a->n[i] < b->n[i] ? -1 : 1;
    if (!a->pre || !b->pre)
        return a->pre ? -1 : b->pre ? 1 : 0;
    return cmp_pre(a->pre, b->pre);
}

static int cmp_tags(const void *x, const void *y)
{
    tag_version a, b;
    tag_version_parse(&a, *(char *const *)x);
    tag_version_parse(&b, *(char *const *)y);
    return tag_version_cmp(&a, &b);
}

int kb_package_versions(kb_strv *out, kb_registry *r, const char *package)
{
    kb_strv tags = KB_STRV_INIT;
    int rc = kb_registry_tags(&tags, r, package);
    for (size_t i = 0; !rc && i < tags.len; i++) {
        tag_version v;
        if (tag_version_parse(&v, tags.items[i]) && kb_strv_push(out, tags.items[i]))
            rc = kb_error_oom(r->ctx);
    }
    kb_strv_free(&tags);
    if (!rc && out->len > 1)
        qsort(out->items, out->len, sizeof(char *), cmp_tags);
    return rc;
}

/* ---- push ---- */

/* x86_64-linux -> linux/amd64: OCI platform names from the target's host part. */
static void platform_of(const char *target, char *os, size_t os_size, char *arch, size_t arch_size)
{
    const char *last = strrchr(target, '-');
    *os = *arch = '\0';
    if (!last || last == target)
        return;
    snprintf(os, os_size, "%s", last + 1);
    const char *prev = last - 1;
    while (prev > target && prev[-1] != '-')
        prev--;
    size_t n = (size_t)(last - prev);
    if (n == 6 && strncmp(prev, "x86_64", 6) == 0)
        snprintf(arch, arch_size, "amd64");
    else if ((n == 7 && strncmp(prev, "aarch64", 7) == 0) ||
             (n == 5 && strncmp(prev, "arm64", 5) == 0))
        snprintf(arch, arch_size, "arm64");
    else
        snprintf(arch, arch_size, "%.*s", (int)n, prev);
}

static int annotate_entry(kb_oci_annotations *a, const kb_package_artifact *art,
                          const char *version)
{
    const char *keys[] = {KB_ANN_KIND,    KB_ANN_TARGET,    KB_ANN_BACKEND, KB_ANN_ARCH,
                          KB_ANN_RUNTIME, KB_ANN_BUILD_KEY, KB_ANN_VERSION};
    const char *values[] = {art->target ? "artifact" : "source",
                            art->target,
                            art->backend,
                            art->arch,
                            art->runtime,
                            art->build_key,
                            version};
    for (size_t i = 0; i < KB_ARRAY_LEN(keys); i++)
        if (values[i] && kb_oci_annotate(a, keys[i], values[i]))
            return KB_ERR_NOMEM;
    return 0;
}

/* Blobs and manifest of one artifact; fills the index descriptor d. */
static int push_artifact(kb_oci_descriptor *d, kb_registry *r, const char *package,
                         const char *version, const kb_package_artifact *art)
{
    kb_oci_manifest m = {0};
    kb_buf bytes = KB_BUF_INIT;
    char *layer_digest = NULL;
    uint64_t layer_size = 0;
    const char *type = art->target ? KB_ARTIFACT_TYPE : KB_SOURCE_TYPE;
    int rc = kb_registry_blob_put_file(&layer_digest, r, package, art->archive_path);
    if (!rc)
        rc = kb_registry_blob_exists(&layer_size, r, package, layer_digest);
    if (!rc && art->config)
        rc = kb_oci_descriptor_for(&m.config, KB_MT_KBPKG_CONFIG, art->config, art->config_len);
    else if (!rc)
        rc = kb_oci_descriptor_empty_config(&m.config);
    if (!rc)
        rc = kb_registry_blob_put_mem(NULL, r, package, art->config ? art->config : "{}",
                                      art->config ? art->config_len : 2);
    kb_oci_descriptor layer = {0};
    if (!rc && (kb_oci_descriptor_set(&layer, KB_MT_KBPKG_LAYER, layer_digest, layer_size) ||
                !(m.artifact_type = kb_strdup(type)) || kb_oci_manifest_add_layer(&m, &layer) ||
                annotate_entry(&m.annotations, art, version)))
        rc = kb_error_oom(r->ctx);
    if (!rc)
        rc = kb_oci_manifest_serialize(&bytes, r->ctx, &m);
    char *digest = NULL;
    if (!rc) {
        char hex[65];
        kb_sha256_hex(bytes.data, bytes.len, hex);
        char ref[72];
        snprintf(ref, sizeof(ref), "sha256:%s", hex);
        rc = kb_registry_manifest_put(&digest, r, package, ref, KB_MT_OCI_MANIFEST, bytes.data,
                                      bytes.len);
    }
    if (!rc &&
        (kb_oci_descriptor_set(d, KB_MT_OCI_MANIFEST, digest, bytes.len) ||
         !(d->artifact_type = kb_strdup(type)) || annotate_entry(&d->annotations, art, NULL)))
        rc = kb_error_oom(r->ctx);
    if (!rc && art->target) {
        char os[32], arch[32];
        platform_of(art->target, os, sizeof(os), arch, sizeof(arch));
        if ((*os && !(d->platform_os = kb_strdup(os))) ||
            (*arch && !(d->platform_arch = kb_strdup(arch))))
            rc = kb_error_oom(r->ctx);
    }
    if (rc)
        kb_error_prefix(r->ctx, "publishing %s %s %s", package, version,
                        art->target ? art->target : "source");
    free(digest);
    kb_oci_descriptor_clear(&layer);
    kb_oci_manifest_clear(&m);
    kb_buf_free(&bytes);
    free(layer_digest);
    return rc;
}

/* The version `latest` should name: the highest release, else the highest pre-release. */
static const char *pick_latest(const kb_strv *versions)
{
    for (size_t i = versions->len; i-- > 0;) {
        tag_version v;
        tag_version_parse(&v, versions->items[i]);
        if (!v.pre)
            return versions->items[i];
    }
    return versions->len ? versions->items[versions->len - 1] : NULL;
}

static int update_latest(kb_registry *r, const char *package)
{
    kb_strv versions = KB_STRV_INIT;
    int rc = kb_package_versions(&versions, r, package);
    const char *latest = rc ? NULL : pick_latest(&versions);
    kb_registry_manifest *m = NULL;
    if (latest)
        rc = kb_registry_manifest_get(&m, r, package, latest);
    if (latest && !rc)
        rc = kb_registry_manifest_put(NULL, r, package, "latest", m->media_type, m->data, m->len);
    kb_registry_manifest_free(m);
    kb_strv_free(&versions);
    return rc;
}

int kb_package_push(char **index_digest_out, kb_registry *r, const char *package,
                    const char *version, const kb_package_artifact *artifacts, size_t count)
{
    if (index_digest_out)
        *index_digest_out = NULL;
    tag_version v;
    if (!version || !tag_version_parse(&v, version) || !kb_tag_valid(version))
        return kb_error_set(r->ctx, KB_ERR_VERSION,
                            "cannot publish %s: '%s' is not a semantic "
                            "version usable as a tag",
                            package, version ? version : "");
    if (count == 0)
        return kb_error_set(r->ctx, KB_ERR_INVALID, "cannot publish %s %s: no artifacts", package,
                            version);
    kb_oci_index ix = {0};
    int rc = 0;
    for (size_t i = 0; !rc && i < count; i++) {
        kb_oci_descriptor d = {0};
        rc = push_artifact(&d, r, package, version, &artifacts[i]);
        if (!rc && kb_oci_index_add(&ix, &d))
            rc = kb_error_oom(r->ctx);
        kb_oci_descriptor_clear(&d);
    }
    if (!rc && kb_oci_annotate(&ix.annotations, KB_ANN_VERSION, version))
        rc = kb_error_oom(r->ctx);
    kb_buf bytes = KB_BUF_INIT;
    if (!rc)
        rc = kb_oci_index_serialize(&bytes, r->ctx, &ix);
    if (!rc)
        rc = kb_registry_manifest_put(index_digest_out, r, package, version, KB_MT_OCI_INDEX,
                                      bytes.data, bytes.len);
    if (!rc)
        rc = update_latest(r, package);
    kb_buf_free(&bytes);
    kb_oci_index_clear(&ix);
    return rc;
}

/* ---- read ---- */

static char *ann(const kb_oci_descriptor *d, const char *key)
{
    return kb_strdup(kb_oci_annotation(&d->annotations, key));
}

static int fill_entry(kb_package_entry *e, const kb_oci_descriptor *d)
{
    const char *kind = kb_oci_annotation(&d->annotations, KB_ANN_KIND);
    e->is_source = (kind && strcmp(kind, "source") == 0) ||
                   (d->artifact_type && strcmp(d->artifact_type, KB_SOURCE_TYPE) == 0);
    e->manifest_size = d->size;
    e->manifest_digest = kb_strdup(d->digest);
    e->target = e->is_source ? NULL : ann(d, KB_ANN_TARGET);
    e->backend = ann(d, KB_ANN_BACKEND);
    e->arch = ann(d, KB_ANN_ARCH);
    e->runtime = ann(d, KB_ANN_RUNTIME);
    e->build_key = ann(d, KB_ANN_BUILD_KEY);
    return e->manifest_digest ? 0 : KB_ERR_NOMEM;
}

void kb_package_index_free(kb_package_index *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->count; i++) {
        kb_package_entry *e = &ix->entries[i];
        free(e->target);
        free(e->backend);
        free(e->arch);
        free(e->runtime);
        free(e->build_key);
        free(e->manifest_digest);
    }
    free(ix->entries);
    free(ix->package);
    free(ix->reference);
    free(ix->digest);
    free(ix);
}

int kb_package_index_get(kb_package_index **out, kb_registry *r, const char *package,
                         const char *reference)
{
    *out = NULL;
    kb_registry_manifest *m = NULL;
    int rc = kb_registry_manifest_get(&m, r, package, reference);
    if (rc)
        return rc;
    kb_oci_index oix = {0};
    char *what = kb_asprintf("%s:%s (%s)", package, reference, m->digest);
    rc = what ? kb_oci_index_parse(&oix, r->ctx, m->data, m->len, what) : kb_error_oom(r->ctx);
    kb_package_index *ix = rc ? NULL : calloc(1, sizeof(*ix));
    if (!rc && !ix)
        rc = kb_error_oom(r->ctx);
    if (!rc) {
        ix->package = kb_strdup(package);
        ix->reference = kb_strdup(reference);
        ix->digest = kb_strdup(m->digest);
        ix->entries = oix.manifest_count ? calloc(oix.manifest_count, sizeof(*ix->entries)) : NULL;
        if (!ix->package || !ix->reference || !ix->digest || (oix.manifest_count && !ix->entries))
            rc = kb_error_oom(r->ctx);
    }
    for (size_t i = 0; !rc && i < oix.manifest_count; i++) {
        /* descriptors other tools added (attestations, other kinds) are not ours: skip */
        const kb_oci_descriptor *d = &oix.manifests[i];
        const char *kind = kb_oci_annotation(&d->annotations, KB_ANN_KIND);
        if (!kind && !kb_oci_annotation(&d->annotations, KB_ANN_TARGET))
            continue;
        rc = fill_entry(&ix->entries[ix->count++], d) ? kb_error_oom(r->ctx) : 0;
    }
    free(what);
    kb_oci_index_clear(&oix);
    kb_registry_manifest_free(m);
    if (rc) {
        kb_package_index_free(ix);
        return rc;
    }
    *out = ix;
    return 0;
}

const kb_package_entry *kb_package_index_find(const kb_package_index *ix, const char *target)
{
    for (size_t i = 0; i < ix->count; i++) {
        const kb_package_entry *e = &ix->entries[i];
        if (target ? (e->target && strcmp(e->target, target) == 0) : e->is_source)
            return e;
    }
    return NULL;
}

int kb_package_fetch(kb_registry *r, const char *package, const kb_package_entry *e,
                     const char *dest, uint64_t max_size)
{
    kb_registry_manifest *m = NULL;
    int rc = kb_registry_manifest_get(&m, r, package, e->manifest_digest);
    if (rc)
        return rc;
    kb_oci_manifest om = {0};
    rc = kb_oci_manifest_parse(&om, r->ctx, m->data, m->len, m->digest);
    if (!rc && om.layer_count != 1)
        rc = kb_error_set(r->ctx, KB_ERR_REGISTRY,
                          "%s %s: expected one layer in manifest %s, found %zu", package,
                          e->target ? e->target : "source", m->digest, om.layer_count);
    if (!rc) {
        uint64_t size = om.layers[0].size;
        /* the manifest states the size: never take more than that, or than the caller allows */
        uint64_t cap = max_size && max_size < size ? max_size : size;
        rc = kb_registry_blob_get_file(r, package, om.layers[0].digest, dest, cap ? cap : 1);
    }
    kb_oci_manifest_clear(&om);
    kb_registry_manifest_free(m);
    return rc;
}
