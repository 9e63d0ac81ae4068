/* kbpkg hub render: the static site from a layout registry (pages, escaping, signatures) and
 * what headless chromium makes of it (a real screenshot, the search filter's DOM). */
#include "../unit/trust_helpers.h"
#include "kbtest.h"
#include "tools/hub/hub_render.h"
#include "registry/pkgindex.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define CHROMIUM "/usr/bin/chromium"

typedef struct hub_fixture {
    char *dir;
    char *hub; /* the layout registry */
    char *out; /* the rendered site */
    char *signed_digest;
} hub_fixture;

/* Two targets of name@version whose kbpkg.json (config blob) is config. */
static void publish_with_config(kb_registry *reg, const char *dir, const char *name,
                                const char *version, const char *summary, const char *config,
                                char **digest_out)
{
    char *cuda = kbi_asprintf("%s/%s-cuda.tar.zst", dir, version);
    char *cpu = kbi_asprintf("%s/%s-cpu.tar.zst", dir, version);
    kbt_write(cuda, "cuda archive bytes, longer than the cpu one");
    kbt_write(cpu, "cpu archive");
    kb_publish_item items[] = {
        {cuda, "cuda13-sm_90-x86_64-linux", "buildkey-sm90", config},
        {cpu, "cpu-x86_64_v2-x86_64-linux", "buildkey-cpu", config},
    };
    cr_assert_eq(kbi_pkg_publish(reg, name, version, summary, items, 2, false, NULL, digest_out), 0,
                 "%s", kb_ctx_last_error(reg->ctx)->message);
    free(cuda);
    free(cpu);
}

static void publish(kb_registry *reg, const char *dir, const char *name, const char *version,
                    const char *summary, char **digest_out)
{
    publish_with_config(reg, dir, name, version, summary, "{}", digest_out);
}

/* radeonflow/gemm 1.0.0 (signed) and 1.1.0, plus a package whose summary is an attack. */
static hub_fixture setup(void)
{
    hub_fixture f = {kbt_mkdtemp(), NULL, NULL, NULL};
    f.hub = kbi_asprintf("%s/hub", f.dir);
    f.out = kbi_asprintf("%s/site", f.dir);
    kb_ctx *ctx = kbt_ctx();
    kb_registry *reg = NULL;
    cr_assert_eq(kb_registry_open(&reg, ctx, f.hub), 0);
    publish(reg, f.dir, "radeonflow/gemm", "1.0.0", "Tiled GEMM & friends", &f.signed_digest);
    publish(reg, f.dir, "radeonflow/gemm", "1.1.0", "Tiled GEMM & friends", NULL);
    publish(reg, f.dir, "evil/xss", "0.1.0", "<script>alert('x')</script>", NULL);
    char *sig_tag = kbi_asprintf("sha256-%s.sig", kbi_digest_hex(f.signed_digest));
    const char *sig = "{\"schemaVersion\":2,\"mediaType\":\"application/"
                      "vnd.oci.image.manifest.v1+json\",\"config\":{\"mediaType\":\"application/"
                      "vnd.oci.empty.v1+json\",\"digest\":\"sha256:"
                      "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a\",\"size\":"
                      "2},\"layers\":[]}";
    cr_assert_eq(kbi_registry_blob_put_mem(NULL, reg, "radeonflow/gemm", "{}", 2), 0);
    cr_assert_eq(kbi_registry_manifest_put(NULL, reg, "radeonflow/gemm", sig_tag,
                                           KB_MT_OCI_MANIFEST, sig, strlen(sig)),
                 0, "%s", kb_ctx_last_error(ctx)->message);
    free(sig_tag);
    kb_registry_free(reg);
    kb_ctx_free(ctx);
    return f;
}

static void teardown(hub_fixture *f)
{
    kbt_rmtree(f->dir);
    free(f->dir);
    free(f->hub);
    free(f->out);
    free(f->signed_digest);
}

