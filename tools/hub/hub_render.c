/* kbpkg hub render: a registry's packages, versions and targets as a static HTML site. */
#include "hub_render.h"

#include <kbpkg/info.h>
#include <kbpkg/manifest.h>
#include <kbpkg/trust.h>

#include <jansson.h>
#include <stdarg.h>
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

/* One render: the ctx and registry it reads through, and where its warnings go. */
typedef struct hub_run {
    kb_ctx *ctx;
    kb_registry *r;
    kb_event_cb event;
    void *payload;
} hub_run;

/* A KB_EVENT_WARNING about subject, the way libkbpkg reports one through a ctx. */
__attribute__((format(printf, 3, 4))) static void hub_warn(const hub_run *h, const char *subject,
                                                           const char *fmt, ...)
{
    if (!h->event)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text) {
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    kb_event ev = {KB_EVENT_WARNING, subject, text ? text : "out of memory"};
    h->event(&ev, h->payload);
    free(text);
}

int kbi_html_escape(hub_buf *out, const char *text)
{
    int rc = 0;
    for (const char *p = text ? text : ""; *p && !rc; p++) {
        switch (*p) {
        case '&':
            rc = hub_buf_puts(out, "&amp;");
            break;
        case '<':
            rc = hub_buf_puts(out, "&lt;");
            break;
        case '>':
            rc = hub_buf_puts(out, "&gt;");
            break;
        case '"':
            rc = hub_buf_puts(out, "&quot;");
            break;
        case '\'':
            rc = hub_buf_puts(out, "&#39;");
            break;
        default:
            rc = hub_buf_append(out, p, 1);
        }
    }
    return rc;
}

/* One version of a package as the hub shows it. */
typedef struct hub_version {
    char *version;
    kb_package_info *index;   /* NULL when it could not be read */
    char *error;              /* why, when index is NULL */
    kb_trust_verdict verdict; /* meaningless when unchecked */
    bool unchecked;           /* the signature check could not run (registry error) */
    char *verify_error;       /* why, when unchecked (NULL if even that was out of memory) */
    char *bench;              /* published benchmark results (JSON), NULL when unreadable */
    char *bench_error;        /* why, when bench is NULL */
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
        kb_package_info_free(p->versions[i].index);
        free(p->versions[i].error);
        free(p->versions[i].verify_error);
        kb_string_free(p->versions[i].bench);
        free(p->versions[i].bench_error);
        kb_trust_verdict_clear(&p->versions[i].verdict);
    }
    free(p->versions);
    free(p->name);
}

/* A package's tags, to look signature tags up in. */
typedef struct hub_tags {
    char **items;
    size_t len;
} hub_tags;

static bool has_signature_tag(const hub_tags *tags, const char *digest)
{
    if (!digest || strncmp(digest, "sha256:", 7) != 0)
        return false;
    char tag[80];
    snprintf(tag, sizeof(tag), "sha256-%s.sig", digest + 7);
    for (size_t i = 0; i < tags->len; i++)
        if (strcmp(tags->items[i], tag) == 0)
            return true;
    return false;
}

/* The verdict on the index's signature: a fact to show, so a bad one never fails the render.
 * No signature tag means unsigned without asking the registry again. */
static void verify_version(hub_version *v, const hub_run *h, const char *name, const hub_tags *tags)
{
    const char *digest = kb_package_info_index_digest(v->index);
    if (!has_signature_tag(tags, digest)) {
        memset(&v->verdict, 0, sizeof(v->verdict));
        v->verdict.status = KB_TRUST_UNSIGNED;
        v->verdict.detail = strdup("no signature tag"); /* NULL: the page shows no detail */
        return;
    }
    int rc = kb_trust_verify_index(&v->verdict, h->ctx, h->r, name, v->version, digest);
    if (!rc)
        return;
    v->unchecked = true; /* verdict.status may still read 0, "signed-trusted": never show it */
    v->verify_error = strdup(kb_ctx_last_error(h->ctx)->message);
    hub_warn(h, name, "%s: signature not checked: %s", v->version,
             v->verify_error ? v->verify_error : kb_strerror(rc));
    kb_ctx_clear_error(h->ctx);
}

/* The manifest as published: exports and abi of one artifact's kbpkg.json; a version without
 * artifacts simply shows none. */
