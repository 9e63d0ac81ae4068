/* The lockfile: reading (errors name file and field), writing (stable bytes), resolving against a
 * layout hub, and sync's decisions that need no artifact: offline, nothing fits. */
#include "kbtest.h"
#include "lock/lockfile.h"

#include <stdlib.h>
#include <string.h>

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define D3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"

static const char *good_lock =
    "{\"lockfile\": 1, \"registry\": \"oci://127.0.0.1:9/kbtest\", \"packages\": [\n"
    " {\"name\": \"zz/last\", \"constraint\": \"*\", \"version\": \"2.0.0\",\n"
    "  \"index_digest\": \"" D1 "\",\n"
    "  \"artifacts\": {\"cpu-x86_64_v2-x86_64-linux\": {\"manifest_digest\": \"" D2 "\",\n"
    "                 \"layer_digest\": \"" D3 "\", \"size\": 10}}},\n"
    " {\"name\": \"aa/first\", \"constraint\": \"^1\", \"version\": \"1.2.0\",\n"
    "  \"index_digest\": \"" D1 "\",\n"
    "  \"artifacts\": {\"cuda13-sm_90-x86_64-linux\": {\"manifest_digest\": \"" D2 "\",\n"
    "                 \"layer_digest\": \"" D3 "\", \"size\": 7},\n"
    "                \"cpu-x86_64_v2-x86_64-linux\": {\"manifest_digest\": \"" D2 "\",\n"
    "                 \"layer_digest\": \"" D2 "\", \"size\": 8}},\n"
    "  \"source\": {\"manifest_digest\": \"" D1 "\", \"layer_digest\": \"" D1 "\", \"size\": 9}}\n"
    "]}\n";

typedef struct fixture {
    char *dir;
    char *path;
    kb_ctx *ctx;
} fixture;

static fixture setup(const char *text)
{
    fixture f = {kbt_mkdtemp(), NULL, kbt_ctx()};
    f.path = kbi_asprintf("%s/kbpkg.lock", f.dir);
    kbt_write(f.path, text);
    return f;
}

static void teardown(fixture *f)
{
    kb_ctx_free(f->ctx);
    kbt_rmtree(f->dir);
    free(f->dir);
    free(f->path);
}

static const char *msg(const fixture *f)
{
    return kb_ctx_last_error(f->ctx)->message;
}

Test(lockfile, load_sorts_packages_and_pins)
{
    fixture f = setup(good_lock);
    kb_lockfile *lock = NULL;
    cr_assert_eq(kb_lockfile_load(&lock, f.ctx, f.path), 0, "%s", msg(&f));
    cr_expect_str_eq(kb_lockfile_registry(lock), "oci://127.0.0.1:9/kbtest");
    cr_assert_eq(kb_lockfile_package_count(lock), 2);
    const char *name, *constraint, *version, *index;
    size_t pins = 0;
    cr_assert_eq(kb_lockfile_package(&name, &constraint, &version, &index, &pins, lock, 0), 0);
    cr_expect_str_eq(name, "aa/first");
    cr_expect_str_eq(constraint, "^1");
    cr_expect_str_eq(version, "1.2.0");
    cr_expect_eq(pins, 3, "two artifacts and the source");
    const char *target, *manifest, *layer;
    uint64_t size = 0;
    cr_assert_eq(kb_lockfile_artifact(&target, &manifest, &layer, &size, lock, 0, 0), 0);
    cr_expect_str_eq(target, "cpu-x86_64_v2-x86_64-linux");
    cr_expect_str_eq(layer, D2);
    cr_expect_eq(size, 8);
    cr_assert_eq(kb_lockfile_artifact(&target, NULL, NULL, &size, lock, 0, 2), 0);
    cr_expect_str_eq(target, "source");
    cr_expect_eq(size, 9);
    cr_expect_eq(kb_lockfile_artifact(&target, NULL, NULL, NULL, lock, 0, 3), KB_ERR_NOT_FOUND);
    kb_strv blobs = KB_STRV_INIT;
    cr_assert_eq(kbi_lockfile_pinned_blobs(&blobs, lock), 0);
    cr_expect_eq(blobs.len, 3, "each pinned layer once");
    kbi_strv_free(&blobs);
    kb_lockfile_free(lock);
    teardown(&f);
}