static char *slurp(const char *path)
{
    kb_buf b = KB_BUF_INIT;
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kbi_read_file(ctx, path, &b), 0, "cannot read %s", path);
    kb_ctx_free(ctx);
    return kbi_buf_detach(&b);
}

static void render(hub_fixture *f)
{
    const char *args[] = {"--registry", f->hub, "hub", "render", "--out", f->out, NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_assert_eq(r.exit_code, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "2 package pages") != NULL, "stdout: %s", r.out);
    kbt_run_free(&r);
}

Test(hub, renders_index_and_package_pages)
{
    hub_fixture f = setup();
    render(&f);
    char *path = kbi_asprintf("%s/index.html", f.out);
    char *index = slurp(path);
    cr_expect(strstr(index, "data-name=\"radeonflow/gemm\"") != NULL);
    cr_expect(strstr(index, "href=\"radeonflow/gemm.html\"") != NULL);
    cr_expect(strstr(index, "<span class=\"ver\">1.1.0</span>") != NULL, "latest first");
    cr_expect(strstr(index, "Tiled GEMM &amp; friends") != NULL);
    cr_expect(strstr(index, "<input id=\"search\"") != NULL);
    cr_expect(strstr(index, "http") == NULL, "no remote resources");
    free(path);
    path = kbi_asprintf("%s/radeonflow/gemm.html", f.out);
    char *page = slurp(path);
    char *v11 = strstr(page, "id=\"v1.1.0\""), *v10 = strstr(page, "id=\"v1.0.0\"");
    cr_assert(v11 && v10 && v11 < v10, "versions highest first");
    cr_expect(strstr(page, "<td><code>cuda13-sm_90-x86_64-linux</code></td><td>cuda</td>"
                           "<td>sm_90</td><td data-bytes=\"43\">43 B</td>"
                           "<td><code>buildkey-sm90</code></td>") != NULL,
              "%s", page);
    cr_expect(strstr(page, "<td>cpu</td><td>x86_64_v2</td><td data-bytes=\"11\">") != NULL);
    /* 1.0.0 has a sha256-<hex>.sig tag for its index digest, but what it tags is no kbpkg
     * signature: a tag alone does not make a version signed. 1.1.0 has none. */
    cr_expect(strstr(v10, "<span class=\"sig-unknown-type\"") != NULL, "%s", v10);
    cr_expect(strstr(v10, ">unrecognised signature</span>") != NULL);
    cr_expect(
        strstr(v11, "<span class=\"sig-unsigned\" title=\"no signature tag\">unsigned</span>") !=
            NULL,
        "%s", v11);
    cr_expect(strstr(v11, "<td class=\"sig-unsigned\">no</td>") != NULL);
    cr_expect(strstr(v10, f.signed_digest) != NULL);
    cr_expect(strstr(page, "href=\"../index.html\"") != NULL);
    free(page);
    free(path);
    free(index);
    teardown(&f);
}

Test(hub, escapes_registry_strings)
{
    hub_fixture f = setup();
    render(&f);
    char *path = kbi_asprintf("%s/evil/xss.html", f.out);
    char *page = slurp(path);
    cr_expect(strstr(page, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;") != NULL, "%s", page);
    cr_expect(strstr(page, "<script>") == NULL, "a package page has no script at all");
    free(path);
    path = kbi_asprintf("%s/index.html", f.out);
    char *index = slurp(path);
    char *first = strstr(index, "<script>");
    cr_assert_not_null(first);
    cr_expect(strstr(first + 1, "<script>") == NULL, "only the filter script: %s", index);
    cr_expect(strstr(index, "alert('x')") == NULL);
    free(index);
    free(page);
    free(path);
    teardown(&f);
}

Test(hub, html_escape_every_special_character)
{
    hub_buf b = HUB_BUF_INIT;
    cr_assert_eq(kbi_html_escape(&b, "a<b>&\"c'd"), 0);
    cr_expect_str_eq(b.data, "a&lt;b&gt;&amp;&quot;c&#39;d");
    hub_buf_free(&b);
}

Test(hub, missing_registry_and_bad_usage)
{
    char *dir = kbt_mkdtemp();
    char *missing = kbi_asprintf("%s/nowhere", dir);
    char *out = kbi_asprintf("%s/site", dir);
    const char *args[] = {"--registry", missing, "hub", "render", "--out", out, NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_neq(r.exit_code, 0);
    cr_expect(strstr(r.err, "nowhere") != NULL, "names the registry: %s", r.err);
    cr_expect_not(kbi_path_exists(out), "nothing written for a registry that is not there");
    kbt_run_free(&r);
    const char *no_out[] = {"hub", "render", NULL};
    r = kbt_kbpkg(NULL, no_out);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "render needs --out DIR") != NULL, "%s", r.err);
    kbt_run_free(&r);
    const char *bad[] = {"hub", "publish", NULL};
    r = kbt_kbpkg(NULL, bad);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "unknown hub subcommand 'publish'") != NULL, "%s", r.err);
    kbt_run_free(&r);
    kbt_rmtree(dir);
    free(dir);
    free(missing);
    free(out);
}