static void load_manifest_summary(hub_version *v, const hub_run *h, const char *name)
{
    if (kb_package_info_read_kbpkg_json(v->index, h->r)) {
        hub_warn(h, name, "%s: %s", v->version, kb_ctx_last_error(h->ctx)->message);
        kb_ctx_clear_error(h->ctx);
    }
}

/* Fetch one version's index and resolve its entries' sizes; failures are kept as text. */
static void load_version(hub_version *v, const hub_run *h, const char *name, const hub_tags *tags)
{
    int rc = kb_package_info_fetch(&v->index, h->r, name, v->version);
    if (rc) {
        v->error = strdup(kb_ctx_last_error(h->ctx)->message);
        hub_warn(h, name, "%s: %s", v->version, v->error ? v->error : kb_strerror(rc));
        kb_ctx_clear_error(h->ctx);
        return;
    }
    verify_version(v, h, name, tags);
    load_manifest_summary(v, h, name);
    if (kb_package_bench_results(&v->bench, h->r, name, v->version,
                                 kb_package_info_index_digest(v->index))) {
        v->bench_error = strdup(kb_ctx_last_error(h->ctx)->message);
        hub_warn(h, name, "%s: benchmarks: %s", v->version, v->bench_error);
        kb_ctx_clear_error(h->ctx);
    }
}

static int load_package(hub_package *p, const hub_run *h)
{
    char **versions = NULL;
    size_t count = 0;
    hub_tags tags = {NULL, 0};
    int rc = kb_package_versions(&versions, &count, h->r, p->name);
    if (!rc)
        rc = kb_registry_list_tags(&tags.items, &tags.len, h->r, p->name);
    if (!rc && count && !(p->versions = calloc(count, sizeof(*p->versions))))
        rc = KB_ERR_NOMEM;
    for (size_t i = 0; !rc && i < count; i++) {
        hub_version *v = &p->versions[p->count++];
        v->version = versions[i];
        versions[i] = NULL;
        load_version(v, h, p->name, &tags);
    }
    kb_strings_free(versions, count);
    kb_strings_free(tags.items, tags.len);
    return rc;
}

static const char *package_summary(const hub_package *p)
{
    for (size_t i = 0; i < p->count; i++)
        if (p->versions[i].index && *kb_package_info_summary(p->versions[i].index))
            return kb_package_info_summary(p->versions[i].index);
    return "";
}

/* "org/name" -> "../" for each '/', so a page in org/ links back to the root. */
static int append_root_prefix(hub_buf *b, const char *name)
{
    int rc = 0;
    for (const char *p = name; *p && !rc; p++)
        if (*p == '/')
            rc = hub_buf_puts(b, "../");
    return rc;
}

static int page_head(hub_buf *b, const char *title, const char *root)
{
    int rc = hub_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
                             "charset=\"utf-8\">\n<meta name=\"viewport\" "
                             "content=\"width=device-width\">\n<title>");
    rc = rc ? rc : kbi_html_escape(b, title);
    rc = rc ? rc : hub_buf_printf(b, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", hub_css);
    rc = rc ? rc
            : hub_buf_printf(b, "<header><h1><a href=\"%sindex.html\">kbpkg hub</a></h1>", root);
    return rc ? rc : hub_buf_puts(b, "</header>\n<main>\n");
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
    return &sig_words[(size_t)st < sizeof(sig_words) / sizeof(sig_words[0])
                          ? st
                          : KB_TRUST_BAD_SIGNATURE];
}

static const char *sig_short(const hub_version *v)
{
    return v->unchecked ? "not checked" : words_for(v)->brief;
}

/* The sentence next to a version: who signed and what this machine makes of it. */
static int sig_sentence(hub_buf *b, const hub_version *v)
{
    if (v->unchecked)
        return hub_buf_puts(b, "signature not checked");
    const struct sig_words *w = words_for(v);
    const char *key = v->verdict.key_id;
    if (!w->before)
        return hub_buf_puts(b, w->after);
    if (!key && w == &sig_words[KB_TRUST_BAD_SIGNATURE]) /* it claims no key to name */
        return hub_buf_puts(b, w->brief);
    return hub_buf_printf(b, "%s%s%s", w->before, key ? key : "an unknown key", w->after);
}

/* <span class="sig-STATE" title="why">sentence</span>; every piece escaped (the detail can
 * quote what a signature payload claims). */
