/* OCI JSON documents: canonical serialization and tolerant parsing of manifests and indexes. */
#include "registry/oci.h"
#include "registry/registry.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kbi_oci_annotate(kb_oci_annotations *a, const char *key, const char *value)
{
    for (size_t i = 0; i < a->keys.len; i++)
        if (strcmp(a->keys.items[i], key) == 0) {
            char *v = kbi_strdup(value);
            if (!v)
                return KB_ERR_NOMEM;
            free(a->values.items[i]);
            a->values.items[i] = v;
            return 0;
        }
    if (kbi_strv_push(&a->keys, key))
        return KB_ERR_NOMEM;
    if (kbi_strv_push(&a->values, value)) {
        free(a->keys.items[--a->keys.len]);
        return KB_ERR_NOMEM;
    }
    return 0;
}

const char *kbi_oci_annotation(const kb_oci_annotations *a, const char *key)
{
    for (size_t i = 0; i < a->keys.len; i++)
        if (strcmp(a->keys.items[i], key) == 0)
            return a->values.items[i];
    return NULL;
}

void kbi_oci_annotations_clear(kb_oci_annotations *a)
{
    kbi_strv_free(&a->keys);
    kbi_strv_free(&a->values);
}

static int replace(char **slot, const char *value)
{
    char *v = value ? kbi_strdup(value) : NULL;
    if (value && !v)
        return KB_ERR_NOMEM;
    free(*slot);
    *slot = v;
    return 0;
}

int kbi_oci_descriptor_set(kb_oci_descriptor *d, const char *media_type, const char *digest,
                           uint64_t size)
{
    d->size = size;
    if (replace(&d->media_type, media_type) || replace(&d->digest, digest))
        return KB_ERR_NOMEM;
    return 0;
}

int kbi_oci_descriptor_for(kb_oci_descriptor *d, const char *media_type, const void *data,
                           size_t len)
{
    char hex[65], digest[72];
    kbi_sha256_hex(data, len, hex);
    snprintf(digest, sizeof(digest), "sha256:%s", hex);
    return kbi_oci_descriptor_set(d, media_type, digest, len);
}

int kbi_oci_descriptor_empty_config(kb_oci_descriptor *d)
{
    return kbi_oci_descriptor_for(d, KB_MT_OCI_EMPTY, "{}", 2);
}

int kbi_oci_descriptor_copy(kb_oci_descriptor *dst, const kb_oci_descriptor *src)
{
    memset(dst, 0, sizeof(*dst));
    dst->size = src->size;
    int rc = replace(&dst->media_type, src->media_type) | replace(&dst->digest, src->digest) |
             replace(&dst->artifact_type, src->artifact_type) |
             replace(&dst->platform_os, src->platform_os) |
             replace(&dst->platform_arch, src->platform_arch);
    for (size_t i = 0; !rc && i < src->annotations.keys.len; i++)
        rc = kbi_oci_annotate(&dst->annotations, src->annotations.keys.items[i],
                              src->annotations.values.items[i]);
    if (rc) {
        kbi_oci_descriptor_clear(dst);
        return KB_ERR_NOMEM;
    }
    return 0;
}

void kbi_oci_descriptor_clear(kb_oci_descriptor *d)
{
    free(d->media_type);
    free(d->digest);
    free(d->artifact_type);
    free(d->platform_os);
    free(d->platform_arch);
    kbi_oci_annotations_clear(&d->annotations);
    memset(d, 0, sizeof(*d));
}

/* ---- to JSON ---- */

static json_t *annotations_json(const kb_oci_annotations *a)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < a->keys.len; i++)
        json_object_set_new(o, a->keys.items[i], json_string(a->values.items[i]));
    return o;
}