Test(lockfile, write_then_read_gives_the_same_bytes)
{
    fixture f = setup(good_lock);
    kb_lockfile *lock = NULL, *again = NULL;
    cr_assert_eq(kb_lockfile_load(&lock, f.ctx, f.path), 0, "%s", msg(&f));
    char *out1 = kbi_asprintf("%s/one.lock", f.dir), *out2 = kbi_asprintf("%s/two.lock", f.dir);
    cr_assert_eq(kb_lockfile_write(f.ctx, lock, out1), 0, "%s", msg(&f));
    cr_assert_eq(kb_lockfile_load(&again, f.ctx, out1), 0, "%s", msg(&f));
    cr_assert_eq(kb_lockfile_write(f.ctx, again, out2), 0);
    kb_buf a = KB_BUF_INIT, b = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, out1, &a), 0);
    cr_assert_eq(kbi_read_file(NULL, out2, &b), 0);
    cr_expect_str_eq(a.data, b.data);
    /* sorted: packages by name, keys alphabetically, one trailing newline */
    cr_expect_lt(strstr(a.data, "aa/first") - a.data, strstr(a.data, "zz/last") - a.data);
    cr_expect(kbi_str_starts(a.data, "{\n  \"lockfile\": 1,\n  \"packages\": ["), "%s", a.data);
    cr_expect(kbi_str_ends(a.data, "}\n"));
    kbi_buf_free(&a);
    kbi_buf_free(&b);
    free(out1);
    free(out2);
    kb_lockfile_free(lock);
    kb_lockfile_free(again);
    teardown(&f);
}

typedef struct bad_case {
    const char *text;
    int code;
    const char *message; /* after "<path>" */
} bad_case;

Test(lockfile, bad_files_name_the_field)
{
    static const bad_case cases[] = {
        {"{\"lockfile\": 1,\n \"registry\": }", KB_ERR_PARSE, ":2:14: "},
        {"{\"registry\": \"x\", \"packages\": []}", KB_ERR_PARSE,
         ": top level: missing 'lockfile' format number"},
        {"{\"lockfile\": 2, \"registry\": \"x\", \"packages\": []}", KB_ERR_UNSUPPORTED,
         ": lockfile format 2, this kbpkg reads format 1"},
        {"{\"lockfile\": 1, \"registry\": \"x\", \"packages\": {}}", KB_ERR_PARSE,
         ": top level: 'packages' must be an array"},
        {"{\"lockfile\": 1, \"registry\": \"x\", \"packages\": [{\"name\": \"Bad\"}]}",
         KB_ERR_PARSE, ": packages[0]: 'name' is not org/name"},
        {"{\"lockfile\": 1, \"registry\": \"x\", \"packages\": [{\"name\": \"a/b\", "
         "\"constraint\": \"*\", \"version\": \"1.0.0\", \"index_digest\": \"sha256:12\"}]}",
         KB_ERR_PARSE, ": packages[0]: 'index_digest' must be a sha256:<64 hex> digest"},
        {"{\"lockfile\": 1, \"registry\": \"x\", \"packages\": [{\"name\": \"a/b\", "
         "\"constraint\": \"*\", \"version\": \"1.0.0\", \"index_digest\": \"" D1 "\", "
         "\"artifacts\": {\"t\": {\"manifest_digest\": \"" D1 "\", \"size\": 1}}}]}",
         KB_ERR_PARSE,
         ": packages[0] (a/b) artifacts.t: 'layer_digest' must be a sha256:<64 hex> digest"},
        {"{\"lockfile\": 1, \"lockfile\": 1}", KB_ERR_PARSE, "duplicate object key"},
    };
    for (size_t i = 0; i < KB_ARRAY_LEN(cases); i++) {
        fixture f = setup(cases[i].text);
        kb_lockfile *lock = NULL;
        cr_expect_eq(kb_lockfile_load(&lock, f.ctx, f.path), cases[i].code, "case %zu: %s", i,
                     msg(&f));
        cr_expect_null(lock);
        char *want = kbi_asprintf("%s%s", f.path, cases[i].message);
        cr_expect(kbi_str_starts(msg(&f), want) || strstr(msg(&f), cases[i].message),
                  "case %zu: want '%s', got '%s'", i, want, msg(&f));
        cr_expect_str_eq(kb_ctx_last_error(f.ctx)->path, f.path, "case %zu", i);
        free(want);
        teardown(&f);
    }
}

