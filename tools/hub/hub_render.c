/* kbpkg hub render: a registry's packages, versions and targets as a static HTML site. */
#include "tools/hub/hub_render.h"
#include "model/target.h"
#include "kbpkg/trust.h"
#include "registry/pkgindex.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shared by every page: readable without any network (no CDN, no web fonts). */
static const char hub_css[] =
    "body{font-family:system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}\n"
    "header{background:#1d3557;color:#fff;padding:18px 32px}\n"
    "header h1{margin:0;font-size:26px}header a{color:#fff;text-decoration:none}\n"
    "main{padding:20px 32px;max-width:1100px}\n"
    "input#search{font-size:18px;padding:8px 12px;width:420px;border:2px solid #457b9d;"
    "border-radius:6px}\n"
    "ul#packages{list-style:none;padding:0}\n"
    "li.pkg{background:#fff;border-left:6px solid #e63946;margin:10px 0;padding:10px 16px;"
    "border-radius:4px}\n"
    "li.pkg a{font-size:20px;font-weight:600;color:#1d3557}\n"
    ".ver{background:#a8dadc;border-radius:4px;padding:2px 8px;margin-left:8px}\n"
    "table{border-collapse:collapse;background:#fff;margin:8px 0 24px}\n"
    "th,td{border:1px solid #ccd;padding:6px 10px;text-align:left}th{background:#e9eef5}\n"
    ".sig-signed-trusted{color:#2a9d8f;font-weight:600}\n"
    ".sig-unsigned,.sig-untrusted-key{color:#b5651d;font-weight:600}\n"
    ".sig-bad-signature,.sig-revoked-key,.sig-expired,.sig-mismatch,.sig-unknown-type,"
    ".sig-unchecked{color:#c1121f;font-weight:700}\n"
    "dl.meta{display:grid;grid-template-columns:max-content auto;gap:4px 12px;margin:6px 0}\n"
    "dl.meta dt{font-weight:600}dl.meta dd{margin:0}\n"
    ".error{color:#c1121f}code{font-size:13px}\n";

/* Filters the package list by name; ?q=text pre-fills it so a link can share a search. */
static const char hub_js[] =
    "(function(){var box=document.getElementById('search');\n"
    "function filter(){var q=box.value.trim().toLowerCase();var n=0;\n"
    "document.querySelectorAll('li.pkg').forEach(function(li){\n"
    "var hit=li.getAttribute('data-name').indexOf(q)>=0;\n"
    "if(hit){li.removeAttribute('hidden');n++;}else{li.setAttribute('hidden','');}});\n"
    "document.getElementById('count').textContent=n+' shown';}\n"
    "box.addEventListener('input',filter);\n"
    "var q=new URLSearchParams(location.search).get('q');if(q!==null){box.value=q;}\n"
    "filter();})();\n";

int kb_html_escape(kb_buf *out, const char *text)
{
    int rc = 0;
    for (const char *p = text ? text : ""; *p && !rc; p++) {
        switch (*p) {
        case '&':
            rc = kb_buf_puts(out, "&amp;");
            break;
        case '<':
            rc = kb_buf_puts(out, "&lt;");
            break;
        case '>':
            rc = kb_buf_puts(out, "&gt;");
            break;
        case '"':
            rc = kb_buf_puts(out, "&quot;");
            break;
        case '\'':
            rc = kb_buf_puts(out, "&#39;");
            break;
        default:
            rc = kb_buf_append(out, p, 1);
        }
    }
    return rc;
}

/* One version of a package as the hub shows it. */
typedef struct hub_version {
    char *version;
    kb_pkg_index *index;      /* NULL when it could not be read */
    char *error;              /* why, when index is NULL */
    kb_trust_verdict verdict; /* meaningless when unchecked */
    bool unchecked;           /* the signature check could not run (registry error) */
    char *verify_error;       /* why, when unchecked (NULL if even that was out of memory) */
    /* From one artifact's kbpkg.json (config blob): what the index itself does not carry. */
    kb_strv exports;
    long abi; /* 0 when no kbpkg.json says */
} hub_version;

typedef struct hub_package {
    char *name;
    hub_version *versions; /* highest first */
    size_t count;
} hub_package;