/* ---- signatures verified, and the manifest summary ---- */

#define HUB_KBPKG_JSON                                                                             \
    "{\"abi\":1,\"exports\":[\"gemm_f16\",\"x<y>&\\\"'\"],\"name\":\"acme/k\",\"target\":\"t\"}"

typedef struct sig_fixture {
    char *dir, *hub, *out, *cfg;
    char *key_id;      /* generated in cfg: trusted by the renderer */
    char *stranger_id; /* generated elsewhere: not trusted by the renderer */
} sig_fixture;

static kb_ctx *ctx_at(const char *config_dir)
{
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "config.dir", config_dir), 0);
    return ctx;
}

static char *new_key(kb_ctx *ctx)
{
    kb_trust_key *k = NULL;
    cr_assert_eq(kb_trust_key_generate(&k, ctx, NULL), 0, "%s", kbt_msg(ctx));
    char *id = kbi_strdup(k->id);
    kb_trust_key_free(k);
    return id;
}

/* Publish acme/<leaf> 1.0.0 into hub through ctx's registry view and sign it with ctx's default
 * key (sign false: leave it unsigned). Returns the index digest. */
static char *publish_signed(kb_ctx *ctx, const sig_fixture *f, const char *leaf, bool sign)
{
    kb_registry *reg = NULL;
    cr_assert_eq(kb_registry_open(&reg, ctx, f->hub), 0, "%s", kbt_msg(ctx));
    char *name = kbi_asprintf("acme/%s", leaf), *digest = NULL;
    publish_with_config(reg, f->dir, name, "1.0.0", "Kernels <b>&</b> more", HUB_KBPKG_JSON,
                        &digest);
    if (sign)
        cr_assert_eq(kb_trust_sign_index(NULL, ctx, reg, name, "1.0.0", digest, NULL), 0, "%s",
                     kbt_msg(ctx));
    kb_registry_free(reg);
    free(name);
    return digest;
}

/* acme/trusted (signed by a key cfg trusts), acme/stranger (signed by a key it does not know),
 * acme/plain (unsigned), acme/tampered (one signature byte flipped), acme/expired. */
