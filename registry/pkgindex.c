/* kbpkg package indexes on OCI: parse, pick versions, resolve entries, publish with merge. */
#include "registry/pkgindex.h"
#include "registry/oci.h"
#include "model/target.h"
#include "model/semver.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- parsing ---- */

static char *jstr(json_t *obj, const char *key)
{
    return kbi_strdup(json_string_value(json_object_get(obj, key)));
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

void kbi_pkg_index_free(kb_pkg_index *idx)
{
    if (!idx)
        return;
    for (size_t i = 0; i < idx->count; i++)
        entry_clear(&idx->entries[i]);
    free(idx->entries);
    free(idx->name);
    free(idx->version);
    free(idx->summary);
    free(idx->signatures);
    free(idx->declared);
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
    if (!target || !digest || !kbi_digest_valid(digest))
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
    int rc = kbi_oci_descriptor_size(&e->manifest_size, ctx, desc, 1, KB_MANIFEST_MAX, what, field);
    if (rc)
        return rc;
    e->is_source = source;
    e->target = kbi_strdup(target);
    e->manifest_digest = kbi_strdup(digest);
    e->build_key = jstr(ann, KB_ANN_BUILD_KEY);
    if (!e->target || !e->manifest_digest) {
        entry_clear(e);
        return kbi_error_oom(ctx);
    }
    return 0;
}

/* The index's name and version become cache folders (pkgs/<org>/<name>/<version>): a registry
 * must not point them elsewhere with "..", '/' or other junk. */
static int check_index_identity(kb_ctx *ctx, const char *what, const kb_pkg_index *idx)
{
    if (idx->name && !kbi_pkg_name_valid(idx->name))
        return kbi_error_set(ctx, KB_ERR_PARSE,
                             "%s: annotation dev.kbpkg.name '%s' is not a package name (org/name)",
                             what, idx->name);
    kb_semver v;
    if (idx->version && kbi_semver_parse(NULL, &v, idx->version) != 0)
        return kbi_error_set(ctx, KB_ERR_PARSE,
                             "%s: annotation dev.kbpkg.version '%s' is not a semantic version",
                             what, idx->version);
    return 0;
}

int kbi_pkg_index_parse(kb_pkg_index **out, kb_ctx *ctx, const char *what, const char *data,
                        size_t len)
{
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(data, len, 0, &jerr);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return kbi_error_set(ctx, KB_ERR_PARSE, "%s: not a JSON index (%s, line %d)", what,
                             root ? "not an object" : jerr.text, jerr.line);
    }
    json_t *manifests = json_object_get(root, "manifests");
    if (!json_is_array(manifests)) {
        json_decref(root);
        return kbi_error_set(ctx, KB_ERR_PARSE, "%s: an OCI index needs a 'manifests' array", what);
    }
    kb_pkg_index *idx = calloc(1, sizeof(*idx));
    if (idx)
        idx->entries = calloc(json_array_size(manifests) + 1, sizeof(*idx->entries));
    if (!idx || !idx->entries) {
        free(idx);
        json_decref(root);
        return kbi_error_oom(ctx);
    }
    json_t *ann = json_object_get(root, "annotations");
    idx->name = jstr(ann, "dev.kbpkg.name");
    idx->version = jstr(ann, "dev.kbpkg.version");
    idx->summary = jstr(ann, "org.opencontainers.image.description");
    idx->signatures = jstr(ann, KB_ANN_SIGNATURES);
    idx->declared = jstr(ann, KB_ANN_DECLARED);
    int rc = check_index_identity(ctx, what, idx);
    if (rc) {
        kbi_pkg_index_free(idx);
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
            kbi_pkg_index_free(idx);
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
        return kbi_strdup(r->url.path);
    const char *ns = r->url.namespace ? r->url.namespace : "";
    return kbi_asprintf("%s%s%s", r->url.base, *ns ? "/" : "", ns);
}

const kb_pkg_entry *kbi_pkg_index_find(const kb_pkg_index *idx, const char *target)
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
    kbi_semver_parse(NULL, &va, *(char *const *)a);
    kbi_semver_parse(NULL, &vb, *(char *const *)b);
    return kbi_semver_cmp(&vb, &va);
}

/* A repository the registry does not know is a package it does not have: say so, keeping the
 * file or URL that told us (-v shows the request). */
static int no_such_package(kb_registry *r, const char *name)
{
    const kb_error *e = kb_ctx_last_error(r->ctx);
    char *path = kbi_strdup(e->path), *url = kbi_strdup(e->url), *where = registry_where(r);
    int rc;
    if (!where)
        rc = kbi_error_oom(r->ctx);
    else if (url)
        rc = kbi_error_set_url(r->ctx, KB_ERR_NOT_FOUND, url, "no package %s in %s", name, where);
    else if (r->url.layout && !kbi_path_exists(where))
        rc =
            kbi_error_set_path(r->ctx, KB_ERR_NOT_FOUND, where, 0, 0,
                               "no package %s in %s: that registry folder does not exist (publish "
                               "there first, or point --registry or $KBPKG_REGISTRY at a registry)",
                               name, where);
    else
        rc = kbi_error_set_path(r->ctx, KB_ERR_NOT_FOUND, path, 0, 0, "no package %s in %s", name,
                                where);
    free(path);
    free(url);
    free(where);
    return rc;
}