static int sig_badge(hub_buf *b, const hub_version *v)
{
    hub_buf text = HUB_BUF_INIT;
    int rc = sig_sentence(&text, v);
    rc = rc ? rc : hub_buf_printf(b, "<span class=\"sig-%s\" title=\"", sig_state(v));
    rc = rc ? rc : kbi_html_escape(b, v->unchecked ? v->verify_error : v->verdict.detail);
    rc = rc ? rc : hub_buf_puts(b, "\">");
    rc = rc ? rc : kbi_html_escape(b, text.data);
    hub_buf_free(&text);
    return rc ? rc : hub_buf_puts(b, "</span>");
}

static int target_row(hub_buf *b, size_t entry, const hub_version *v)
{
    const char *target = NULL, *build_key = NULL, *backend = NULL, *arch = NULL;
    uint64_t layer_size = 0;
    kb_package_info_target(&target, &build_key, NULL, v->index, entry);
    kb_package_info_target_detail(&backend, &arch, &layer_size, v->index, entry);
    if (!backend) /* a target id this kbpkg cannot parse */
        backend = "?", arch = "";
    char size[32];
    format_size(size, sizeof(size), layer_size);
    int rc = hub_buf_puts(b, "<tr class=\"target\"><td><code>");
    rc = rc ? rc : kbi_html_escape(b, target);
    rc = rc ? rc : hub_buf_puts(b, "</code></td><td>");
    rc = rc ? rc : kbi_html_escape(b, backend);
    rc = rc ? rc : hub_buf_puts(b, "</td><td>");
    rc = rc ? rc : kbi_html_escape(b, arch);
    rc = rc ? rc
            : hub_buf_printf(b, "</td><td data-bytes=\"%llu\">%s</td><td><code>",
                             (unsigned long long)layer_size, size);
    rc = rc ? rc : kbi_html_escape(b, build_key ? build_key : "");
    rc = rc ? rc
            : hub_buf_printf(b, "</code></td><td class=\"sig-%s\">%s</td></tr>\n", sig_state(v),
                             sig_short(v));
    return rc;
}

/* What the published manifest says of this version, only the fields that are really there:
 * the index's summary, and exports and abi from kbpkg.json. */
static int manifest_summary(hub_buf *b, const hub_version *v)
{
    const char *summary = kb_package_info_summary(v->index);
    size_t exports = kb_package_info_export_count(v->index);
    long abi = kb_package_info_abi(v->index);
    if ((!summary || !*summary) && !exports && !abi)
        return 0;
    int rc = hub_buf_puts(b, "<dl class=\"meta\">");
    if (!rc && summary && *summary) {
        rc = hub_buf_puts(b, "<dt>summary</dt><dd class=\"summary\">");
        rc = rc ? rc : kbi_html_escape(b, summary);
        rc = rc ? rc : hub_buf_puts(b, "</dd>");
    }
    if (!rc && exports)
        rc = hub_buf_puts(b, "<dt>exports</dt><dd class=\"exports\">");
    for (size_t i = 0; !rc && i < exports; i++) {
        rc = hub_buf_puts(b, i ? " <code>" : "<code>");
        rc = rc ? rc : kbi_html_escape(b, kb_package_info_export_at(v->index, i));
        rc = rc ? rc : hub_buf_puts(b, "</code>");
    }
    if (!rc && exports)
        rc = hub_buf_puts(b, "</dd>");
    if (!rc && abi)
        rc = hub_buf_printf(b, "<dt>kernel ABI</dt><dd class=\"abi\">%ld</dd>", abi);
    return rc ? rc : hub_buf_puts(b, "</dl>\n");
}

/* The typed exports' signatures (the index's dev.kbpkg.signatures), one per line. */
static int signatures_list(hub_buf *b, const hub_version *v)
{
    const char *sigs = kb_package_info_signatures(v->index);
    json_t *root = sigs ? json_loads(sigs, 0, NULL) : NULL;
    int rc = json_object_size(root) ? hub_buf_puts(b, "<ul class=\"signatures\">") : 0;
    const char *key;
    json_t *x;
    json_object_foreach(root, key, x)
    {
        char *text = NULL;
        if (rc || kb_signature_text(&text, NULL, sigs, key) != 0)
            continue; /* a malformed one is left out, not the page */
        rc = hub_buf_puts(b, "<li><code>");
        rc = rc ? rc : kbi_html_escape(b, text);
        rc = rc ? rc : hub_buf_puts(b, "</code></li>");
        kb_string_free(text);
    }
    if (!rc && json_object_size(root))
        rc = hub_buf_puts(b, "</ul>\n");
    json_decref(root);
    return rc;
}