static sig_fixture sig_setup(void)
{
    sig_fixture f = {kbt_mkdtemp(), NULL, NULL, NULL, NULL, NULL};
    f.hub = kbi_asprintf("%s/hub", f.dir);
    f.out = kbi_asprintf("%s/site", f.dir);
    f.cfg = kbi_asprintf("%s/cfg", f.dir);
    char *other = kbi_asprintf("%s/stranger", f.dir);
    kb_ctx *ctx = ctx_at(f.cfg), *stranger = ctx_at(other);
    f.key_id = new_key(ctx);
    f.stranger_id = new_key(stranger);
    free(publish_signed(ctx, &f, "trusted", true));
    free(publish_signed(stranger, &f, "stranger", true));
    free(publish_signed(ctx, &f, "plain", false));
    char *tampered = publish_signed(ctx, &f, "tampered", true);
    kb_registry *reg = NULL;
    cr_assert_eq(kb_registry_open(&reg, ctx, f.hub), 0);
    json_t *layer = kbt_get_signature_layer(reg, ctx, "acme/tampered", tampered);
    char *sig = kbi_strdup(json_string_value(json_object_get(layer, "signature")));
    sig[20] = sig[20] == 'A' ? 'B' : 'A';
    json_object_set_new(layer, "signature", json_string(sig));
    kbt_replace_signature_layer(reg, ctx, "acme/tampered", tampered, layer);
    cr_assert_eq(kb_ctx_set(ctx, "trust.signature_days", "-1"), 0);
    free(publish_signed(ctx, &f, "expired", true));
    json_decref(layer);
    free(sig);
    free(tampered);
    kb_registry_free(reg);
    kb_ctx_free(stranger);
    kb_ctx_free(ctx);
    free(other);
    return f;
}

static void sig_teardown(sig_fixture *f)
{
    kbt_rmtree(f->dir);
    free(f->dir);
    free(f->hub);
    free(f->out);
    free(f->cfg);
    free(f->key_id);
    free(f->stranger_id);
}

static char *sig_page(const sig_fixture *f, const char *leaf)
{
    char *path = kbi_asprintf("%s/acme/%s.html", f->out, leaf);
    char *page = slurp(path);
    free(path);
    return page;
}

/* The version's badge has class sig-<state> and reads text; every target row says cell. */
static void expect_state(const char *page, const char *state, const char *text, const char *cell)
{
    char *badge = kbi_asprintf("<h3>1.0.0 <span class=\"sig-%s\" title=\"", state);
    char *words = kbi_asprintf("\">%s</span></h3>", text);
    char *row = kbi_asprintf("<td class=\"sig-%s\">%s</td></tr>", state, cell);
    const char *at = strstr(page, badge);
    cr_expect(at != NULL, "no %s badge in %s", state, page);
    cr_expect(at && strstr(at, words) != NULL, "badge text '%s' in %s", text, page);
    const char *r1 = strstr(page, row);
    cr_expect(r1 && strstr(r1 + 1, row), "both target rows say '%s': %s", cell, page);
    free(badge);
    free(words);
    free(row);
}

static void render_sig(const sig_fixture *f)
{
    char *env_cfg = kbi_asprintf("KBPKG_CONFIG_DIR=%s", f->cfg);
    const char *env[] = {env_cfg, NULL};
    const char *args[] = {"--registry", f->hub, "hub", "render", "--out", f->out, NULL};
    kbt_run r = kbt_kbpkg(env, args);
    cr_assert_eq(r.exit_code, 0, "a bad signature is shown, not fatal; stderr: %s", r.err);
    cr_expect(strstr(r.out, "5 package pages") != NULL, "stdout: %s", r.out);
    kbt_run_free(&r);
    free(env_cfg);
}

Test(hub, signature_state_is_verified_per_version)
{
    sig_fixture f = sig_setup();
    render_sig(&f);
    char *page = sig_page(&f, "trusted");
    char *text = kbi_asprintf("signed by %s, verified", f.key_id);
    expect_state(page, "signed-trusted", text, "verified");
    free(text);
    free(page);

    page = sig_page(&f, "stranger");
    text = kbi_asprintf("signed by %s, key not trusted here", f.stranger_id);
    expect_state(page, "untrusted-key", text, "key not trusted");
    cr_expect(strstr(page, "verified") == NULL, "%s", page);
    free(text);
    free(page);

    page = sig_page(&f, "plain");
    expect_state(page, "unsigned", "unsigned", "no");
    free(page);

    page = sig_page(&f, "tampered");
    text = kbi_asprintf("bad signature (claims key %s)", f.key_id);
    expect_state(page, "bad-signature", text, "bad signature");
    cr_expect(strstr(page, "title=\"the signature does not verify with key") != NULL, "%s", page);
    free(text);
    free(page);

    page = sig_page(&f, "expired");
    text = kbi_asprintf("signed by %s, expired", f.key_id);
    expect_state(page, "expired", text, "expired");
    free(text);
    free(page);
    sig_teardown(&f);
}