static void hub_package_free(hub_package *p)
{
    for (size_t i = 0; i < p->count; i++) {
        free(p->versions[i].version);
        kb_pkg_index_free(p->versions[i].index);
        free(p->versions[i].error);
        free(p->versions[i].verify_error);
        kb_strv_free(&p->versions[i].exports);
    }
    free(p->versions);
    free(p->name);
}

static bool has_signature_tag(const kb_strv *tags, const char *digest)
{
    const char *hex = digest ? kb_digest_hex(digest) : NULL;
    if (!hex)
        return false;
    char tag[80];
    snprintf(tag, sizeof(tag), "sha256-%s.sig", hex);
    return kb_strv_contains(tags, tag);
}

/* The verdict on the index's signature: a fact to show, so a bad one never fails the render.
 * No signature tag means unsigned without asking the registry again. */
static void verify_version(hub_version *v, kb_registry *r, const char *name, const kb_strv *tags)
{
    if (!has_signature_tag(tags, v->index->digest)) {
        memset(&v->verdict, 0, sizeof(v->verdict));
        v->verdict.status = KB_TRUST_UNSIGNED;
        snprintf(v->verdict.detail, sizeof(v->verdict.detail), "no signature tag");
        return;
    }
    int rc = kb_trust_verify_index(r->ctx, r, name, v->version, v->index->digest, &v->verdict);
    if (!rc)
        return;
    v->unchecked = true; /* verdict.status may still read 0, "signed-trusted": never show it */
    v->verify_error = kb_strdup(kb_ctx_last_error(r->ctx)->message);
    kb_event_emit(r->ctx, KB_EVENT_WARNING, name, "%s: signature not checked: %s", v->version,
                  v->verify_error ? v->verify_error : kb_strerror(rc));
    kb_ctx_clear_error(r->ctx);
}

/* exports and abi from a kbpkg.json; anything else in it is per target, not per version. */
static int read_kbpkg_json(hub_version *v, kb_ctx *ctx, const kb_buf *json)
{
    json_t *root = json_loadb(json->data ? json->data : "", json->len, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return kb_error_set(ctx, KB_ERR_PARSE, "kbpkg.json is not a JSON object");
    }
    json_t *abi = json_object_get(root, "abi"), *x;
    if (json_is_integer(abi))
        v->abi = (long)json_integer_value(abi);
    size_t i;
    int rc = 0;
    json_array_foreach(json_object_get(root, "exports"), i, x)
    {
        if (!rc && json_is_string(x))
            rc = kb_strv_push(&v->exports, json_string_value(x)) ? kb_error_oom(ctx) : 0;
    }
    json_decref(root);
    return rc;
}

/* The manifest as published: one artifact's config blob (kbpkg.json, at most 1 MiB, as
 * kb_pkg_entry_resolve already checked). The source's config has no exports, so it is skipped;
 * a version without artifacts simply shows none. */
static void load_manifest_summary(hub_version *v, kb_registry *r, const char *name)
{
    const kb_pkg_entry *e = NULL;
    for (size_t i = 0; !e && i < v->index->count; i++)
        if (!v->index->entries[i].is_source && v->index->entries[i].config_digest &&
            v->index->entries[i].config_size)
            e = &v->index->entries[i];
    if (!e)
        return;
    kb_buf json = KB_BUF_INIT;
    int rc = kb_registry_blob_get_mem(&json, r, name, e->config_digest, KB_PKG_CONFIG_SIZE_MAX);
    if (!rc)
        rc = read_kbpkg_json(v, r->ctx, &json);
    if (rc) {
        kb_event_emit(r->ctx, KB_EVENT_WARNING, name, "%s: kbpkg.json %s of %s: %s", v->version,
                      e->config_digest, e->target, kb_ctx_last_error(r->ctx)->message);
        kb_ctx_clear_error(r->ctx);
        kb_strv_free(&v->exports); /* show nothing rather than half of it */
        v->abi = 0;
    }
    kb_buf_free(&json);
}