static json_t *descriptor_json(const kb_oci_descriptor *d)
{
    json_t *o = json_pack("{s:s?, s:s?, s:I}", "mediaType", d->media_type, "digest", d->digest,
                          "size", (json_int_t)d->size);
    if (!o)
        return NULL;
    if (d->artifact_type)
        json_object_set_new(o, "artifactType", json_string(d->artifact_type));
    if (d->platform_os || d->platform_arch)
        json_object_set_new(
            o, "platform",
            json_pack("{s:s?, s:s?}", "os", d->platform_os, "architecture", d->platform_arch));
    if (d->annotations.keys.len)
        json_object_set_new(o, "annotations", annotations_json(&d->annotations));
    return o;
}

static int dump_canonical(kb_buf *out, kb_ctx *ctx, json_t *root)
{
    char *text = root ? json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(root);
    if (!text)
        return kbi_error_oom(ctx);
    out->len = 0;
    int rc = kbi_buf_puts(out, text);
    free(text);
    return rc ? kbi_error_oom(ctx) : 0;
}

int kbi_oci_manifest_serialize(kb_buf *out, kb_ctx *ctx, const kb_oci_manifest *m)
{
    json_t *root = json_pack("{s:i, s:s}", "schemaVersion", 2, "mediaType", KB_MT_OCI_MANIFEST);
    json_t *layers = json_array();
    if (!root || !layers) {
        json_decref(root);
        json_decref(layers);
        return kbi_error_oom(ctx);
    }
    if (m->artifact_type)
        json_object_set_new(root, "artifactType", json_string(m->artifact_type));
    json_object_set_new(root, "config", descriptor_json(&m->config));
    for (size_t i = 0; i < m->layer_count; i++)
        json_array_append_new(layers, descriptor_json(&m->layers[i]));
    json_object_set_new(root, "layers", layers);
    if (m->subject)
        json_object_set_new(root, "subject", descriptor_json(m->subject));
    if (m->annotations.keys.len)
        json_object_set_new(root, "annotations", annotations_json(&m->annotations));
    return dump_canonical(out, ctx, root);
}

int kbi_oci_index_serialize(kb_buf *out, kb_ctx *ctx, const kb_oci_index *ix)
{
    json_t *root = json_pack("{s:i, s:s}", "schemaVersion", 2, "mediaType", KB_MT_OCI_INDEX);
    json_t *manifests = json_array();
    if (!root || !manifests) {
        json_decref(root);
        json_decref(manifests);
        return kbi_error_oom(ctx);
    }
    if (ix->artifact_type)
        json_object_set_new(root, "artifactType", json_string(ix->artifact_type));
    for (size_t i = 0; i < ix->manifest_count; i++)
        json_array_append_new(manifests, descriptor_json(&ix->manifests[i]));
    json_object_set_new(root, "manifests", manifests);
    if (ix->annotations.keys.len)
        json_object_set_new(root, "annotations", annotations_json(&ix->annotations));
    return dump_canonical(out, ctx, root);
}

/* ---- from JSON ---- */

static int parse_annotations(kb_oci_annotations *a, json_t *o)
{
    const char *key;
    json_t *value;
    json_object_foreach(o, key, value)
    {
        /* the spec says string values; tolerate and skip others rather than fail */
        if (json_is_string(value) && kbi_oci_annotate(a, key, json_string_value(value)))
            return KB_ERR_NOMEM;
    }
    return 0;
}

static int bad_field(kb_ctx *ctx, const char *what, const char *field)
{
    return kbi_error_set(ctx, KB_ERR_PARSE, "%s: %s is missing or invalid", what, field);
}