Test(hub, version_shows_manifest_summary_escaped)
{
    sig_fixture f = sig_setup();
    render_sig(&f);
    const char *leaves[] = {"trusted", "stranger", "plain", "tampered", "expired"};
    for (size_t i = 0; i < KB_ARRAY_LEN(leaves); i++) {
        char *page = sig_page(&f, leaves[i]);
        cr_expect(strstr(page, "<dl class=\"meta\"><dt>summary</dt><dd class=\"summary\">"
                               "Kernels &lt;b&gt;&amp;&lt;/b&gt; more</dd>"
                               "<dt>exports</dt><dd class=\"exports\"><code>gemm_f16</code> "
                               "<code>x&lt;y&gt;&amp;&quot;&#39;</code></dd>"
                               "<dt>kernel ABI</dt><dd class=\"abi\">1</dd></dl>") != NULL,
                  "%s: %s", leaves[i], page);
        cr_expect(strstr(page, "x<y>") == NULL && strstr(page, "<b>") == NULL, "%s", page);
        free(page);
    }
    sig_teardown(&f);
}

Test(hub, no_manifest_summary_without_kbpkg_json_fields)
{
    hub_fixture f = setup();
    render(&f);
    char *path = kbi_asprintf("%s/radeonflow/gemm.html", f.out);
    char *page = slurp(path);
    /* the configs are "{}": a summary, but no exports or ABI to show */
    cr_expect(strstr(page, "<dl class=\"meta\"><dt>summary</dt><dd class=\"summary\">Tiled GEMM "
                           "&amp; friends</dd></dl>") != NULL,
              "%s", page);
    cr_expect(strstr(page, "exports") == NULL, "%s", page);
    free(page);
    free(path);
    teardown(&f);
}

/* A signature manifest that cannot be read (its bytes on disk no longer match the digest): the
 * check could not run, which is neither "verified" nor fatal. */
Test(hub, signature_that_cannot_be_read_is_shown_unchecked)
{
    sig_fixture f = {kbt_mkdtemp(), NULL, NULL, NULL, NULL, NULL};
    f.hub = kbi_asprintf("%s/hub", f.dir);
    f.out = kbi_asprintf("%s/site", f.dir);
    f.cfg = kbi_asprintf("%s/cfg", f.dir);
    kb_ctx *ctx = ctx_at(f.cfg);
    f.key_id = new_key(ctx);
    char *digest = publish_signed(ctx, &f, "broken", true);
    kb_registry *reg = NULL;
    cr_assert_eq(kb_registry_open(&reg, ctx, f.hub), 0);
    char *tag = kbi_asprintf("sha256-%s.sig", kbi_digest_hex(digest));
    kb_registry_manifest *sig = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&sig, reg, "acme/broken", tag), 0, "%s", kbt_msg(ctx));
    char *blob = kbi_asprintf("%s/blobs/sha256/%s", f.hub, kbi_digest_hex(sig->digest));
    cr_assert(kbi_path_exists(blob), "%s", blob);
    kbt_write(blob, "not the signature manifest any more");

    char *env_cfg = kbi_asprintf("KBPKG_CONFIG_DIR=%s", f.cfg);
    const char *env[] = {env_cfg, NULL};
    const char *args[] = {"--registry", f.hub, "hub", "render", "--out", f.out, NULL};
    kbt_run r = kbt_kbpkg(env, args);
    cr_expect_eq(r.exit_code, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.err, "1.0.0: signature not checked: ") != NULL, "warns: %s", r.err);
    char *page = sig_page(&f, "broken");
    cr_expect(strstr(page, "<span class=\"sig-unchecked\" title=\"digest mismatch") != NULL, "%s",
              page);
    cr_expect(strstr(page, ">signature not checked</span>") != NULL, "%s", page);
    cr_expect(strstr(page, "<td class=\"sig-unchecked\">not checked</td>") != NULL, "%s", page);
    cr_expect(strstr(page, "verified") == NULL &&
                  strstr(page, "class=\"sig-signed-trusted") == NULL,
              "%s", page);
    kbt_run_free(&r);
    free(page);
    free(env_cfg);
    free(blob);
    kbi_registry_manifest_free(sig);
    free(tag);
    free(digest);
    kb_registry_free(reg);
    kb_ctx_free(ctx);
    sig_teardown(&f);
}