/* Fetch one version's index and resolve its entries' sizes; failures are kept as text. */
static void load_version(hub_version *v, kb_registry *r, const char *name, const kb_strv *tags)
{
    int rc = kb_pkg_index_fetch(&v->index, r, name, v->version, NULL);
    for (size_t i = 0; !rc && i < v->index->count; i++)
        rc = kb_pkg_entry_resolve(&v->index->entries[i], r, name);
    if (rc) {
        v->error = kb_strdup(kb_ctx_last_error(r->ctx)->message);
        kb_event_emit(r->ctx, KB_EVENT_WARNING, name, "%s: %s", v->version,
                      v->error ? v->error : kb_strerror(rc));
        kb_pkg_index_free(v->index);
        v->index = NULL;
        kb_ctx_clear_error(r->ctx);
        return;
    }
    verify_version(v, r, name, tags);
    load_manifest_summary(v, r, name);
}

static int load_package(hub_package *p, kb_registry *r)
{
    kb_strv versions = KB_STRV_INIT, tags = KB_STRV_INIT;
    int rc = kb_pkg_versions(&versions, r, p->name);
    if (!rc)
        rc = kb_registry_tags(&tags, r, p->name);
    if (!rc && versions.len) {
        p->versions = calloc(versions.len, sizeof(*p->versions));
        if (!p->versions)
            rc = kb_error_oom(r->ctx);
    }
    for (size_t i = 0; !rc && i < versions.len; i++) {
        hub_version *v = &p->versions[p->count++];
        v->version = versions.items[i];
        versions.items[i] = NULL;
        load_version(v, r, p->name, &tags);
    }
    kb_strv_free(&versions);
    kb_strv_free(&tags);
    return rc;
}

static const char *package_summary(const hub_package *p)
{
    for (size_t i = 0; i < p->count; i++)
        if (p->versions[i].index && p->versions[i].index->summary)
            return p->versions[i].index->summary;
    return "";
}

/* "org/name" -> "../" for each '/', so a page in org/ links back to the root. */
static int append_root_prefix(kb_buf *b, const char *name)
{
    int rc = 0;
    for (const char *p = name; *p && !rc; p++)
        if (*p == '/')
            rc = kb_buf_puts(b, "../");
    return rc;
}

static int page_head(kb_buf *b, const char *title, const char *root)
{
    int rc = kb_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
                            "charset=\"utf-8\">\n<meta name=\"viewport\" "
                            "content=\"width=device-width\">\n<title>");
    rc = rc ? rc : kb_html_escape(b, title);
    rc = rc ? rc : kb_buf_printf(b, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", hub_css);
    rc =
        rc ? rc : kb_buf_printf(b, "<header><h1><a href=\"%sindex.html\">kbpkg hub</a></h1>", root);
    return rc ? rc : kb_buf_puts(b, "</header>\n<main>\n");
}

