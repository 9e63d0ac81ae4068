/* kbpkg package indexes on OCI: parse, pick versions, resolve entries, publish with merge. */
#include "registry/pkgindex.h"
#include "registry/oci.h"
#include "model/target.h"
#include "model/semver.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing ---- */

static char *jstr(json_t *obj, const char *key)
{
    return kb_strdup(json_string_value(json_object_get(obj, key)));
}

static void entry_clear(kb_pkg_entry *e)
{
    free(e->target);
    free(e->manifest_digest);
    free(e->build_key);
    free(e->layer_digest);
    free(e->config_digest);
    memset(e, 0, sizeof(*e));
}

void kb_pkg_index_free(kb_pkg_index *idx)
{
    if (!idx)
        return;
    for (size_t i = 0; i < idx->count; i++)
        entry_clear(&idx->entries[i]);
    free(idx->entries);
    free(idx->name);
    free(idx->version);
    free(idx->summary);
    free(idx->digest);
    free(idx);
}

/* A descriptor of ours: kbpkg artifactType (or kind annotation) and a target annotation.
 * Returns 1 for anything else (skipped), 0 for ours, or an error for ours with a bad size. */
static int parse_entry(kb_pkg_entry *e, kb_ctx *ctx, json_t *desc, const char *what, size_t pos)
{
    const char *type = json_string_value(json_object_get(desc, "artifactType"));
    json_t *ann = json_object_get(desc, "annotations");
    const char *kind = json_string_value(json_object_get(ann, KB_ANN_KIND));
    const char *target = json_string_value(json_object_get(ann, KB_ANN_TARGET));
    const char *digest = json_string_value(json_object_get(desc, "digest"));
    if (!target || !digest || !kb_digest_valid(digest))
        return 1;
    bool source, artifact;
    if (type) {
        source = strcmp(type, KB_MT_KBPKG_SOURCE) == 0;
        artifact = strcmp(type, KB_MT_KBPKG_ARTIFACT) == 0;
    } else { /* mirrored by a tool that dropped artifactType */
        source = kind && strcmp(kind, "source") == 0;
        artifact = kind && strcmp(kind, "artifact") == 0;
    }
    if (!source && !artifact)
        return 1;
    memset(e, 0, sizeof(*e));
    char field[96];
    snprintf(field, sizeof(field), "manifests[%zu] (target %.48s)", pos, target);
    int rc = kb_oci_descriptor_size(&e->manifest_size, ctx, desc, 1, KB_MANIFEST_MAX, what, field);
    if (rc)
        return rc;
    e->is_source = source;
    e->target = kb_strdup(target);
    e->manifest_digest = kb_strdup(digest);
    e->build_key = jstr(ann, KB_ANN_BUILD_KEY);
    if (!e->target || !e->manifest_digest) {
        entry_clear(e);
        return kb_error_oom(ctx);
    }
    return 0;
}

/* The index's name and version become cache folders (pkgs/<org>/<name>/<version>): a registry
 * must not point them elsewhere with "..", '/' or other junk. */
static int check_index_identity(kb_ctx *ctx, const char *what, const kb_pkg_index *idx)
{
    if (idx->name && !kb_pkg_name_valid(idx->name))
        return kb_error_set(ctx, KB_ERR_PARSE,
                            "%s: annotation dev.kbpkg.name '%s' is not a package name (org/name)",
                            what, idx->name);
    kb_semver v;
    if (idx->version && kb_semver_parse(NULL, &v, idx->version) != 0)
        return kb_error_set(ctx, KB_ERR_PARSE,
                            "%s: annotation dev.kbpkg.version '%s' is not a semantic version", what,
                            idx->version);
    return 0;
}