int kbi_pkg_versions(kb_strv *out, kb_registry *r, const char *name)
{
    kb_strv tags = KB_STRV_INIT;
    int rc = kbi_registry_tags(&tags, r, name);
    if (rc == KB_ERR_NOT_FOUND)
        rc = no_such_package(r, name);
    for (size_t i = 0; !rc && i < tags.len; i++) {
        kb_semver v;
        if (kbi_semver_parse(NULL, &v, tags.items[i]) == 0)
            rc = kbi_strv_push(out, tags.items[i]) ? kbi_error_oom(r->ctx) : 0;
    }
    kbi_strv_free(&tags);
    if (!rc && out->len > 1)
        qsort(out->items, out->len, sizeof(char *), cmp_versions_desc);
    return rc;
}

int kbi_pkg_pick_version(char **out, kb_registry *r, const char *name, const char *constraint_text)
{
    *out = NULL;
    kb_constraint *c = NULL;
    int rc = kbi_constraint_parse(r->ctx, &c, constraint_text);
    if (rc)
        return rc;
    kb_strv versions = KB_STRV_INIT;
    rc = kbi_pkg_versions(&versions, r, name);
    for (size_t i = 0; !rc && i < versions.len && !*out; i++) {
        kb_semver v;
        kbi_semver_parse(NULL, &v, versions.items[i]);
        if (kbi_constraint_match(c, &v))
            *out = kbi_strdup(versions.items[i]);
    }
    if (!rc && !*out) {
        kb_buf have = KB_BUF_INIT;
        for (size_t i = 0; i < versions.len && i < 10; i++)
            kbi_buf_printf(&have, "%s%s", i ? ", " : "", versions.items[i]);
        rc = kbi_error_set(r->ctx, KB_ERR_NOT_FOUND, "no version of %s matches '%s' (%s%s)", name,
                           constraint_text, versions.len ? "the registry has " : "none published",
                           have.data ? have.data : "");
        kbi_buf_free(&have);
    }
    kbi_strv_free(&versions);
    kbi_constraint_free(c);
    return rc;
}

int kbi_pkg_index_fetch(kb_pkg_index **out, kb_registry *r, const char *name, const char *version,
                        const char *expect_digest)
{
    *out = NULL;
    kb_registry_manifest *m = NULL;
    int rc = kbi_registry_manifest_get(&m, r, name, expect_digest ? expect_digest : version);
    if (rc)
        return rc;
    char *where = registry_where(r);
    char *what = where ? kbi_asprintf("%s: %s@%s index %s", where, name, version, m->digest) : NULL;
    free(where);
    rc = what ? kbi_pkg_index_parse(out, r->ctx, what, m->data, m->len) : kbi_error_oom(r->ctx);
    kb_semver tagged;
    /* Another package's or version's index under this tag is a substitution or a rollback: a
     * failed check of what was served (KB_ERR_DIGEST, exit 4), as a signature mismatch is. */
    if (!rc && (*out)->name && strcmp((*out)->name, name) != 0)
        rc = kbi_error_set(r->ctx, KB_ERR_DIGEST,
                           "%s: the index names package '%s', not the one asked for (a "
                           "substitution)",
                           what, (*out)->name);
    /* A version tag must hold that version's index ("latest" may hold any). */
    else if (!rc && (*out)->version && kbi_semver_parse(NULL, &tagged, version) == 0 &&
             strcmp((*out)->version, version) != 0)
        rc = kbi_error_set(r->ctx, KB_ERR_DIGEST,
                           "%s: the index says version %s, not the tag's %s (a rollback or "
                           "substitution)",
                           what, (*out)->version, version);
    if (rc && *out) {
        kbi_pkg_index_free(*out);
        *out = NULL;
    } else if (!rc) {
        (*out)->digest = kbi_strdup(m->digest);
        if (!(*out)->name)
            (*out)->name = kbi_strdup(name);
        if (!(*out)->version)
            (*out)->version = kbi_strdup(version);
    }
    free(what);
    kbi_registry_manifest_free(m);
    return rc;
}