static int version_section(hub_buf *b, const hub_version *v)
{
    int rc = hub_buf_puts(b, "<section class=\"version\" id=\"v");
    rc = rc ? rc : kbi_html_escape(b, v->version);
    rc = rc ? rc : hub_buf_puts(b, "\"><h3>");
    rc = rc ? rc : kbi_html_escape(b, v->version);
    if (!rc && !v->index) {
        rc = hub_buf_puts(b, "</h3><p class=\"error\">index unreadable: ");
        rc = rc ? rc : kbi_html_escape(b, v->error ? v->error : "unknown error");
        return rc ? rc : hub_buf_puts(b, "</p></section>\n");
    }
    rc = rc ? rc : hub_buf_puts(b, " ");
    rc = rc ? rc : sig_badge(b, v);
    rc = rc ? rc : hub_buf_puts(b, "</h3>\n");
    rc = rc ? rc : manifest_summary(b, v);
    rc = rc ? rc : signatures_list(b, v);
    rc = rc ? rc : hub_buf_puts(b, "<p>index <code>");
    rc = rc ? rc : kbi_html_escape(b, kb_package_info_index_digest(v->index));
    rc = rc ? rc
            : hub_buf_puts(b, "</code></p>\n<table><tr><th>target</th><th>backend</th>"
                              "<th>arch</th><th>artifact size</th><th>build key</th>"
                              "<th>signed</th></tr>\n");
    for (size_t i = 0; !rc && i < kb_package_info_target_count(v->index); i++)
        rc = target_row(b, i, v);
    rc = rc ? rc : hub_buf_puts(b, "</table>\n");
    rc = rc ? rc : hub_bench_section(b, v->bench, v->bench_error);
    return rc ? rc : hub_buf_puts(b, "</section>\n");
}

static int package_page(hub_buf *b, const hub_package *p)
{
    hub_buf root = HUB_BUF_INIT;
    int rc = append_root_prefix(&root, p->name);
    rc = rc ? rc : page_head(b, p->name, root.data ? root.data : "");
    rc = rc ? rc : hub_buf_puts(b, "<h2 class=\"name\">");
    rc = rc ? rc : kbi_html_escape(b, p->name);
    rc = rc ? rc : hub_buf_puts(b, "</h2>\n<p class=\"summary\">");
    rc = rc ? rc : kbi_html_escape(b, package_summary(p));
    rc = rc ? rc : hub_buf_puts(b, "</p>\n");
    for (size_t i = 0; !rc && i < p->count; i++)
        rc = version_section(b, &p->versions[i]);
    rc = rc ? rc : hub_buf_puts(b, "</main>\n</body>\n</html>\n");
    hub_buf_free(&root);
    return rc;
}

static int index_entry(hub_buf *b, const hub_package *p)
{
    int rc = hub_buf_puts(b, "<li class=\"pkg\" data-name=\"");
    rc = rc ? rc : kbi_html_escape(b, p->name);
    rc = rc ? rc : hub_buf_puts(b, "\"><a href=\"");
    rc = rc ? rc : kbi_html_escape(b, p->name);
    rc = rc ? rc : hub_buf_puts(b, ".html\">");
    rc = rc ? rc : kbi_html_escape(b, p->name);
    rc = rc ? rc : hub_buf_puts(b, "</a>");
    if (!rc && p->count) {
        rc = hub_buf_puts(b, "<span class=\"ver\">");
        rc = rc ? rc : kbi_html_escape(b, p->versions[0].version);
        rc = rc ? rc
                : hub_buf_printf(b, "</span> <small>%zu version%s</small>", p->count,
                                 p->count == 1 ? "" : "s");
    }
    rc = rc ? rc : hub_buf_puts(b, "<p class=\"summary\">");
    rc = rc ? rc : kbi_html_escape(b, package_summary(p));
    return rc ? rc : hub_buf_puts(b, "</p></li>\n");
}