int kb_pkg_index_parse(kb_pkg_index **out, kb_ctx *ctx, const char *what, const char *data,
                       size_t len)
{
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(data, len, 0, &jerr);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return kb_error_set(ctx, KB_ERR_PARSE, "%s: not a JSON index (%s, line %d)", what,
                            root ? "not an object" : jerr.text, jerr.line);
    }
    json_t *manifests = json_object_get(root, "manifests");
    if (!json_is_array(manifests)) {
        json_decref(root);
        return kb_error_set(ctx, KB_ERR_PARSE, "%s: an OCI index needs a 'manifests' array", what);
    }
    kb_pkg_index *idx = calloc(1, sizeof(*idx));
    if (idx)
        idx->entries = calloc(json_array_size(manifests) + 1, sizeof(*idx->entries));
    if (!idx || !idx->entries) {
        free(idx);
        json_decref(root);
        return kb_error_oom(ctx);
    }
    json_t *ann = json_object_get(root, "annotations");
    idx->name = jstr(ann, "dev.kbpkg.name");
    idx->version = jstr(ann, "dev.kbpkg.version");
    idx->summary = jstr(ann, "org.opencontainers.image.description");
    int rc = check_index_identity(ctx, what, idx);
    if (rc) {
        kb_pkg_index_free(idx);
        json_decref(root);
        return rc;
    }
    size_t i;
    json_t *desc;
    json_array_foreach(manifests, i, desc)
    {
        kb_pkg_entry e;
        int kept = json_is_object(desc) ? parse_entry(&e, ctx, desc, what, i) : 1;
        if (kept < 0) {
            kb_pkg_index_free(idx);
            json_decref(root);
            return kept;
        }
        if (kept == 0)
            idx->entries[idx->count++] = e;
    }
    json_decref(root);
    *out = idx;
    return 0;
}

/* Where r is, for messages: the layout folder, or the base URL and namespace. */
static char *registry_where(const kb_registry *r)
{
    if (r->url.layout)
        return kb_strdup(r->url.path);
    const char *ns = r->url.namespace ? r->url.namespace : "";
    return kb_asprintf("%s%s%s", r->url.base, *ns ? "/" : "", ns);
}

const kb_pkg_entry *kb_pkg_index_find(const kb_pkg_index *idx, const char *target)
{
    for (size_t i = 0; idx && i < idx->count; i++)
        if (strcmp(idx->entries[i].target, target) == 0)
            return &idx->entries[i];
    return NULL;
}

/* ---- versions ---- */

static int cmp_versions_desc(const void *a, const void *b)
{
    kb_semver va, vb;
    kb_semver_parse(NULL, &va, *(char *const *)a);
    kb_semver_parse(NULL, &vb, *(char *const *)b);
    return kb_semver_cmp(&vb, &va);
}

/* A repository the registry does not know is a package it does not have: say so, keeping the
 * file or URL that told us (-v shows the request). */
static int no_such_package(kb_registry *r, const char *name)
{
    const kb_error *e = kb_ctx_last_error(r->ctx);
    char *path = kb_strdup(e->path), *url = kb_strdup(e->url), *where = registry_where(r);
    int rc;
    if (!where)
        rc = kb_error_oom(r->ctx);
    else if (url)
        rc = kb_error_set_url(r->ctx, KB_ERR_NOT_FOUND, url, "no package %s in %s", name, where);
    else if (r->url.layout && !kb_path_exists(where))
        rc = kb_error_set_path(r->ctx, KB_ERR_NOT_FOUND, where, 0, 0,
                               "no package %s in %s: that registry folder does not exist (publish "
                               "there first, or point --registry or $KBPKG_REGISTRY at a registry)",
                               name, where);
    else
        rc = kb_error_set_path(r->ctx, KB_ERR_NOT_FOUND, path, 0, 0, "no package %s in %s", name,
                               where);
    free(path);
    free(url);
    free(where);
    return rc;
}

int kb_pkg_versions(kb_strv *out, kb_registry *r, const char *name)
{
    kb_strv tags = KB_STRV_INIT;
    int rc = kb_registry_tags(&tags, r, name);
    if (rc == KB_ERR_NOT_FOUND)
        rc = no_such_package(r, name);
    for (size_t i = 0; !rc && i < tags.len; i++) {
        kb_semver v;
        if (kb_semver_parse(NULL, &v, tags.items[i]) == 0)
            rc = kb_strv_push(out, tags.items[i]) ? kb_error_oom(r->ctx) : 0;
    }
    kb_strv_free(&tags);
    if (!rc && out->len > 1)
        qsort(out->items, out->len, sizeof(char *), cmp_versions_desc);
    return rc;
}