int kbi_pkg_entry_resolve(kb_pkg_entry *e, kb_registry *r, const char *name)
{
    if (e->layer_digest)
        return 0;
    kb_registry_manifest *m = NULL;
    int rc = kbi_registry_manifest_get(&m, r, name, e->manifest_digest);
    if (rc)
        return rc;
    char *where = registry_where(r);
    char *what =
        where ? kbi_asprintf("%s: %s %s manifest %s", where, name, e->target, e->manifest_digest)
              : NULL;
    free(where);
    if (!what) {
        kbi_registry_manifest_free(m);
        return kbi_error_oom(r->ctx);
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
        rc = kbi_error_set(r->ctx, KB_ERR_PARSE, "%s:%d:%d: %s", what, jerr.line, jerr.column,
                           jerr.text);
    else if (!layer || !ld || !kbi_digest_valid(ld))
        rc = kbi_error_set(r->ctx, KB_ERR_REGISTRY, "%s: no %s layer", what, KB_MT_KBPKG_LAYER);
    else
        rc = kbi_oci_descriptor_size(&layer_size, r->ctx, layer, 1, KB_PKG_LAYER_SIZE_MAX, what,
                                     field);
    if (!rc && config)
        rc = kbi_oci_descriptor_size(&config_size, r->ctx, config, 0, KB_PKG_CONFIG_SIZE_MAX, what,
                                     "config");
    if (!rc) {
        e->layer_digest = kbi_strdup(ld);
        e->layer_size = layer_size;
        e->config_digest = jstr(config, "digest");
        e->config_size = config_size;
        if (!e->layer_digest)
            rc = kbi_error_oom(r->ctx);
    }
    json_decref(root);
    free(what);
    kbi_registry_manifest_free(m);
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
    if (strcmp(it->target, KB_SOURCE_TARGET) != 0 && kbi_target_parse(NULL, &t, it->target) == 0) {
        char runtime[32];
        if (t.backend == KB_BACKEND_CPU)
            snprintf(runtime, sizeof(runtime), "cpu");
        else
            snprintf(runtime, sizeof(runtime), "%s%u", kbi_backend_name(t.backend),
                     t.runtime_major);
        json_object_set_new(ann, KB_ANN_BACKEND, json_string(kbi_backend_name(t.backend)));
        json_object_set_new(ann, KB_ANN_ARCH, json_string(t.arch));
        json_object_set_new(ann, KB_ANN_RUNTIME, json_string(runtime));
    }
    if (it->build_key)
        json_object_set_new(ann, KB_ANN_BUILD_KEY, json_string(it->build_key));
    json_t *config = it->config_json ? json_loads(it->config_json, 0, NULL) : NULL;
    json_t *sigs = json_object_get(config, "signatures");
    char *text = json_is_object(sigs) && json_object_size(sigs)
                     ? json_dumps(sigs, JSON_COMPACT | JSON_SORT_KEYS)
                     : NULL;
    if (text)
        json_object_set_new(ann, KB_ANN_SIGNATURES, json_string(text));
    free(text);
    const char *declared = json_string_value(json_object_get(config, "declared_targets"));
    if (source && declared)
        json_object_set_new(ann, KB_ANN_DECLARED, json_string(declared));
    json_decref(config);
    return ann;
}

static json_t *entry_platform(const char *target)
{
    kb_target t;
    if (strcmp(target, KB_SOURCE_TARGET) == 0 || kbi_target_parse(NULL, &t, target) != 0)
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
    int rc = kbi_sha256_file(ctx, it->path, hex, &p->layer_size);
    if (rc)
        return rc;
    snprintf(p->layer_digest, sizeof(p->layer_digest), "sha256:%s", hex);
    size_t clen = strlen(it->config_json);
    kbi_sha256_hex(it->config_json, clen, hex);
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
        return kbi_error_oom(ctx);
    kbi_sha256_hex(p->manifest, strlen(p->manifest), hex);
    snprintf(p->manifest_digest, sizeof(p->manifest_digest), "sha256:%s", hex);
    p->descriptor = json_pack("{s:s,s:s,s:I,s:s,s:o}", "mediaType", KB_MT_OCI_MANIFEST, "digest",
                              p->manifest_digest, "size", (json_int_t)strlen(p->manifest),
                              "artifactType", atype, "annotations", entry_annotations(it));
    json_t *platform = entry_platform(it->target);
    if (platform)
        json_object_set_new(p->descriptor, "platform", platform);
    return p->descriptor ? 0 : kbi_error_oom(ctx);
}

static void prepared_clear(prepared *p)
{
    free(p->manifest);
    json_decref(p->descriptor);
}

static int push_item_once(kb_registry *r, const char *name, const kb_publish_item *it,
                          const prepared *p)
{
    int rc = kbi_registry_blob_put_file_for(NULL, r, name, it->path, it->target);
    if (!rc)
        rc = kbi_registry_blob_put_mem(NULL, r, name, it->config_json, strlen(it->config_json));
    if (!rc)
        rc = kbi_registry_manifest_put(NULL, r, name, p->manifest_digest, KB_MT_OCI_MANIFEST,
                                       p->manifest, strlen(p->manifest));
    return rc;
}

static bool transient(int rc);
static void merge_backoff(unsigned round);

/* Workers of one package push the same source blob at once, and docker-registry 2.8 then
 * refuses some of the manifest PUTs that name it (400 DIGEST_INVALID) until its storage
 * settles: a refusal of that kind is tried again, from the blob on (each step skips what is
 * there). */
static int push_item(kb_registry *r, const char *name, const kb_publish_item *it, const prepared *p)
{
    int rc = push_item_once(r, name, it, p);
    for (unsigned attempt = 1; transient(rc) && attempt < 6; attempt++) {
        kbi_log(r->ctx, KB_LOG_DEBUG, "push %s %s: %s; again", name, it->target,
                kb_ctx_last_error(r->ctx)->message);
        merge_backoff(attempt + 2);
        rc = push_item_once(r, name, it, p);
    }
    return rc;
}

/* The existing index of name@version as JSON, or a new empty one. */
static int load_existing(json_t **out, kb_registry *r, const char *name, const char *version)
{
    kb_registry_manifest *m = NULL;
    int rc = kbi_registry_manifest_get(&m, r, name, version);
    if (rc == KB_ERR_NOT_FOUND) {
        kb_ctx_clear_error(r->ctx);
        *out = json_pack("{s:i,s:s,s:[]}", "schemaVersion", 2, "mediaType", KB_MT_OCI_INDEX,
                         "manifests");
        return *out ? 0 : kbi_error_oom(r->ctx);
    }
    if (rc)
        return rc;
    json_error_t jerr;
    *out = json_loadb(m->data, m->len, 0, &jerr);
    kbi_registry_manifest_free(m);
    if (!*out || !json_is_array(json_object_get(*out, "manifests"))) {
        json_decref(*out);
        *out = NULL;
        return kbi_error_set(r->ctx, KB_ERR_REGISTRY,
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

/* ---- staging and merging ----
 *
 * OCI registries have no transaction: a tag PUT replaces whatever the tag held, and
 * docker-registry 2.8 ignores If-Match. So a publisher never writes the version's index from
 * what it alone knows. It first points a staging tag per target at a one-entry index (its
 * descriptor, exactly as the version's index will hold it), then merges: the union of the
 * version's index and every staged target, written only when something is missing, and read
 * again until a round finds nothing to write. The last writer of the version tag always
 * rereads after its write and lists the stages again, and every stage is tagged before its
 * publisher's merge starts, so whatever the interleaving the last round of the last writer
 * sees every stage; a stale union written late is caught by its own writer's next round.
 * Serialising merges (Slurm singleton, a GitHub concurrency group) only saves rounds. */

#define STAGE_PREFIX "kbstage-"
#define MERGE_ROUNDS_MAX 200
#define ANN_STAGE "dev.kbpkg.stage"

int kbi_pkg_stage_tag(char *out, size_t size, const char *version, const char *target)
{
    int n = snprintf(out, size, "%s%s--%s", STAGE_PREFIX, version, target ? target : "");
    return n > 0 && (size_t)n < size && (!target || kbi_tag_valid(out)) ? 0 : KB_ERR_INVALID;
}

void kbi_pkg_merge_result_free(kb_pkg_merge_result *m)
{
    free(m->index_digest);
    kbi_strv_free(&m->conflicts);
    memset(m, 0, sizeof(*m));
}

/* The staging document of one target: a one-entry OCI index naming package and version. */
static char *stage_document(const char *name, const char *version, const char *summary,
                            const prepared *p)
{
    json_t *ann = json_pack("{s:s,s:s}", "dev.kbpkg.name", name, "dev.kbpkg.version", version);
    if (summary && *summary)
        json_object_set_new(ann, "org.opencontainers.image.description", json_string(summary));
    json_t *doc = json_pack("{s:i,s:s,s:[O],s:o}", "schemaVersion", 2, "mediaType", KB_MT_OCI_INDEX,
                            "manifests", p->descriptor, "annotations", ann);
    char *bytes = doc ? canonical(doc) : NULL;
    json_decref(doc);
    return bytes;
}

/* What one round works from: the version's index and the staged descriptors. */
typedef struct merge_view {
    json_t *index;  /* the version's index (a new empty one when none) */
    char *digest;   /* its digest; NULL when none */
    json_t *staged; /* array of descriptors, one per staged target */
    char *summary;  /* from a stage, when the index has none */
} merge_view;

static void merge_view_clear(merge_view *v)
{
    json_decref(v->index);
    json_decref(v->staged);
    free(v->digest);
    free(v->summary);
    memset(v, 0, sizeof(*v));
}

static const char *descriptor_target(json_t *d)
{
    return json_string_value(json_object_get(json_object_get(d, "annotations"), KB_ANN_TARGET));
}

/* Add the descriptor a staging tag holds, when it is one of ours for name@version. */
static int read_stage(merge_view *v, kb_registry *r, const char *name, const char *version,
                      const char *tag)
{
    kb_registry_manifest *m = NULL;
    int rc = kbi_registry_manifest_get(&m, r, name, tag);
    if (rc == KB_ERR_NOT_FOUND) { /* listed, then gone: nothing staged there */
        kb_ctx_clear_error(r->ctx);
        return 0;
    }
    if (rc)
        return rc;
    json_t *doc = json_loadb(m->data, m->len, 0, NULL);
    json_t *ann = json_object_get(doc, "annotations");
    json_t *d = json_array_get(json_object_get(doc, "manifests"), 0);
    const char *n = json_string_value(json_object_get(ann, "dev.kbpkg.name"));
    const char *ver = json_string_value(json_object_get(ann, "dev.kbpkg.version"));
    const char *sum =
        json_string_value(json_object_get(ann, "org.opencontainers.image.description"));
    const char *digest = json_string_value(json_object_get(d, "digest"));
    /* another version whose text extends ours ("1.0.0--x"), or not a stage at all */
    if (n && ver && strcmp(n, name) == 0 && strcmp(ver, version) == 0 && descriptor_target(d) &&
        digest && kbi_digest_valid(digest)) {
        json_array_append(v->staged, d);
        if (sum && !v->summary && !(v->summary = kbi_strdup(sum)))
            rc = kbi_error_oom(r->ctx);
    }
    json_decref(doc);
    kbi_registry_manifest_free(m);
    return rc;
}

/* dev.kbpkg.signatures: the typed exports' signatures of every artifact of the version, so
 * `kbpkg info` and the hub show them without fetching a config blob. Each artifact's descriptor
 * carries its own (from its kbpkg.json, entry_annotations); the index holds their union with
 * what it said before. Left out when no artifact declares any. */
static void index_signatures(json_t *ann, json_t *old_ann, json_t *manifests)
{
    const char *old = json_string_value(json_object_get(old_ann, KB_ANN_SIGNATURES));
    json_t *merged = json_loads(old ? old : "{}", 0, NULL);
    if (!json_is_object(merged)) {
        json_decref(merged);
        merged = json_object();
    }
    size_t i;
    json_t *d;
    json_array_foreach(manifests, i, d)
    {
        const char *text = json_string_value(
            json_object_get(json_object_get(d, "annotations"), KB_ANN_SIGNATURES));
        json_t *sigs = text ? json_loads(text, 0, NULL) : NULL;
        if (merged && json_is_object(sigs))
            json_object_update(merged, sigs);
        json_decref(sigs);
    }
    char *text = merged && json_object_size(merged)
                     ? json_dumps(merged, JSON_COMPACT | JSON_SORT_KEYS)
                     : NULL;
    if (text)
        json_object_set_new(ann, KB_ANN_SIGNATURES, json_string(text));
    free(text);
    json_decref(merged);
}

/* dev.kbpkg.declared-targets on the index: what the source entry's descriptor says (from the
 * source's config, entry_annotations), so one GET of the index tells the resolver which targets a
 * local build may make. Left as it was when the index has no source entry saying it. */
static void index_declared_targets(json_t *ann, json_t *manifests)
{
    size_t pos = 0;
    json_t *source = find_descriptor(manifests, KB_SOURCE_TARGET, &pos);
    const char *declared =
        json_string_value(json_object_get(json_object_get(source, "annotations"), KB_ANN_DECLARED));
    if (declared)
        json_object_set_new(ann, KB_ANN_DECLARED, json_string(declared));
}

static int read_view(merge_view *v, kb_registry *r, const char *name, const char *version)
{
    memset(v, 0, sizeof(*v));
    v->staged = json_array();
    kb_registry_manifest *m = NULL;
    int rc = v->staged ? kbi_registry_manifest_get(&m, r, name, version) : KB_ERR_NOMEM;
    if (rc == KB_ERR_NOT_FOUND) {
        kb_ctx_clear_error(r->ctx);
        rc = load_existing(&v->index, r, name, version);
    } else if (!rc) {
        json_error_t jerr;
        v->index = json_loadb(m->data, m->len, 0, &jerr);
        v->digest = kbi_strdup(m->digest);
        if (!v->index || !json_is_array(json_object_get(v->index, "manifests")))
            rc = kbi_error_set(r->ctx, KB_ERR_REGISTRY,
                               "%s@%s: the existing index %s is not an OCI index", name, version,
                               m->digest);
    }
    kbi_registry_manifest_free(m);
    char prefix[160];
    kb_strv tags = KB_STRV_INIT;
    if (!rc && kbi_pkg_stage_tag(prefix, sizeof(prefix), version, NULL) != 0)
        rc = kbi_error_set(r->ctx, KB_ERR_INVALID, "%s@%s: version too long to stage", name,
                           version);
    if (!rc) {
        rc = kbi_registry_tags(&tags, r, name);
        if (rc == KB_ERR_NOT_FOUND) {
            kb_ctx_clear_error(r->ctx);
            rc = 0;
        }
    }
    for (size_t i = 0; !rc && i < tags.len; i++)
        if (kbi_str_starts(tags.items[i], prefix))
            rc = read_stage(v, r, name, version, tags.items[i]);
    kbi_strv_free(&tags);
    return rc == KB_ERR_NOMEM ? kbi_error_oom(r->ctx) : rc;
}

/* The highest released version of name (a pre-release never moves latest), as a tag. */
static int highest_version(char **out, kb_registry *r, const char *name, const char *version)
{
    *out = NULL;
    kb_strv versions = KB_STRV_INIT;
    int rc = kbi_pkg_versions(&versions, r, name);
    if (rc == KB_ERR_NOT_FOUND) {
        kb_ctx_clear_error(r->ctx);
        rc = 0;
    }
    kb_semver best, v;
    bool have = false;
    if (!rc && kbi_semver_parse(NULL, &v, version) == 0 && !v.pre[0]) {
        best = v;
        have = true;
        *out = kbi_strdup(version);
    }
    for (size_t i = 0; !rc && i < versions.len; i++) {
        if (kbi_semver_parse(NULL, &v, versions.items[i]) != 0 || v.pre[0])
            continue;
        if (!have || kbi_semver_cmp(&v, &best) > 0) {
            best = v;
            have = true;
            free(*out);
            *out = kbi_strdup(versions.items[i]);
        }
    }
    kbi_strv_free(&versions);
    return rc;
}

/* The batch item that points latest at the highest version's index, when it does not yet.
 * *bytes is set (owned) when latest must move; ours: the index this round writes, if any. */
static int latest_update(char **bytes, kb_registry *r, const char *name, const char *version,
                         const char *ours, const char *ours_digest)
{
    *bytes = NULL;
    char *top = NULL;
    int rc = highest_version(&top, r, name, version);
    if (rc || !top)
        return rc;
    kb_registry_manifest *want = NULL, *latest = NULL;
    const char *want_digest = ours_digest;
    if (strcmp(top, version) != 0 || !ours) {
        rc = kbi_registry_manifest_get(&want, r, name, top);
        if (rc == KB_ERR_NOT_FOUND && strcmp(top, version) == 0) { /* not written yet */
            kb_ctx_clear_error(r->ctx);
            rc = 0;
        }
        want_digest = want ? want->digest : NULL;
    }
    if (!rc && want_digest) {
        rc = kbi_registry_manifest_get(&latest, r, name, "latest");
        if (rc == KB_ERR_NOT_FOUND) {
            kb_ctx_clear_error(r->ctx);
            rc = 0;
        }
    }
    if (!rc && want_digest && (!latest || strcmp(latest->digest, want_digest) != 0)) {
        *bytes = kbi_strdup(want ? want->data : ours);
        rc = *bytes ? 0 : kbi_error_oom(r->ctx);
    }
    kbi_registry_manifest_free(want);
    kbi_registry_manifest_free(latest);
    free(top);
    return rc;
}

/* One merge participant's own items: descriptors and staging documents. */
typedef struct merge_own {
    const kb_publish_item *items;
    prepared *prep;
    size_t count;
    bool force;
    kb_publish_status *st;
} merge_own;

/* Fold desc (for target) into manifests. Returns 1 when it changed something, 0 when already
 * there, 2 when a different entry holds the target and replacing was not asked. */
static int fold(json_t *manifests, json_t *desc, bool replace)
{
    size_t pos = 0;
    json_t *old = find_descriptor(manifests, descriptor_target(desc), &pos);
    const char *od = json_string_value(json_object_get(old, "digest"));
    const char *nd = json_string_value(json_object_get(desc, "digest"));
    if (od && strcmp(od, nd) == 0)
        return 0;
    if (old && !replace)
        return 2;
    if (old)
        json_array_remove(manifests, pos);
    json_array_append(manifests, desc);
    return 1;
}

static bool is_own_target(const merge_own *own, const char *target)
{
    for (size_t i = 0; own && i < own->count; i++)
        if (strcmp(own->items[i].target, target) == 0)
            return true;
    return false;
}

/* The union for this round: staged entries of others (a conflict is noted and skipped), then our
 * own (a conflict is an error unless force). *changed when the index must be written. */
static int merge_union(kb_ctx *ctx, merge_view *v, const merge_own *own, const char *name,
                       const char *version, kb_pkg_merge_result *out, bool *changed)
{
    json_t *manifests = json_object_get(v->index, "manifests");
    *changed = false;
    kbi_strv_free(&out->conflicts);
    size_t i;
    json_t *d;
    json_array_foreach(v->staged, i, d)
    {
        const char *target = descriptor_target(d);
        if (is_own_target(own, target))
            continue; /* our own item decides for this target */
        size_t pos = 0;
        const char *od =
            json_string_value(json_object_get(find_descriptor(manifests, target, &pos), "digest"));
        int f = fold(manifests, d, false);
        if (f == 2 &&
            kbi_strv_push_owned(&out->conflicts,
                                kbi_asprintf("%s@%s %s: staged %s, the index holds %s; "
                                             "skipped (publish a new version)",
                                             name, version, target,
                                             json_string_value(json_object_get(d, "digest")), od)))
            return kbi_error_oom(ctx);
        *changed |= f == 1;
    }
    for (size_t k = 0; own && k < own->count; k++) {
        int f = fold(manifests, own->prep[k].descriptor, own->force);
        if (f == 2) {
            size_t pos = 0;
            json_t *old = find_descriptor(manifests, own->items[k].target, &pos);
            return kbi_error_set(ctx, KB_ERR_EXISTS,
                                 "%s@%s %s is already published with different bytes (registry "
                                 "%s, yours %s); use --force to replace it",
                                 name, version, own->items[k].target,
                                 json_string_value(json_object_get(old, "digest")),
                                 own->prep[k].manifest_digest);
        }
        *changed |= f == 1;
    }
    return 0;
}

static void set_index_annotations(json_t *index, const char *name, const char *version,
                                  const char *summary)
{
    json_t *ann = json_pack("{s:s,s:s}", "dev.kbpkg.name", name, "dev.kbpkg.version", version);
    if (summary && *summary)
        json_object_set_new(ann, "org.opencontainers.image.description", json_string(summary));
    json_t *old_ann = json_object_get(index, "annotations");
    index_signatures(ann, old_ann, json_object_get(index, "manifests"));
    index_declared_targets(ann, json_object_get(index, "manifests"));
    if (json_is_object(old_ann))
        json_object_update_missing(ann, old_ann);
    json_object_set_new(index, "annotations", ann);
}

/* A short random pause between rounds, so that workers that collided do not collide again. */
static void merge_backoff(unsigned round)
{
    static _Thread_local unsigned seed;
    if (!seed)
        seed = (unsigned)getpid() ^ (unsigned)time(NULL) ^ (unsigned)(uintptr_t)&seed;
    unsigned cap_ms = round < 6 ? 5u << round : 200;
    struct timespec ts = {0, (long)(rand_r(&seed) % (cap_ms + 1)) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The staging tags of own items, first in the batch. */
static int own_stage_puts(kb_ctx *ctx, kb_tag_put *puts, char **docs, char (*tags)[160],
                          const merge_own *own, const char *name, const char *version,
                          const char *summary)
{
    for (size_t i = 0; i < own->count; i++) {
        if (kbi_pkg_stage_tag(tags[i], sizeof(tags[i]), version, own->items[i].target) != 0)
            return kbi_error_set(ctx, KB_ERR_INVALID,
                                 "%s@%s %s: no staging tag fits in 128 characters", name, version,
                                 own->items[i].target);
        if (!(docs[i] = stage_document(name, version, summary, &own->prep[i])))
            return kbi_error_oom(ctx);
        puts[i] = (kb_tag_put){tags[i], KB_MT_OCI_INDEX, docs[i], strlen(docs[i])};
    }
    return 0;
}

/* One round: read, union, write what changed. *done when nothing had to be written. */
static int merge_round(kb_registry *r, const char *name, const char *version, const char *summary,
                       merge_own *own, bool stage_own, kb_pkg_merge_result *out, bool *done)
{
    kb_ctx *ctx = r->ctx;
    merge_view v = {0};
    bool changed = false;
    size_t n_own = stage_own && own ? own->count : 0;
    kb_tag_put *puts = calloc(n_own + 3, sizeof(*puts));
    char **docs = calloc(n_own + 1, sizeof(*docs));
    char(*tags)[160] = calloc(n_own + 1, sizeof(*tags));
    char *bytes = NULL, *latest = NULL, digest[72] = "";
    int rc = (!puts || !docs || !tags) ? kbi_error_oom(ctx) : read_view(&v, r, name, version);
    if (!rc)
        rc = merge_union(ctx, &v, own, name, version, out, &changed);
    if (!rc && changed) {
        sort_manifests(json_object_get(v.index, "manifests"));
        set_index_annotations(v.index, name, version, summary ? summary : v.summary);
        bytes = canonical(v.index);
        char hex[65];
        if (bytes)
            kbi_sha256_hex(bytes, strlen(bytes), hex);
        snprintf(digest, sizeof(digest), "sha256:%s", bytes ? hex : "");
        rc = bytes ? 0 : kbi_error_oom(ctx);
    }
    if (!rc)
        rc = latest_update(&latest, r, name, version, bytes, changed ? digest : v.digest);
    size_t n = n_own;
    if (!rc && n_own)
        rc = own_stage_puts(ctx, puts, docs, tags, own, name, version, summary);
    if (!rc && bytes)
        puts[n++] = (kb_tag_put){version, KB_MT_OCI_INDEX, bytes, strlen(bytes)};
    if (!rc && latest)
        puts[n++] = (kb_tag_put){"latest", KB_MT_OCI_INDEX, latest, strlen(latest)};
    /* Nothing to write and no index: nothing was staged as far as this read could see. A merge
     * runs after its stages were written, so that is a listing that missed them (a registry
     * busy with concurrent tag writes) or a merge of something never staged: read again, and
     * merge_loop gives up after a few such rounds. */
    *done = !rc && n == 0 && v.digest;
    if (!rc && n == 0 && !v.digest)
        out->empty_rounds++;
    if (!rc && n)
        rc = kbi_registry_tags_put(r, name, puts, n);
    if (!rc && bytes) {
        out->written = true;
        free(out->index_digest);
        out->index_digest = kbi_strdup(digest);
    } else if (!rc && *done) {
        free(out->index_digest);
        out->index_digest = kbi_strdup(v.digest);
    }
    for (size_t i = 0; docs && i < n_own; i++)
        free(docs[i]);
    free(docs);
    free(tags);
    free(puts);
    free(bytes);
    free(latest);
    merge_view_clear(&v);
    return rc;
}

/* Errors a later round may cure: a registry that refused a PUT another writer raced with
 * (docker-registry answers 400 DIGEST_INVALID then), a dropped connection. */
static bool transient(int rc)
{
    return rc == KB_ERR_REGISTRY || rc == KB_ERR_NETWORK || rc == KB_ERR_DIGEST;
}

static int merge_loop(kb_pkg_merge_result *out, kb_registry *r, const char *name,
                      const char *version, const char *summary, merge_own *own)
{
    memset(out, 0, sizeof(*out));
    bool done = false, staged = false;
    int rc = 0;
    unsigned failures = 0;
    for (unsigned round = 0; !done && round < MERGE_ROUNDS_MAX; round++) {
        if (round)
            merge_backoff(round);
        out->rounds = round + 1;
        rc = merge_round(r, name, version, summary, own, own && !staged, out, &done);
        if (!rc && out->empty_rounds >= 5)
            return kbi_error_set(r->ctx, KB_ERR_NOT_FOUND,
                                 "%s@%s: nothing is published or staged for that version", name,
                                 version);
        if (!rc)
            staged = true; /* the batch wrote our stages first */
        else if (transient(rc) && ++failures < 8)
            kbi_log(r->ctx, KB_LOG_DEBUG, "merge %s@%s round %u: %s; again", name, version,
                    round + 1, kb_ctx_last_error(r->ctx)->message);
        else
            return rc;
    }
    if (!done)
        return kbi_error_set(r->ctx, KB_ERR_REGISTRY,
                             "%s@%s: the index still lacked staged targets after %d merge rounds",
                             name, version, MERGE_ROUNDS_MAX);
    kb_ctx_clear_error(r->ctx);
    return out->index_digest ? 0 : kbi_error_oom(r->ctx);
}

static int check_publish_args(kb_ctx *ctx, const char *name, const char *version,
                              const kb_publish_item *items, size_t count)
{
    kb_semver parsed;
    if (kbi_pkg_name_check(ctx, name))
        return KB_ERR_INVALID;
    if (kbi_semver_parse(ctx, &parsed, version) != 0)
        return kbi_error_set(ctx, KB_ERR_VERSION, "%s: cannot publish version '%s': %s", name,
                             version, kb_ctx_last_error(ctx)->message);
    if (count == 0)
        return kbi_error_set(ctx, KB_ERR_INVALID, "%s@%s: nothing to publish", name, version);
    for (size_t i = 0; i < count; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(items[i].target, items[j].target) == 0)
                return kbi_error_set(ctx, KB_ERR_INVALID, "%s@%s: target %s given twice", name,
                                     version, items[i].target);
    return 0;
}

/* Decide each item against the index as it is now: refusals push nothing. */
static int decide(kb_registry *r, const char *name, const char *version, merge_own *own)
{
    json_t *index = NULL;
    int rc = load_existing(&index, r, name, version);
    json_t *manifests = json_object_get(index, "manifests");
    for (size_t i = 0; !rc && i < own->count; i++) {
        rc = prepare_item(&own->prep[i], r->ctx, &own->items[i]);
        size_t pos = 0;
        json_t *old = rc ? NULL : find_descriptor(manifests, own->items[i].target, &pos);
        const char *old_digest = json_string_value(json_object_get(old, "digest"));
        own->st[i] = KB_PUBLISH_NEW;
        if (old_digest && strcmp(old_digest, own->prep[i].manifest_digest) == 0)
            own->st[i] = KB_PUBLISH_SAME;
        else if (old_digest && !own->force)
            rc = kbi_error_set(r->ctx, KB_ERR_EXISTS,
                               "%s@%s %s is already published with different bytes (registry "
                               "%s, yours %s); use --force to replace it",
                               name, version, own->items[i].target, old_digest,
                               own->prep[i].manifest_digest);
        else if (old_digest)
            own->st[i] = KB_PUBLISH_REPLACED;
    }
    json_decref(index);
    return rc;
}

/* Prepare, decide and push own items (blobs and manifests by digest, nothing tagged). */
static int own_open(merge_own *own, kb_registry *r, const char *name, const char *version,
                    const kb_publish_item *items, size_t count, bool force)
{
    memset(own, 0, sizeof(*own));
    int rc = check_publish_args(r->ctx, name, version, items, count);
    if (rc)
        return rc;
    own->items = items;
    own->count = count;
    own->force = force;
    own->prep = calloc(count + 1, sizeof(*own->prep));
    own->st = calloc(count + 1, sizeof(*own->st));
    if (!own->prep || !own->st)
        return kbi_error_oom(r->ctx);
    rc = decide(r, name, version, own);
    for (size_t i = 0; !rc && i < count; i++)
        if (own->st[i] != KB_PUBLISH_SAME)
            rc = push_item(r, name, &items[i], &own->prep[i]);
    return rc;
}

static void own_close(merge_own *own)
{
    for (size_t i = 0; own->prep && i < own->count; i++)
        prepared_clear(&own->prep[i]);
    free(own->prep);
    free(own->st);
}

int kbi_pkg_merge(kb_pkg_merge_result *out, kb_registry *r, const char *name, const char *version)
{
    memset(out, 0, sizeof(*out));
    kb_semver parsed;
    if (!kbi_repo_valid(name) || !strchr(name, '/'))
        return kbi_error_set(r->ctx, KB_ERR_INVALID, "'%s' is not a package name (org/name)", name);
    if (kbi_semver_parse(r->ctx, &parsed, version) != 0)
        return kbi_error_set(r->ctx, KB_ERR_VERSION, "%s: cannot merge version '%s': %s", name,
                             version, kb_ctx_last_error(r->ctx)->message);
    return merge_loop(out, r, name, version, NULL, NULL);
}

int kbi_pkg_stage(kb_registry *r, const char *name, const char *version, const char *summary,
                  const kb_publish_item *items, size_t count, kb_publish_status *statuses)
{
    merge_own own;
    int rc = own_open(&own, r, name, version, items, count, false);
    size_t n = 0;
    kb_tag_put *puts = rc ? NULL : calloc(count + 1, sizeof(*puts));
    char **docs = rc ? NULL : calloc(count + 1, sizeof(*docs));
    char(*tags)[160] = rc ? NULL : calloc(count + 1, sizeof(*tags));
    if (!rc && (!puts || !docs || !tags))
        rc = kbi_error_oom(r->ctx);
    if (!rc)
        rc = own_stage_puts(r->ctx, puts, docs, tags, &own, name, version, summary);
    for (size_t i = 0; !rc && i < count; i++) /* already in the index: nothing to stage */
        if (own.st[i] != KB_PUBLISH_SAME)
            puts[n++] = puts[i];
    if (!rc && n)
        rc = kbi_registry_tags_put(r, name, puts, n);
    for (size_t i = 0; statuses && !rc && i < count; i++)
        statuses[i] = own.st[i];
    for (size_t i = 0; docs && i < count; i++)
        free(docs[i]);
    free(docs);
    free(tags);
    free(puts);
    own_close(&own);
    return rc;
}

int kbi_pkg_publish(kb_registry *r, const char *name, const char *version, const char *summary,
                    const kb_publish_item *items, size_t count, bool force,
                    kb_publish_status *statuses, char **index_digest_out)
{
    if (index_digest_out)
        *index_digest_out = NULL;
    merge_own own;
    kb_pkg_merge_result res = {0};
    int rc = own_open(&own, r, name, version, items, count, force);
    if (!rc)
        rc = merge_loop(&res, r, name, version, summary, &own);
    for (size_t i = 0; statuses && !rc && i < count; i++)
        statuses[i] = own.st[i];
    if (!rc && index_digest_out) {
        *index_digest_out = res.index_digest;
        res.index_digest = NULL;
    }
    kbi_pkg_merge_result_free(&res);
    own_close(&own);
    return rc;
}