static void format_size(char *buf, size_t size, uint64_t bytes)
{
    if (bytes >= 1024 * 1024)
        snprintf(buf, size, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
    else if (bytes >= 1024)
        snprintf(buf, size, "%.1f KiB", (double)bytes / 1024.0);
    else
        snprintf(buf, size, "%llu B", (unsigned long long)bytes);
}

/* The CSS class of a version's signature state: sig-<kb_trust_status_name>, or sig-unchecked. */
static const char *sig_state(const hub_version *v)
{
    return v->unchecked ? "unchecked" : kb_trust_status_name(v->verdict.status);
}

/* How the hub words each verdict: a few words for a target row (the index signature covers
 * every target it lists), and the sentence by the version: before, the key id, after (before
 * NULL: after alone, no key named). */
static const struct sig_words {
    const char *brief, *before, *after;
} sig_words[] = {
    [KB_TRUST_SIGNED_TRUSTED] = {"verified", "signed by ", ", verified"},
    [KB_TRUST_UNSIGNED] = {"no", NULL, "unsigned"},
    [KB_TRUST_UNTRUSTED_KEY] = {"key not trusted", "signed by ", ", key not trusted here"},
    [KB_TRUST_REVOKED_KEY] = {"key revoked", "signed by ", ", key revoked"},
    [KB_TRUST_BAD_SIGNATURE] = {"bad signature", "bad signature (claims key ", ")"},
    [KB_TRUST_EXPIRED] = {"expired", "signed by ", ", expired"},
    [KB_TRUST_MISMATCH] = {"mismatch", "signed by ", " for another package, version or index"},
    [KB_TRUST_UNKNOWN_TYPE] = {"unrecognised", NULL, "unrecognised signature"},
};

/* A status this build does not know reads as a bad signature. */
static const struct sig_words *words_for(const hub_version *v)
{
    kb_trust_status st = v->verdict.status;
    return &sig_words[(unsigned)st < KB_ARRAY_LEN(sig_words) ? st : KB_TRUST_BAD_SIGNATURE];
}

static const char *sig_short(const hub_version *v)
{
    return v->unchecked ? "not checked" : words_for(v)->brief;
}

/* The sentence next to a version: who signed and what this machine makes of it. */
static int sig_sentence(kb_buf *b, const hub_version *v)
{
    if (v->unchecked)
        return kb_buf_puts(b, "signature not checked");
    const struct sig_words *w = words_for(v);
    const char *key = v->verdict.key_id[0] ? v->verdict.key_id : NULL;
    if (!w->before)
        return kb_buf_puts(b, w->after);
    if (!key && w == &sig_words[KB_TRUST_BAD_SIGNATURE]) /* it claims no key to name */
        return kb_buf_puts(b, w->brief);
    return kb_buf_printf(b, "%s%s%s", w->before, key ? key : "an unknown key", w->after);
}

/* <span class="sig-STATE" title="why">sentence</span>; every piece escaped (the detail can
 * quote what a signature payload claims). */
static int sig_badge(kb_buf *b, const hub_version *v)
{
    kb_buf text = KB_BUF_INIT;
    int rc = sig_sentence(&text, v);
    rc = rc ? rc : kb_buf_printf(b, "<span class=\"sig-%s\" title=\"", sig_state(v));
    rc = rc ? rc : kb_html_escape(b, v->unchecked ? v->verify_error : v->verdict.detail);
    rc = rc ? rc : kb_buf_puts(b, "\">");
    rc = rc ? rc : kb_html_escape(b, text.data);
    kb_buf_free(&text);
    return rc ? rc : kb_buf_puts(b, "</span>");
}

static int target_row(kb_buf *b, const kb_pkg_entry *e, const hub_version *v)
{
    kb_target t;
    const char *backend = "source", *arch = "";
    if (!e->is_source && kb_target_parse(NULL, &t, e->target) == 0) {
        backend = kb_backend_name(t.backend);
        arch = t.arch;
    } else if (!e->is_source) {
        backend = "?";
    }
    char size[32];
    format_size(size, sizeof(size), e->layer_size);
    int rc = kb_buf_puts(b, "<tr class=\"target\"><td><code>");
    rc = rc ? rc : kb_html_escape(b, e->target);
    rc = rc ? rc : kb_buf_puts(b, "</code></td><td>");
    rc = rc ? rc : kb_html_escape(b, backend);
    rc = rc ? rc : kb_buf_puts(b, "</td><td>");
    rc = rc ? rc : kb_html_escape(b, arch);
    rc = rc ? rc
            : kb_buf_printf(b, "</td><td data-bytes=\"%llu\">%s</td><td><code>",
                            (unsigned long long)e->layer_size, size);
    rc = rc ? rc : kb_html_escape(b, e->build_key ? e->build_key : "");
    rc = rc ? rc
            : kb_buf_printf(b, "</code></td><td class=\"sig-%s\">%s</td></tr>\n", sig_state(v),
                            sig_short(v));
    return rc;
}

/* What the published manifest says of this version, only the fields that are really there:
 * the index's summary, and exports and abi from kbpkg.json. */
static int manifest_summary(kb_buf *b, const hub_version *v)
{
    const char *summary = v->index->summary;
    if ((!summary || !*summary) && !v->exports.len && !v->abi)
        return 0;
    int rc = kb_buf_puts(b, "<dl class=\"meta\">");
    if (!rc && summary && *summary) {
        rc = kb_buf_puts(b, "<dt>summary</dt><dd class=\"summary\">");
        rc = rc ? rc : kb_html_escape(b, summary);
        rc = rc ? rc : kb_buf_puts(b, "</dd>");
    }
    if (!rc && v->exports.len)
        rc = kb_buf_puts(b, "<dt>exports</dt><dd class=\"exports\">");
    for (size_t i = 0; !rc && i < v->exports.len; i++) {
        rc = kb_buf_puts(b, i ? " <code>" : "<code>");
        rc = rc ? rc : kb_html_escape(b, v->exports.items[i]);
        rc = rc ? rc : kb_buf_puts(b, "</code>");
    }
    if (!rc && v->exports.len)
        rc = kb_buf_puts(b, "</dd>");
    if (!rc && v->abi)
        rc = kb_buf_printf(b, "<dt>kernel ABI</dt><dd class=\"abi\">%ld</dd>", v->abi);
    return rc ? rc : kb_buf_puts(b, "</dl>\n");
}

static int version_section(kb_buf *b, const hub_version *v)
{
    int rc = kb_buf_puts(b, "<section class=\"version\" id=\"v");
    rc = rc ? rc : kb_html_escape(b, v->version);
    rc = rc ? rc : kb_buf_puts(b, "\"><h3>");
    rc = rc ? rc : kb_html_escape(b, v->version);
    if (!rc && !v->index) {
        rc = kb_buf_puts(b, "</h3><p class=\"error\">index unreadable: ");
        rc = rc ? rc : kb_html_escape(b, v->error ? v->error : "unknown error");
        return rc ? rc : kb_buf_puts(b, "</p></section>\n");
    }
    rc = rc ? rc : kb_buf_puts(b, " ");
    rc = rc ? rc : sig_badge(b, v);
    rc = rc ? rc : kb_buf_puts(b, "</h3>\n");
    rc = rc ? rc : manifest_summary(b, v);
    rc = rc ? rc : kb_buf_puts(b, "<p>index <code>");
    rc = rc ? rc : kb_html_escape(b, v->index->digest);
    rc = rc ? rc
            : kb_buf_puts(b, "</code></p>\n<table><tr><th>target</th><th>backend</th>"
                             "<th>arch</th><th>artifact size</th><th>build key</th>"
                             "<th>signed</th></tr>\n");
    for (size_t i = 0; !rc && i < v->index->count; i++)
        rc = target_row(b, &v->index->entries[i], v);
    return rc ? rc : kb_buf_puts(b, "</table>\n</section>\n");
}

static int package_page(kb_buf *b, kb_ctx *ctx, const hub_package *p)
{
    kb_buf root = KB_BUF_INIT;
    int rc = append_root_prefix(&root, p->name);
    rc = rc ? rc : page_head(b, p->name, root.data ? root.data : "");
    rc = rc ? rc : kb_buf_puts(b, "<h2 class=\"name\">");
    rc = rc ? rc : kb_html_escape(b, p->name);
    rc = rc ? rc : kb_buf_puts(b, "</h2>\n<p class=\"summary\">");
    rc = rc ? rc : kb_html_escape(b, package_summary(p));
    rc = rc ? rc : kb_buf_puts(b, "</p>\n");
    for (size_t i = 0; !rc && i < p->count; i++)
        rc = version_section(b, &p->versions[i]);
    rc = rc ? rc : kb_buf_puts(b, "</main>\n</body>\n</html>\n");
    kb_buf_free(&root);
    return rc ? kb_error_oom(ctx) : 0;
}

static int index_entry(kb_buf *b, const hub_package *p)
{
    int rc = kb_buf_puts(b, "<li class=\"pkg\" data-name=\"");
    rc = rc ? rc : kb_html_escape(b, p->name);
    rc = rc ? rc : kb_buf_puts(b, "\"><a href=\"");
    rc = rc ? rc : kb_html_escape(b, p->name);
    rc = rc ? rc : kb_buf_puts(b, ".html\">");
    rc = rc ? rc : kb_html_escape(b, p->name);
    rc = rc ? rc : kb_buf_puts(b, "</a>");
    if (!rc && p->count) {
        rc = kb_buf_puts(b, "<span class=\"ver\">");
        rc = rc ? rc : kb_html_escape(b, p->versions[0].version);
        rc = rc ? rc
                : kb_buf_printf(b, "</span> <small>%zu version%s</small>", p->count,
                                p->count == 1 ? "" : "s");
    }
    rc = rc ? rc : kb_buf_puts(b, "<p class=\"summary\">");
    rc = rc ? rc : kb_html_escape(b, package_summary(p));
    return rc ? rc : kb_buf_puts(b, "</p></li>\n");
}

static int index_page(kb_buf *b, kb_ctx *ctx, const hub_package *pkgs, size_t count)
{
    int rc = page_head(b, "kbpkg hub", "");
    rc = rc ? rc
            : kb_buf_printf(b,
                            "<input id=\"search\" type=\"search\" placeholder=\"Search "
                            "packages by name\" autofocus> <span id=\"count\">%zu shown</span>\n"
                            "<ul id=\"packages\">\n",
                            count);
    for (size_t i = 0; !rc && i < count; i++)
        rc = index_entry(b, &pkgs[i]);
    rc = rc ? rc
            : kb_buf_printf(b, "</ul>\n</main>\n<script>\n%s</script>\n</body>\n</html>\n", hub_js);
    return rc ? kb_error_oom(ctx) : 0;
}

static int write_page(kb_ctx *ctx, const char *out_dir, const char *rel, const kb_buf *b)
{
    char *path = kb_asprintf("%s/%s", out_dir, rel);
    if (!path)
        return kb_error_oom(ctx);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    int rc = kb_mkdir_p(ctx, path, 0755);
    *slash = '/';
    if (!rc)
        rc = kb_write_file_atomic(ctx, path, b->data, b->len, 0644);
    free(path);
    return rc;
}

static int render_all(kb_ctx *ctx, const char *out_dir, const hub_package *pkgs, size_t count)
{
    int rc = kb_mkdir_p(ctx, out_dir, 0755);
    for (size_t i = 0; !rc && i < count; i++) {
        kb_buf page = KB_BUF_INIT;
        char *rel = kb_asprintf("%s.html", pkgs[i].name);
        rc = rel ? package_page(&page, ctx, &pkgs[i]) : kb_error_oom(ctx);
        rc = rc ? rc : write_page(ctx, out_dir, rel, &page);
        free(rel);
        kb_buf_free(&page);
    }
    kb_buf index = KB_BUF_INIT;
    rc = rc ? rc : index_page(&index, ctx, pkgs, count);
    rc = rc ? rc : write_page(ctx, out_dir, "index.html", &index);
    kb_buf_free(&index);
    return rc;
}

KB_EXTERN int kb_hub_render(size_t *packages_out, kb_ctx *ctx, const char *registry,
                            const char *out_dir)
{
    if (packages_out)
        *packages_out = 0;
    if (!ctx || !out_dir)
        return ctx ? kb_error_set(ctx, KB_ERR_INVALID, "kb_hub_render: NULL argument")
                   : KB_ERR_INVALID;
    const char *ref = registry ? registry : kb_config_str(ctx, "registry");
    if (!ref || !*ref)
        return kb_error_set(ctx, KB_ERR_CONFIG,
                            "no registry to render: pass one or set the registry setting");
    kb_registry *r = NULL;
    int rc = kb_trust_registry_open(&r, ctx, ref); /* a `kbpkg login` counts here too */
    kb_strv repos = KB_STRV_INIT;
    if (!rc) /* a layout folder that is not there would list as empty: say so instead */
        rc = kb_registry_check(r);
    if (!rc)
        rc = kb_registry_catalog(&repos, r);
    hub_package *pkgs = NULL;
    size_t count = 0;
    if (!rc && repos.len && !(pkgs = calloc(repos.len, sizeof(*pkgs))))
        rc = kb_error_oom(ctx);
    for (size_t i = 0; !rc && i < repos.len; i++) {
        hub_package *p = &pkgs[count++];
        p->name = repos.items[i];
        repos.items[i] = NULL;
        rc = load_package(p, r);
    }
    if (!rc)
        rc = render_all(ctx, out_dir, pkgs, count);
    if (!rc && packages_out)
        *packages_out = count;
    for (size_t i = 0; i < count; i++)
        hub_package_free(&pkgs[i]);
    free(pkgs);
    kb_strv_free(&repos);
    kb_registry_free(r);
    return rc;
}