int kb_pkg_pick_version(char **out, kb_registry *r, const char *name, const char *constraint_text)
{
    *out = NULL;
    kb_constraint *c = NULL;
    int rc = kb_constraint_parse(r->ctx, &c, constraint_text);
    if (rc)
        return rc;
    kb_strv versions = KB_STRV_INIT;
    rc = kb_pkg_versions(&versions, r, name);
    for (size_t i = 0; !rc && i < versions.len && !*out; i++) {
        kb_semver v;
        kb_semver_parse(NULL, &v, versions.items[i]);
        if (kb_constraint_match(c, &v))
            *out = kb_strdup(versions.items[i]);
    }
    if (!rc && !*out) {
        kb_buf have = KB_BUF_INIT;
        for (size_t i = 0; i < versions.len && i < 10; i++)
            kb_buf_printf(&have, "%s%s", i ? ", " : "", versions.items[i]);
        rc = kb_error_set(r->ctx, KB_ERR_NOT_FOUND, "no version of %s matches '%s' (%s%s)", name,
                          constraint_text, versions.len ? "the registry has " : "none published",
                          have.data ? have.data : "");
        kb_buf_free(&have);
    }
    kb_strv_free(&versions);
    kb_constraint_free(c);
    return rc;
}

int kb_pkg_index_fetch(kb_pkg_index **out, kb_registry *r, const char *name, const char *version,
                       const char *expect_digest)
{
    *out = NULL;
    kb_registry_manifest *m = NULL;
    int rc = kb_registry_manifest_get(&m, r, name, expect_digest ? expect_digest : version);
    if (rc)
        return rc;
    char *where = registry_where(r);
    char *what = where ? kb_asprintf("%s: %s@%s index %s", where, name, version, m->digest) : NULL;
    free(where);
    rc = what ? kb_pkg_index_parse(out, r->ctx, what, m->data, m->len) : kb_error_oom(r->ctx);
    kb_semver tagged;
    if (!rc && (*out)->name && strcmp((*out)->name, name) != 0)
        rc = kb_error_set(r->ctx, KB_ERR_REGISTRY,
                          "%s: the index names package '%s', not the one asked for", what,
                          (*out)->name);
    /* A version tag must hold that version's index ("latest" may hold any). */
    else if (!rc && (*out)->version && kb_semver_parse(NULL, &tagged, version) == 0 &&
             strcmp((*out)->version, version) != 0)
        rc =
            kb_error_set(r->ctx, KB_ERR_REGISTRY, "%s: the index says version %s, not the tag's %s",
                         what, (*out)->version, version);
    if (rc && *out) {
        kb_pkg_index_free(*out);
        *out = NULL;
    } else if (!rc) {
        (*out)->digest = kb_strdup(m->digest);
        if (!(*out)->name)
            (*out)->name = kb_strdup(name);
        if (!(*out)->version)
            (*out)->version = kb_strdup(version);
    }
    free(what);
    kb_registry_manifest_free(m);
    return rc;
}

int kb_pkg_entry_resolve(kb_pkg_entry *e, kb_registry *r, const char *name)
{
    if (e->layer_digest)
        return 0;
    kb_registry_manifest *m = NULL;
    int rc = kb_registry_manifest_get(&m, r, name, e->manifest_digest);
    if (rc)
        return rc;
    char *where = registry_where(r);
    char *what =
        where ? kb_asprintf("%s: %s %s manifest %s", where, name, e->target, e->manifest_digest)
              : NULL;
    free(where);
    if (!what) {
        kb_registry_manifest_free(m);
        return kb_error_oom(r->ctx);
    }
    json_error_t jerr;
    json_t *root = json_loadb(m->data, m->len, 0, &jerr);
    json_t *layers = json_object_get(root, "layers");
    json_t *layer = NULL;
    size_t i, layer_pos = 0;
    json_t *l;
    json_array_foreach(layers, i, l)
    {
        const char *mt = json_string_value(json_object_get(l, "mediaType"));
        if (mt && strcmp(mt, KB_MT_KBPKG_LAYER) == 0 && !layer) {
            layer = l;
            layer_pos = i;
        }
    }
    json_t *config = json_object_get(root, "config");
    const char *ld = json_string_value(json_object_get(layer, "digest"));
    uint64_t layer_size = 0, config_size = 0;
    char field[32];
    snprintf(field, sizeof(field), "layers[%zu]", layer_pos);
    if (!root)
        rc = kb_error_set(r->ctx, KB_ERR_PARSE, "%s:%d:%d: %s", what, jerr.line, jerr.column,
                          jerr.text);
    else if (!layer || !ld || !kb_digest_valid(ld))
        rc = kb_error_set(r->ctx, KB_ERR_REGISTRY, "%s: no %s layer", what, KB_MT_KBPKG_LAYER);
    else
        rc = kb_oci_descriptor_size(&layer_size, r->ctx, layer, 1, KB_PKG_LAYER_SIZE_MAX, what,
                                    field);
    if (!rc && config)
        rc = kb_oci_descriptor_size(&config_size, r->ctx, config, 0, KB_PKG_CONFIG_SIZE_MAX, what,
                                    "config");
    if (!rc) {
        e->layer_digest = kb_strdup(ld);
        e->layer_size = layer_size;
        e->config_digest = jstr(config, "digest");
        e->config_size = config_size;
        if (!e->layer_digest)
            rc = kb_error_oom(r->ctx);
    }
    json_decref(root);
    free(what);
    kb_registry_manifest_free(m);
    return rc;
}