/* ---- headless chromium ---- */

static kb_proc_result chromium(const char *profile, const char *extra, const char *url)
{
    char *user_dir = kbi_asprintf("--user-data-dir=%s", profile);
    const char *argv[] = {CHROMIUM,
                          "--headless",
                          "--no-sandbox",
                          "--disable-gpu",
                          "--disable-background-networking",
                          "--disable-component-update",
                          "--no-first-run",
                          "--disable-sync",
                          "--disable-dev-shm-usage",
                          user_dir,
                          "--window-size=1200,800",
                          extra,
                          url,
                          NULL};
    kb_proc_result res = {0};
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kbi_proc_run(ctx, &res, argv, profile, 120000), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    kb_ctx_free(ctx);
    free(user_dir);
    return res;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Undo PNG's per-row filters in place (8-bit samples, bpp bytes per pixel). */
static void png_unfilter(unsigned char *raw, uint32_t w, uint32_t h, int bpp)
{
    size_t stride = (size_t)w * bpp;
    for (uint32_t y = 0; y < h; y++) {
        unsigned char *row = raw + y * (stride + 1), *cur = row + 1;
        unsigned char *prev = y ? raw + (y - 1) * (stride + 1) + 1 : NULL;
        for (size_t x = 0; x < stride; x++) {
            int a = x >= (size_t)bpp ? cur[x - bpp] : 0, b = prev ? prev[x] : 0;
            int c = prev && x >= (size_t)bpp ? prev[x - bpp] : 0;
            int add = row[0] == 1   ? a
                      : row[0] == 2 ? b
                      : row[0] == 3 ? (a + b) / 2
                      : row[0] == 4 ? paeth(a, b, c)
                                    : 0;
            cur[x] = (unsigned char)(cur[x] + add);
        }
    }
}

/* A decoded 8-bit RGB/RGBA PNG: rows of w*bpp bytes, each after its filter byte. */
typedef struct png_image {
    unsigned char *raw;
    uint32_t w, h;
    int bpp;
} png_image;

static png_image png_decode(const char *png, size_t len)
{
    const unsigned char *p = (const unsigned char *)png;
    cr_assert(len > 33 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0, "not a PNG");
    cr_assert(memcmp(p + 12, "IHDR", 4) == 0);
    png_image img = {NULL, be32(p + 16), be32(p + 20), p[25] == 6 ? 4 : 3};
    cr_assert_eq(p[24], 8, "bit depth");
    cr_assert(p[25] == 2 || p[25] == 6, "colour type %d", p[25]);
    kb_buf idat = KB_BUF_INIT;
    for (size_t off = 8; off + 12 <= len;) {
        uint32_t n = be32(p + off);
        if (memcmp(p + off + 4, "IDAT", 4) == 0)
            kbi_buf_append(&idat, p + off + 8, n);
        off += 12 + n;
    }
    uLongf raw_len = (uLongf)img.h * ((uLongf)img.w * img.bpp + 1);
    img.raw = malloc(raw_len);
    cr_assert_eq(uncompress(img.raw, &raw_len, (const Bytef *)idat.data, idat.len), Z_OK);
    png_unfilter(img.raw, img.w, img.h, img.bpp);
    kbi_buf_free(&idat);
    return img;
}

/* The pixel at (x, y) as 0xRRGGBB. */
static uint32_t png_pixel(const png_image *img, uint32_t x, uint32_t y)
{
    cr_assert(x < img->w && y < img->h, "(%u, %u) is off the %ux%u image", x, y, img->w, img->h);
    const unsigned char *px =
        img->raw + y * ((size_t)img->w * img->bpp + 1) + 1 + (size_t)x * img->bpp;
    return (uint32_t)px[0] << 16 | (uint32_t)px[1] << 8 | px[2];
}

/* How many separate vertical runs of colour rgb column x has between rows y0 and y1. */
static size_t png_runs(const png_image *img, uint32_t x, uint32_t y0, uint32_t y1, uint32_t rgb)
{
    size_t runs = 0;
    bool in = false;
    for (uint32_t y = y0; y < y1 && y < img->h; y++) {
        bool hit = png_pixel(img, x, y) == rgb;
        runs += hit && !in;
        in = hit;
    }
    return runs;
}

/* How many pixels of the whole image are exactly rgb. */
static size_t png_count(const png_image *img, uint32_t rgb)
{
    size_t n = 0;
    for (uint32_t y = 0; y < img->h; y++)
        for (uint32_t x = 0; x < img->w; x++)
            n += png_pixel(img, x, y) == rgb;
    return n;
}

/* The colours of tools/hub/hub_render.c's stylesheet that the checks below look for. */
#define HEADER_BG 0x1d3557u  /* header{background} */
#define BODY_BG 0xf6f7f9u    /* body{background} */
#define PKG_BORDER 0xe63946u /* li.pkg{border-left}: 6px at main's 32px padding */
#define TH_BG 0xe9eef5u      /* th{background} */

/* Screenshot url at 1200x800 with headless chromium, decoded. */
static png_image screenshot(const hub_fixture *f, const char *url, const char *name)
{
    char *profile = kbi_asprintf("%s/profile-%s", f->dir, name);
    char *png = kbi_asprintf("%s/%s.png", f->dir, name);
    char *shot = kbi_asprintf("--screenshot=%s", png);
    kb_ctx *ctx = kbt_ctx();
    kbi_mkdir_p(ctx, profile, 0700);
    kb_proc_result res = chromium(profile, shot, url);
    cr_assert(kbi_path_exists(png), "no screenshot of %s; chromium said: %s", url, res.output.data);
    kb_buf b = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(ctx, png, &b), 0);
    png_image img = png_decode(b.data, b.len);
    cr_expect_eq(img.w, 1200);
    cr_expect_eq(img.h, 800);
    kbi_buf_free(&b);
    kbi_proc_result_free(&res);
    kb_ctx_free(ctx);
    free(profile);
    free(png);
    free(shot);
    return img;
}