static int index_page(hub_buf *b, const hub_package *pkgs, size_t count)
{
    int rc = page_head(b, "kbpkg hub", "");
    rc = rc ? rc
            : hub_buf_printf(b,
                             "<input id=\"search\" type=\"search\" placeholder=\"Search "
                             "packages by name\" autofocus> <span id=\"count\">%zu shown</span>\n"
                             "<ul id=\"packages\">\n",
                             count);
    for (size_t i = 0; !rc && i < count; i++)
        rc = index_entry(b, &pkgs[i]);
    rc =
        rc ? rc
           : hub_buf_printf(b, "</ul>\n</main>\n<script>\n%s</script>\n</body>\n</html>\n", hub_js);
    return rc;
}

static int write_page(char **why, const char *out_dir, const char *rel, const hub_buf *b)
{
    hub_buf path = HUB_BUF_INIT;
    if (hub_buf_printf(&path, "%s/%s", out_dir, rel))
        return KB_ERR_NOMEM;
    char *slash = strrchr(path.data, '/');
    *slash = '\0';
    int rc = hub_mkdir_p(why, path.data);
    *slash = '/';
    if (!rc)
        rc = hub_write_file_atomic(why, path.data, b->data, b->len);
    hub_buf_free(&path);
    return rc;
}

static int render_all(char **why, const char *out_dir, const hub_package *pkgs, size_t count)
{
    int rc = hub_mkdir_p(why, out_dir);
    for (size_t i = 0; !rc && i < count; i++) {
        hub_buf page = HUB_BUF_INIT, rel = HUB_BUF_INIT;
        rc = hub_buf_printf(&rel, "%s.html", pkgs[i].name);
        rc = rc ? rc : package_page(&page, &pkgs[i]);
        rc = rc ? rc : write_page(why, out_dir, rel.data, &page);
        hub_buf_free(&rel);
        hub_buf_free(&page);
    }
    hub_buf index = HUB_BUF_INIT;
    rc = rc ? rc : index_page(&index, pkgs, count);
    rc = rc ? rc : write_page(why, out_dir, "index.html", &index);
    hub_buf_free(&index);
    return rc;
}

/* A failure of the hub's own: *why says it (NULL only when out of memory). */
static int hub_fail(char **why, int code, const char *message)
{
    *why = strdup(message);
    return code;
}

/* The registry to render: the one given, or the ctx's "registry" setting. */
static const char *registry_ref(kb_ctx *ctx, const char *registry)
{
    const char *ref = registry;
    if (!ref && kb_ctx_get(&ref, ctx, "registry") != 0) {
        kb_ctx_clear_error(ctx);
        ref = NULL;
    }
    return ref && *ref ? ref : NULL;
}

int kbi_hub_render(size_t *packages_out, char **why, kb_ctx *ctx, const char *registry,
                   const char *out_dir, kb_event_cb event, void *payload)
{
    if (packages_out)
        *packages_out = 0;
    char *ignored = NULL;
    why = why ? why : &ignored;
    *why = NULL;
    if (!ctx || !out_dir)
        return hub_fail(why, KB_ERR_INVALID, "kbi_hub_render: NULL argument");
    const char *ref = registry_ref(ctx, registry);
    if (!ref)
        return hub_fail(why, KB_ERR_CONFIG,
                        "no registry to render: pass one or set the registry setting");
    hub_run h = {ctx, NULL, event, payload};
    int rc = kb_trust_registry_open(&h.r, ctx, ref); /* a `kbpkg login` counts here too */
    char **repos = NULL;
    size_t nrepos = 0;
    if (!rc) /* a layout folder that is not there would list as empty: say so instead */
        rc = kb_registry_check(h.r);
    if (!rc)
        rc = kb_registry_list_repositories(&repos, &nrepos, h.r);
    hub_package *pkgs = NULL;
    size_t count = 0;
    if (!rc && nrepos && !(pkgs = calloc(nrepos, sizeof(*pkgs))))
        rc = KB_ERR_NOMEM;
    for (size_t i = 0; !rc && i < nrepos; i++) {
        hub_package *p = &pkgs[count++];
        p->name = repos[i];
        repos[i] = NULL;
        rc = load_package(p, &h);
    }
    if (!rc)
        rc = render_all(why, out_dir, pkgs, count);
    if (!rc && packages_out)
        *packages_out = count;
    for (size_t i = 0; i < count; i++)
        hub_package_free(&pkgs[i]);
    free(pkgs);
    kb_strings_free(repos, nrepos);
    kb_registry_free(h.r);
    free(ignored);
    return rc;
}