int kbi_oci_descriptor_size(uint64_t *out, kb_ctx *ctx, const json_t *desc, uint64_t min,
                            uint64_t max, const char *what, const char *field)
{
    *out = 0;
    json_t *size = json_object_get(desc, "size");
    const char *digest = json_string_value(json_object_get(desc, "digest"));
    char of[96] = "";
    if (digest)
        snprintf(of, sizeof(of), " (%.80s)", digest);
    if (!size)
        return kbi_error_set(ctx, KB_ERR_PARSE, "%s: %s%s has no size", what, field, of);
    if (!json_is_integer(size)) {
        char *text = json_dumps(size, JSON_ENCODE_ANY | JSON_COMPACT);
        int rc = kbi_error_set(ctx, KB_ERR_PARSE, "%s: %s%s: size %.40s is not an integer", what,
                               field, of, text ? text : "?");
        free(text);
        return rc;
    }
    json_int_t v = json_integer_value(size);
    if (v < 0)
        return kbi_error_set(ctx, KB_ERR_PARSE, "%s: %s%s: size %lld is negative", what, field, of,
                             (long long)v);
    if ((uint64_t)v < min || (uint64_t)v > max)
        return kbi_error_set(
            ctx, KB_ERR_PARSE, "%s: %s%s: size %lld is out of range (%llu to %llu bytes)", what,
            field, of, (long long)v, (unsigned long long)min, (unsigned long long)max);
    *out = (uint64_t)v;
    return 0;
}

static int parse_descriptor(kb_oci_descriptor *d, kb_ctx *ctx, json_t *o, const char *what,
                            const char *field)
{
    const char *mt = json_string_value(json_object_get(o, "mediaType"));
    const char *digest = json_string_value(json_object_get(o, "digest"));
    if (!json_is_object(o) || !mt || !kbi_digest_valid(digest))
        return bad_field(ctx, what, field);
    uint64_t size;
    int rc = kbi_oci_descriptor_size(&size, ctx, o, 0, INT64_MAX, what, field);
    if (rc)
        return rc;
    json_t *platform = json_object_get(o, "platform");
    if (kbi_oci_descriptor_set(d, mt, digest, size) ||
        replace(&d->artifact_type, json_string_value(json_object_get(o, "artifactType"))) ||
        replace(&d->platform_os, json_string_value(json_object_get(platform, "os"))) ||
        replace(&d->platform_arch, json_string_value(json_object_get(platform, "architecture"))) ||
        parse_annotations(&d->annotations, json_object_get(o, "annotations")))
        return kbi_error_oom(ctx);
    return 0;
}

static int load_document(json_t **out, kb_ctx *ctx, const char *data, size_t len, const char *what)
{
    json_error_t jerr;
    *out = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!*out)
        return kbi_error_set(ctx, KB_ERR_PARSE, "%s:%d:%d: %s", what, jerr.line, jerr.column,
                             jerr.text);
    json_t *version = json_object_get(*out, "schemaVersion");
    if (!json_is_object(*out) || json_integer_value(version) != 2) {
        json_decref(*out);
        *out = NULL;
        return kbi_error_set(ctx, KB_ERR_PARSE, "%s: schemaVersion must be 2", what);
    }
    return 0;
}

static int parse_descriptor_array(kb_oci_descriptor **items, size_t *count, kb_ctx *ctx,
                                  json_t *arr, const char *what, const char *name)
{
    if (!json_is_array(arr))
        return bad_field(ctx, what, name);
    size_t n = json_array_size(arr);
    *items = n ? calloc(n, sizeof(**items)) : NULL;
    if (n && !*items)
        return kbi_error_oom(ctx);
    for (size_t i = 0; i < n; i++) {
        char field[64];
        snprintf(field, sizeof(field), "%s[%zu]", name, i);
        int rc = parse_descriptor(&(*items)[i], ctx, json_array_get(arr, i), what, field);
        *count = i + 1; /* so a clear frees what was parsed */
        if (rc)
            return rc;
    }
    return 0;
}