/* The header band: dark blue across the top (body has no margin), light page below it. */
static void expect_header_and_page(const png_image *img, const char *what)
{
    uint32_t corner = png_pixel(img, 2, 2), right = png_pixel(img, 1195, 40);
    cr_expect_eq(corner, HEADER_BG, "%s: top-left is #%06x, not the header's #%06x", what, corner,
                 HEADER_BG);
    cr_expect_eq(right, HEADER_BG, "%s: header's right end is #%06x", what, right);
    uint32_t below = png_pixel(img, 1195, 790);
    cr_expect_eq(below, BODY_BG, "%s: page background is #%06x, not #%06x", what, below, BODY_BG);
}

Test(hub, chromium_screenshot_is_a_real_page)
{
    if (access(CHROMIUM, X_OK) != 0)
        kbt_skip_missing("chromium is not installed (scripts/install-deps.sh installs it)");
    hub_fixture f = setup();
    render(&f);
    char *url = kbi_asprintf("file://%s/index.html", f.out);
    png_image img = screenshot(&f, url, "index");
    expect_header_and_page(&img, "index");
    /* one red left border per package card: gemm and xss, one above the other */
    size_t cards = png_runs(&img, 34, 60, 800, PKG_BORDER);
    cr_expect_eq(cards, 2, "%zu package cards' borders at x=34, expected 2", cards);
    cr_expect_eq(png_pixel(&img, 20, 400), BODY_BG, "left of main's padding: page background");
    free(img.raw);
    free(url);

    url = kbi_asprintf("file://%s/radeonflow/gemm.html", f.out);
    img = screenshot(&f, url, "gemm");
    expect_header_and_page(&img, "package page");
    /* two versions, each a table whose header row is shaded */
    size_t th = png_count(&img, TH_BG);
    cr_expect_geq(th, 2000, "only %zu pixels of the table header colour", th);
    cr_expect_eq(png_runs(&img, 34, 60, 800, PKG_BORDER), 0, "no package cards on a package page");
    free(img.raw);
    free(url);
    teardown(&f);
}