Test(lockfile, sync_offline_with_nothing_installed)
{
    fixture f = setup(good_lock);
    char *cache = kbi_asprintf("%s/cache", f.dir);
    cr_assert_eq(kb_ctx_set(f.ctx, "cache.dir", cache), 0);
    cr_assert_eq(kb_ctx_set(f.ctx, "probe.devices", "none"), 0);
    cr_assert_eq(kb_ctx_set(f.ctx, "probe.cpu", "x86_64_v3"), 0);
    cr_assert_eq(kb_ctx_set(f.ctx, "offline", "true"), 0);
    kb_lockfile *lock = NULL;
    cr_assert_eq(kb_lockfile_load(&lock, f.ctx, f.path), 0, "%s", msg(&f));
    kb_sync_report *rep = NULL;
    cr_expect_eq(kb_sync(&rep, f.ctx, lock, NULL), KB_ERR_OFFLINE);
    cr_expect_null(rep);
    cr_expect_str_eq(msg(&f), "offline: aa/first@1.2.0 cpu-x86_64_v2-x86_64-linux (" D2
                              ") is not installed and oci://127.0.0.1:9/kbtest is not reachable "
                              "offline; run kbpkg sync once online");
    kb_lockfile_free(lock);
    free(cache);
    teardown(&f);
}

Test(lockfile, sync_says_when_no_pin_fits)
{
    fixture f = setup(good_lock);
    char *cache = kbi_asprintf("%s/cache", f.dir);
    cr_assert_eq(kb_ctx_set(f.ctx, "cache.dir", cache), 0);
    cr_assert_eq(kb_ctx_set(f.ctx, "probe.devices", "none"), 0);
    cr_assert_eq(kb_ctx_set(f.ctx, "probe.cpu", "x86_64_v3"), 0);
    kb_lockfile *lock = NULL;
    cr_assert_eq(kb_lockfile_load(&lock, f.ctx, f.path), 0, "%s", msg(&f));
    /* Keep only the CUDA pin of aa/first: a machine with no GPU has nothing to take. */
    kb_lock_package *p = &lock->packages[0];
    for (size_t i = 0; i < p->count; i++)
        if (strcmp(p->pins[i].target, "cuda13-sm_90-x86_64-linux") != 0) {
            free(p->pins[i].target);
            p->pins[i].target = kbi_strdup("source");
        }
    kb_sync_report *rep = NULL;
    cr_expect_eq(kb_sync(&rep, f.ctx, lock, NULL), KB_ERR_INCOMPATIBLE);
    cr_expect(kbi_str_starts(msg(&f), "aa/first@1.2.0: no target pinned in the lockfile fits "
                                      "this machine:\n  cuda13-sm_90-x86_64-linux: "),
              "%s", msg(&f));
    kb_lockfile_free(lock);
    free(cache);
    teardown(&f);
}

Test(lockfile, resolve_needs_a_package)
{
    kb_ctx *ctx = kbt_ctx();
    kb_lockfile *lock = NULL;
    cr_expect_eq(kb_lockfile_resolve(&lock, ctx, NULL, 0, NULL), KB_ERR_INVALID);
    kb_lock_options o = KB_LOCK_OPTIONS_INIT;
    o.version = 99;
    const char *refs[] = {"a/b"};
    cr_expect_eq(kb_lockfile_resolve(&lock, ctx, refs, 1, &o), KB_ERR_INVALID);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message,
                     "kb_lockfile_resolve: options version 99, expected 1");
    kb_ctx_free(ctx);
}