/* ---- publishing ---- */

/* Canonical JSON: compact, sorted keys, so equal content always has one digest. */
static char *canonical(json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
}

static const char *oci_arch(const char *host_arch)
{
    if (strcmp(host_arch, "x86_64") == 0)
        return "amd64";
    if (strcmp(host_arch, "aarch64") == 0 || strcmp(host_arch, "arm64") == 0)
        return "arm64";
    return host_arch;
}

static json_t *entry_annotations(const kb_publish_item *it)
{
    bool source = strcmp(it->target, KB_SOURCE_TARGET) == 0;
    json_t *ann = json_pack("{s:s,s:s}", KB_ANN_TARGET, it->target, KB_ANN_KIND,
                            source ? "source" : "artifact");
    kb_target t;
    if (strcmp(it->target, KB_SOURCE_TARGET) != 0 && kb_target_parse(NULL, &t, it->target) == 0) {
        char runtime[32];
        if (t.backend == KB_BACKEND_CPU)
            snprintf(runtime, sizeof(runtime), "cpu");
        else
            snprintf(runtime, sizeof(runtime), "%s%u", kb_backend_name(t.backend), t.runtime_major);
        json_object_set_new(ann, KB_ANN_BACKEND, json_string(kb_backend_name(t.backend)));
        json_object_set_new(ann, KB_ANN_ARCH, json_string(t.arch));
        json_object_set_new(ann, KB_ANN_RUNTIME, json_string(runtime));
    }
    if (it->build_key)
        json_object_set_new(ann, KB_ANN_BUILD_KEY, json_string(it->build_key));
    return ann;
}

static json_t *entry_platform(const char *target)
{
    kb_target t;
    if (strcmp(target, KB_SOURCE_TARGET) == 0 || kb_target_parse(NULL, &t, target) != 0)
        return NULL;
    return json_pack("{s:s,s:s}", "architecture", oci_arch(t.host_arch), "os", t.host_os);
}

typedef struct prepared {
    char layer_digest[72];
    uint64_t layer_size;
    char config_digest[72];
    char *manifest; /* canonical bytes */
    char manifest_digest[72];
    json_t *descriptor; /* for the index */
} prepared;

static int prepare_item(prepared *p, kb_ctx *ctx, const kb_publish_item *it)
{
    memset(p, 0, sizeof(*p));
    char hex[65];
    int rc = kb_sha256_file(ctx, it->path, hex, &p->layer_size);
    if (rc)
        return rc;
    snprintf(p->layer_digest, sizeof(p->layer_digest), "sha256:%s", hex);
    size_t clen = strlen(it->config_json);
    kb_sha256_hex(it->config_json, clen, hex);
    snprintf(p->config_digest, sizeof(p->config_digest), "sha256:%s", hex);
    const char *slash = strrchr(it->path, '/');
    bool source = strcmp(it->target, KB_SOURCE_TARGET) == 0;
    const char *atype = source ? KB_MT_KBPKG_SOURCE : KB_MT_KBPKG_ARTIFACT;
    json_t *m =
        json_pack("{s:i,s:s,s:s,s:{s:s,s:s,s:I},s:[{s:s,s:s,s:I,s:{s:s}}],s:o}", "schemaVersion", 2,
                  "mediaType", KB_MT_OCI_MANIFEST, "artifactType", atype, "config", "mediaType",
                  KB_MT_KBPKG_CONFIG, "digest", p->config_digest, "size", (json_int_t)clen,
                  "layers", "mediaType", KB_MT_KBPKG_LAYER, "digest", p->layer_digest, "size",
                  (json_int_t)p->layer_size, "annotations", "org.opencontainers.image.title",
                  slash ? slash + 1 : it->path, "annotations", entry_annotations(it));
    p->manifest = m ? canonical(m) : NULL;
    json_decref(m);
    if (!p->manifest)
        return kb_error_oom(ctx);
    kb_sha256_hex(p->manifest, strlen(p->manifest), hex);
    snprintf(p->manifest_digest, sizeof(p->manifest_digest), "sha256:%s", hex);
    p->descriptor = json_pack("{s:s,s:s,s:I,s:s,s:o}", "mediaType", KB_MT_OCI_MANIFEST, "digest",
                              p->manifest_digest, "size", (json_int_t)strlen(p->manifest),
                              "artifactType", atype, "annotations", entry_annotations(it));
    json_t *platform = entry_platform(it->target);
    if (platform)
        json_object_set_new(p->descriptor, "platform", platform);
    return p->descriptor ? 0 : kb_error_oom(ctx);
}