int kbi_oci_manifest_parse(kb_oci_manifest *out, kb_ctx *ctx, const char *data, size_t len,
                           const char *what)
{
    memset(out, 0, sizeof(*out));
    json_t *root;
    int rc = load_document(&root, ctx, data, len, what);
    if (rc)
        return rc;
    const char *mt = json_string_value(json_object_get(root, "mediaType"));
    if (mt && strcmp(mt, KB_MT_OCI_MANIFEST) != 0 && strcmp(mt, KB_MT_DOCKER_MANIFEST) != 0)
        rc = kbi_error_set(ctx, KB_ERR_PARSE, "%s: media type %s is not an image manifest", what,
                           mt);
    if (!rc)
        rc = parse_descriptor(&out->config, ctx, json_object_get(root, "config"), what, "config");
    if (!rc)
        rc = parse_descriptor_array(&out->layers, &out->layer_count, ctx,
                                    json_object_get(root, "layers"), what, "layers");
    json_t *subject = json_object_get(root, "subject");
    if (!rc && subject) {
        out->subject = calloc(1, sizeof(*out->subject));
        rc = out->subject ? parse_descriptor(out->subject, ctx, subject, what, "subject")
                          : kbi_error_oom(ctx);
    }
    if (!rc &&
        (replace(&out->artifact_type, json_string_value(json_object_get(root, "artifactType"))) ||
         parse_annotations(&out->annotations, json_object_get(root, "annotations"))))
        rc = kbi_error_oom(ctx);
    json_decref(root);
    if (rc)
        kbi_oci_manifest_clear(out);
    return rc;
}

int kbi_oci_index_parse(kb_oci_index *out, kb_ctx *ctx, const char *data, size_t len,
                        const char *what)
{
    memset(out, 0, sizeof(*out));
    json_t *root;
    int rc = load_document(&root, ctx, data, len, what);
    if (rc)
        return rc;
    const char *mt = json_string_value(json_object_get(root, "mediaType"));
    if (mt && strcmp(mt, KB_MT_OCI_INDEX) != 0 && strcmp(mt, KB_MT_DOCKER_LIST) != 0)
        rc = kbi_error_set(ctx, KB_ERR_PARSE, "%s: media type %s is not an image index", what, mt);
    if (!rc)
        rc = parse_descriptor_array(&out->manifests, &out->manifest_count, ctx,
                                    json_object_get(root, "manifests"), what, "manifests");
    if (!rc &&
        (replace(&out->artifact_type, json_string_value(json_object_get(root, "artifactType"))) ||
         parse_annotations(&out->annotations, json_object_get(root, "annotations"))))
        rc = kbi_error_oom(ctx);
    json_decref(root);
    if (rc)
        kbi_oci_index_clear(out);
    return rc;
}

static int append_descriptor(kb_oci_descriptor **items, size_t *count, size_t *cap,
                             const kb_oci_descriptor *d)
{
    if (kbi_array_grow((void **)items, cap, *count + 1, sizeof(**items)))
        return KB_ERR_NOMEM;
    if (kbi_oci_descriptor_copy(&(*items)[*count], d))
        return KB_ERR_NOMEM;
    (*count)++;
    return 0;
}

int kbi_oci_manifest_add_layer(kb_oci_manifest *m, const kb_oci_descriptor *d)
{
    return append_descriptor(&m->layers, &m->layer_count, &m->layers_cap, d);
}

int kbi_oci_index_add(kb_oci_index *ix, const kb_oci_descriptor *d)
{
    return append_descriptor(&ix->manifests, &ix->manifest_count, &ix->manifests_cap, d);
}

void kbi_oci_manifest_clear(kb_oci_manifest *m)
{
    free(m->artifact_type);
    kbi_oci_descriptor_clear(&m->config);
    for (size_t i = 0; i < m->layer_count; i++)
        kbi_oci_descriptor_clear(&m->layers[i]);
    free(m->layers);
    if (m->subject)
        kbi_oci_descriptor_clear(m->subject);
    free(m->subject);
    kbi_oci_annotations_clear(&m->annotations);
    memset(m, 0, sizeof(*m));
}

void kbi_oci_index_clear(kb_oci_index *ix)
{
    free(ix->artifact_type);
    for (size_t i = 0; i < ix->manifest_count; i++)
        kbi_oci_descriptor_clear(&ix->manifests[i]);
    free(ix->manifests);
    kbi_oci_annotations_clear(&ix->annotations);
    memset(ix, 0, sizeof(*ix));
}