/* The DOM of url after its scripts ran: the search for "gemm" left radeonflow/gemm shown and
 * hid evil/xss (case-insensitive), and the counter says so. */
static void expect_search_kept_only_gemm(const hub_fixture *f, const char *url)
{
    char *profile = kbi_asprintf("%s/profile", f->dir);
    kb_ctx *ctx = kbt_ctx();
    kbi_mkdir_p(ctx, profile, 0700);
    kb_proc_result res = chromium(profile, "--dump-dom", url);
    const char *dom = res.output.data ? res.output.data : "";
    cr_assert(strstr(dom, "id=\"packages\"") != NULL, "no DOM: %s", dom);
    cr_expect(strstr(dom, "<li class=\"pkg\" data-name=\"radeonflow/gemm\">") != NULL,
              "gemm stays visible: %s", dom);
    cr_expect(strstr(dom, "<li class=\"pkg\" data-name=\"evil/xss\" hidden=\"\">") != NULL,
              "xss is filtered out: %s", dom);
    cr_expect(strstr(dom, "<span id=\"count\">1 shown</span>") != NULL, "%s", dom);
    kbi_proc_result_free(&res);
    kb_ctx_free(ctx);
    free(profile);
}

/* Typing in the search box: a copy of index.html with one more script at the end that does
 * what a keystroke does to the box (sets its value, fires "input"), so the page's own listener
 * filters. Headless chromium cannot type, and a wrapper page cannot reach into a file:// iframe
 * (every file:// page is its own origin). */
Test(hub, chromium_search_typing_filters_the_list)
{
    if (access(CHROMIUM, X_OK) != 0)
        kbt_skip_missing("chromium is not installed (scripts/install-deps.sh installs it)");
    hub_fixture f = setup();
    render(&f);
    char *path = kbi_asprintf("%s/index.html", f.out);
    char *index = slurp(path);
    char *end = strstr(index, "</body>");
    cr_assert_not_null(end);
    *end = '\0';
    char *typed = kbi_asprintf("%s/typed.html", f.out);
    char *page = kbi_asprintf("%s<script>var box=document.getElementById('search');"
                              "box.value='GEMM';box.dispatchEvent(new Event('input'));</script>\n"
                              "</body>\n</html>\n",
                              index);
    kbt_write(typed, page);
    char *url = kbi_asprintf("file://%s", typed);
    expect_search_kept_only_gemm(&f, url); /* "GEMM" typed */
    /* and on screen: one card left */
    png_image img = screenshot(&f, url, "typed");
    cr_expect_eq(png_runs(&img, 34, 60, 800, PKG_BORDER), 1, "one card shown after typing");
    free(img.raw);
    free(url);
    free(page);
    free(typed);
    free(index);
    free(path);
    teardown(&f);
}

Test(hub, chromium_search_filter_hides_other_packages)
{
    if (access(CHROMIUM, X_OK) != 0)
        kbt_skip_missing("chromium is not installed (scripts/install-deps.sh installs it)");
    hub_fixture f = setup();
    render(&f);
    char *url = kbi_asprintf("file://%s/index.html?q=gemm", f.out);
    expect_search_kept_only_gemm(&f, url);
    free(url);
    teardown(&f);
}