static void prepared_clear(prepared *p)
{
    free(p->manifest);
    json_decref(p->descriptor);
}

static int push_item(kb_registry *r, const char *name, const kb_publish_item *it, const prepared *p)
{
    int rc = kb_registry_blob_put_file_for(NULL, r, name, it->path, it->target);
    if (!rc)
        rc = kb_registry_blob_put_mem(NULL, r, name, it->config_json, strlen(it->config_json));
    if (!rc)
        rc = kb_registry_manifest_put(NULL, r, name, p->manifest_digest, KB_MT_OCI_MANIFEST,
                                      p->manifest, strlen(p->manifest));
    return rc;
}

/* The existing index of name@version as JSON, or a new empty one. */
static int load_existing(json_t **out, kb_registry *r, const char *name, const char *version)
{
    kb_registry_manifest *m = NULL;
    int rc = kb_registry_manifest_get(&m, r, name, version);
    if (rc == KB_ERR_NOT_FOUND) {
        kb_ctx_clear_error(r->ctx);
        *out = json_pack("{s:i,s:s,s:[]}", "schemaVersion", 2, "mediaType", KB_MT_OCI_INDEX,
                         "manifests");
        return *out ? 0 : kb_error_oom(r->ctx);
    }
    if (rc)
        return rc;
    json_error_t jerr;
    *out = json_loadb(m->data, m->len, 0, &jerr);
    kb_registry_manifest_free(m);
    if (!*out || !json_is_array(json_object_get(*out, "manifests"))) {
        json_decref(*out);
        *out = NULL;
        return kb_error_set(r->ctx, KB_ERR_REGISTRY,
                            "%s@%s: the existing index is not an OCI index", name, version);
    }
    return 0;
}

static json_t *find_descriptor(json_t *manifests, const char *target, size_t *pos)
{
    size_t i;
    json_t *d;
    json_array_foreach(manifests, i, d)
    {
        const char *t =
            json_string_value(json_object_get(json_object_get(d, "annotations"), KB_ANN_TARGET));
        if (t && strcmp(t, target) == 0) {
            *pos = i;
            return d;
        }
    }
    return NULL;
}

static int cmp_descriptors(const void *a, const void *b)
{
    const char *ta = json_string_value(
        json_object_get(json_object_get(*(json_t *const *)a, "annotations"), KB_ANN_TARGET));
    const char *tb = json_string_value(
        json_object_get(json_object_get(*(json_t *const *)b, "annotations"), KB_ANN_TARGET));
    return strcmp(ta ? ta : "", tb ? tb : "");
}

/* Sort by target so the index bytes do not depend on publishing order. */
static void sort_manifests(json_t *manifests)
{
    size_t n = json_array_size(manifests);
    json_t **items = calloc(n + 1, sizeof(*items));
    if (!items)
        return;
    for (size_t i = 0; i < n; i++)
        items[i] = json_incref(json_array_get(manifests, i));
    qsort(items, n, sizeof(*items), cmp_descriptors);
    json_array_clear(manifests);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(manifests, items[i]);
    free(items);
}

static int move_latest(kb_registry *r, const char *name, const char *version, const char *bytes)
{
    kb_strv versions = KB_STRV_INIT;
    int rc = kb_pkg_versions(&versions, r, name);
    kb_semver mine;
    kb_semver_parse(NULL, &mine, version);
    bool highest = !mine.pre[0];
    for (size_t i = 0; !rc && highest && i < versions.len; i++) {
        kb_semver v;
        kb_semver_parse(NULL, &v, versions.items[i]);
        if (!v.pre[0] && kb_semver_cmp(&v, &mine) > 0)
            highest = false;
    }
    kb_strv_free(&versions);
    if (!rc && highest)
        rc = kb_registry_manifest_put(NULL, r, name, "latest", KB_MT_OCI_INDEX, bytes,
                                      strlen(bytes));
    return rc;
}

int kb_pkg_publish(kb_registry *r, const char *name, const char *version, const char *summary,
                   const kb_publish_item *items, size_t count, bool force,
                   kb_publish_status *statuses, char **index_digest_out)
{
    kb_ctx *ctx = r->ctx;
    if (index_digest_out)
        *index_digest_out = NULL;
    kb_semver parsed;
    if (kb_pkg_name_check(ctx, name))
        return KB_ERR_INVALID;
    if (kb_semver_parse(ctx, &parsed, version) != 0)
        return kb_error_set(ctx, KB_ERR_VERSION, "%s: cannot publish version '%s': %s", name,
                            version, kb_ctx_last_error(ctx)->message);
    if (count == 0)
        return kb_error_set(ctx, KB_ERR_INVALID, "%s@%s: nothing to publish", name, version);
    for (size_t i = 0; i < count; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(items[i].target, items[j].target) == 0)
                return kb_error_set(ctx, KB_ERR_INVALID, "%s@%s: target %s given twice", name,
                                    version, items[i].target);
    json_t *index = NULL;
    prepared *prep = calloc(count + 1, sizeof(*prep));
    kb_publish_status *st = calloc(count + 1, sizeof(*st));
    if (!prep || !st) {
        free(prep);
        free(st);
        return kb_error_oom(ctx);
    }
    int rc = load_existing(&index, r, name, version);
    json_t *manifests = index ? json_object_get(index, "manifests") : NULL;
    /* First decide everything (refusals push nothing), then push, then write the index. */
    for (size_t i = 0; !rc && i < count; i++) {
        rc = prepare_item(&prep[i], ctx, &items[i]);
        size_t pos = 0;
        json_t *old = rc ? NULL : find_descriptor(manifests, items[i].target, &pos);
        const char *old_digest = json_string_value(json_object_get(old, "digest"));
        st[i] = KB_PUBLISH_NEW;
        if (old_digest && strcmp(old_digest, prep[i].manifest_digest) == 0)
            st[i] = KB_PUBLISH_SAME;
        else if (old_digest && !force)
            rc = kb_error_set(ctx, KB_ERR_EXISTS,
                              "%s@%s %s is already published with different bytes (registry "
                              "%s, yours %s); use --force to replace it",
                              name, version, items[i].target, old_digest, prep[i].manifest_digest);
        else if (old_digest)
            st[i] = KB_PUBLISH_REPLACED;
        if (statuses)
            statuses[i] = st[i];
    }
    for (size_t i = 0; !rc && i < count; i++) {
        size_t pos = 0;
        if (st[i] == KB_PUBLISH_SAME)
            continue;
        rc = push_item(r, name, &items[i], &prep[i]);
        if (!rc && find_descriptor(manifests, items[i].target, &pos))
            json_array_remove(manifests, pos);
        if (!rc)
            json_array_append(manifests, prep[i].descriptor);
    }
    if (!rc) {
        sort_manifests(manifests);
        json_t *ann = json_pack("{s:s,s:s}", "dev.kbpkg.name", name, "dev.kbpkg.version", version);
        if (summary && *summary)
            json_object_set_new(ann, "org.opencontainers.image.description", json_string(summary));
        json_t *old_ann = json_object_get(index, "annotations");
        if (json_is_object(old_ann))
            json_object_update_missing(ann, old_ann);
        json_object_set_new(index, "annotations", ann);
        char *bytes = canonical(index);
        char *digest = NULL;
        rc = bytes ? kb_registry_manifest_put(&digest, r, name, version, KB_MT_OCI_INDEX, bytes,
                                              strlen(bytes))
                   : kb_error_oom(ctx);
        if (!rc)
            rc = move_latest(r, name, version, bytes);
        if (!rc && index_digest_out)
            *index_digest_out = digest;
        else
            free(digest);
        free(bytes);
    }
    for (size_t i = 0; i < count; i++)
        prepared_clear(&prep[i]);
    free(prep);
    free(st);
    json_decref(index);
    return rc;
}
