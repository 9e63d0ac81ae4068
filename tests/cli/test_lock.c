/* kbpkg lock and sync against a layout folder: file content, installing exactly the pins,
 * refusing changed bytes, offline no-op. */
#include "kbtest.h"
#include "cache/store.h"
#include "registry/pkgindex.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fixture {
    char *tmp, *pkg, *hub, *cache, *lock;
    char *env_cache, *env_config;
    const char *env[5];
} fixture;

static fixture setup(void)
{
    fixture f = {0};
    f.tmp = kbt_mkdtemp();
    f.pkg = kbi_asprintf("%s/pkg", f.tmp);
    f.hub = kbi_asprintf("%s/hub", f.tmp);
    f.cache = kbi_asprintf("%s/cache", f.tmp);
    f.lock = kbi_asprintf("%s/kbpkg.lock", f.tmp);
    f.env_cache = kbi_asprintf("KBPKG_CACHE=%s", f.cache);
    f.env_config = kbi_asprintf("XDG_CONFIG_HOME=%s/config", f.tmp);
    f.env[0] = f.env_cache;
    f.env[1] = f.env_config;
    f.env[2] = "KBPKG_DEVICES=none";
    f.env[3] = "KBPKG_CPU=x86_64_v3";
    char *src = kbt_data("publish/cpu-add");
    char *cmd = kbi_asprintf("cp -r '%s' '%s'", src, f.pkg);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
    free(src);
    const char *args[] = {"publish", f.pkg, "--registry", f.hub, NULL};
    kbt_run r = kbt_kbpkg(f.env, args);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    return f;
}

static void teardown(fixture *f)
{
    kbt_rmtree(f->tmp);
    free(f->tmp);
    free(f->pkg);
    free(f->hub);
    free(f->cache);
    free(f->lock);
    free(f->env_cache);
    free(f->env_config);
}

static kbt_run run3(const fixture *f, const char *a, const char *b, const char *c)
{
    const char *args[] = {a, b, c, NULL};
    return kbt_kbpkg(f->env, args);
}

static kbt_run lock(const fixture *f)
{
    const char *args[] = {"lock", "kbtest/cpu-add@^0.1", "--registry", f->hub, "--file", f->lock,
                          NULL};
    return kbt_kbpkg(f->env, args);
}

/* The hub's current index of kbtest/cpu-add@0.1.0, entries resolved. */
static kb_pkg_index *hub_index(const fixture *f, kb_ctx *ctx, kb_registry **r)
{
    kb_pkg_index *idx = NULL;
    cr_assert_eq(kb_registry_open(r, ctx, f->hub), 0);
    cr_assert_eq(kbi_pkg_index_fetch(&idx, *r, "kbtest/cpu-add", "0.1.0", NULL), 0);
    for (size_t i = 0; i < idx->count; i++)
        cr_assert_eq(kbi_pkg_entry_resolve(&idx->entries[i], *r, "kbtest/cpu-add"), 0);
    return idx;
}

static char *installed_digest(const fixture *f, const char *target)
{
    char *rec =
        kbi_asprintf("%s/pkgs/kbtest/cpu-add/0.1.0/%s/" KB_INSTALL_RECORD, f->cache, target);
    json_t *root = json_load_file(rec, 0, NULL);
    char *digest = kbi_strdup(json_string_value(json_object_get(root, "artifact_digest")));
    json_decref(root);
    free(rec);
    return digest;
}

Test(cli_lock, lockfile_pins_every_artifact_with_stable_bytes)
{
    fixture f = setup();
    kbt_run r = lock(&f);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    kb_ctx *ctx = kbt_ctx();
    kb_registry *reg = NULL;
    kb_pkg_index *idx = hub_index(&f, ctx, &reg);
    json_error_t jerr;
    json_t *root = json_load_file(f.lock, JSON_REJECT_DUPLICATES, &jerr);
    cr_assert_not_null(root, "%s", jerr.text);
    cr_expect_eq(json_integer_value(json_object_get(root, "lockfile")), 1);
    cr_expect_str_eq(json_string_value(json_object_get(root, "registry")), f.hub);
    json_t *p = json_array_get(json_object_get(root, "packages"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(p, "name")), "kbtest/cpu-add");
    cr_expect_str_eq(json_string_value(json_object_get(p, "constraint")), "^0.1");
    cr_expect_str_eq(json_string_value(json_object_get(p, "version")), "0.1.0");
    cr_expect_str_eq(json_string_value(json_object_get(p, "index_digest")), idx->digest);
    json_t *arts = json_object_get(p, "artifacts");
    cr_expect_eq(json_object_size(arts), 2, "both CPU targets, for any machine");
    for (size_t i = 0; i < idx->count; i++) {
        const kb_pkg_entry *e = &idx->entries[i];
        json_t *pin =
            e->is_source ? json_object_get(p, "source") : json_object_get(arts, e->target);
        cr_assert_not_null(pin, "%s pinned", e->target);
        cr_expect_str_eq(json_string_value(json_object_get(pin, "manifest_digest")),
                         e->manifest_digest);
        cr_expect_str_eq(json_string_value(json_object_get(pin, "layer_digest")), e->layer_digest);
        cr_expect_eq((uint64_t)json_integer_value(json_object_get(pin, "size")), e->layer_size);
    }
    json_decref(root);
    /* Locking again gives the same bytes. */
    kb_buf first = KB_BUF_INIT, second = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, f.lock, &first), 0);
    r = lock(&f);
    cr_expect_eq(r.exit_code, 0);
    kbt_run_free(&r);
    cr_assert_eq(kbi_read_file(NULL, f.lock, &second), 0);
    cr_expect_str_eq(second.data, first.data);
    /* --target pins only that one (plus the source). */
    const char *one[] = {"lock", "kbtest/cpu-add", "--registry",    f.hub, "--file",
                         f.lock, "--target",       "cpu-x86_64_v2", NULL};
    r = kbt_kbpkg(f.env, one);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    kb_buf third = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, f.lock, &third), 0);
    cr_expect(strstr(third.data, "cpu-x86_64_v2-x86_64-linux"));
    cr_expect_null(strstr(third.data, "cpu-x86_64_v3-x86_64-linux"));
    cr_expect(strstr(third.data, "\"source\""));
    const char *none[] = {"lock", "kbtest/cpu-add", "--registry", f.hub, "--file",
                          f.lock, "--target",       "cuda13",     NULL};
    r = kbt_kbpkg(f.env, none);
    cr_expect_eq(r.exit_code, 3);
    cr_expect(strstr(r.err, "kbpkg: kbtest/cpu-add@0.1.0 has no artifact for the requested "
                            "target(s); it has: cpu-x86_64_v2-x86_64-linux, "
                            "cpu-x86_64_v3-x86_64-linux"),
              "%s", r.err);
    kbt_run_free(&r);
    kbi_buf_free(&first);
    kbi_buf_free(&second);
    kbi_buf_free(&third);
    kbi_pkg_index_free(idx);
    kb_registry_free(reg);
    kb_ctx_free(ctx);
    teardown(&f);
}

Test(cli_lock, sync_installs_the_pins_then_works_offline)
{
    fixture f = setup();
    kbt_run r = lock(&f);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    kb_ctx *ctx = kbt_ctx();
    kb_registry *reg = NULL;
    kb_pkg_index *idx = hub_index(&f, ctx, &reg);
    const kb_pkg_entry *v3 = kbi_pkg_index_find(idx, "cpu-x86_64_v3-x86_64-linux");
    cr_assert_not_null(v3);

    r = run3(&f, "sync", "--file", f.lock);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "kbtest/cpu-add 0.1.0 cpu-x86_64_v3-x86_64-linux: installed"), "%s",
              r.out);
    char *got = installed_digest(&f, "cpu-x86_64_v3-x86_64-linux");
    cr_expect_str_eq(got, v3->layer_digest, "the install record holds the pinned digest");
    free(got);
    kbt_run_free(&r);

    /* Offline, the hub gone: already installed, nothing to fetch. */
    kbt_rmtree(f.hub);
    const char *offline[] = {"--offline", "sync", "--file", f.lock, NULL};
    r = kbt_kbpkg(f.env, offline);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "cpu-x86_64_v3-x86_64-linux: already installed"), "%s", r.out);
    kbt_run_free(&r);
    kbi_pkg_index_free(idx);
    kb_registry_free(reg);
    kb_ctx_free(ctx);
    teardown(&f);
}

/* A forced republish, then the registry lost the old index (as a garbage collection does): the
 * old lockfile must not install the new bytes. */
Test(cli_lock, sync_refuses_bytes_that_differ_from_the_pin)
{
    fixture f = setup();
    kbt_run r = lock(&f);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    kb_ctx *ctx = kbt_ctx();
    kb_registry *reg = NULL;
    kb_pkg_index *old = hub_index(&f, ctx, &reg);
    const char *old_layer = kbi_pkg_index_find(old, "cpu-x86_64_v3-x86_64-linux")->layer_digest;

    char *license = kbi_asprintf("%s/LICENSE", f.pkg);
    kbt_write(license, "MIT, republished\n");
    const char *force[] = {"publish", f.pkg, "--registry", f.hub, "--force", NULL};
    r = kbt_kbpkg(f.env, force);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    kb_registry *reg2 = NULL;
    kb_pkg_index *now = hub_index(&f, ctx, &reg2);
    const char *new_layer = kbi_pkg_index_find(now, "cpu-x86_64_v3-x86_64-linux")->layer_digest;
    cr_assert_str_neq(new_layer, old_layer);

    /* While the registry still serves the pinned index by digest, sync installs the old bytes. */
    r = run3(&f, "sync", "--file", f.lock);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    char *got = installed_digest(&f, "cpu-x86_64_v3-x86_64-linux");
    cr_expect_str_eq(got, old_layer, "exactly the pin, not the tag's new bytes");
    free(got);
    kbt_run_free(&r);

    /* Registry lost the pinned index: the current one has other bytes -> refused. */
    char *cache_pkgs = kbi_asprintf("%s/pkgs", f.cache);
    kbt_rmtree(cache_pkgs);
    char *old_index_blob = kbi_asprintf("%s/blobs/sha256/%s", f.hub, kbi_digest_hex(old->digest));
    cr_assert_eq(unlink(old_index_blob), 0, "%s", old_index_blob);
    r = run3(&f, "sync", "--file", f.lock);
    cr_expect_eq(r.exit_code, 4, "KB_ERR_DIGEST: %s", r.err);
    char *msg = kbi_asprintf("kbpkg: kbtest/cpu-add@0.1.0 cpu-x86_64_v3-x86_64-linux: the "
                             "lockfile pins %s but the registry now serves %s\n",
                             old_layer, new_layer);
    cr_expect(strstr(r.err, msg), "%s", r.err);
    char *none = installed_digest(&f, "cpu-x86_64_v3-x86_64-linux");
    cr_expect_null(none, "nothing installed");
    free(none);
    kbt_run_free(&r);
    free(msg);
    free(old_index_blob);
    free(cache_pkgs);
    free(license);
    kbi_pkg_index_free(old);
    kbi_pkg_index_free(now);
    kb_registry_free(reg);
    kb_registry_free(reg2);
    kb_ctx_free(ctx);
    teardown(&f);
}

/* The registry serves other bytes under the pinned layer digest (a corrupted or hostile hub). */
Test(cli_lock, sync_refuses_a_tampered_blob)
{
    fixture f = setup();
    kbt_run r = lock(&f);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    kb_ctx *ctx = kbt_ctx();
    kb_registry *reg = NULL;
    kb_pkg_index *idx = hub_index(&f, ctx, &reg);
    const char *layer = kbi_pkg_index_find(idx, "cpu-x86_64_v3-x86_64-linux")->layer_digest;
    char *blob = kbi_asprintf("%s/blobs/sha256/%s", f.hub, kbi_digest_hex(layer));
    kbt_write(blob, "not the artifact you pinned");
    r = run3(&f, "sync", "--file", f.lock);
    cr_expect_eq(r.exit_code, 4, "%s", r.err);
    cr_expect(strstr(r.err, "kbpkg: kbtest/cpu-add@0.1.0 cpu-x86_64_v3-x86_64-linux (pinned "),
              "names package and target: %s", r.err);
    cr_expect(strstr(r.err, layer), "names the expected digest: %s", r.err);
    kbt_run_free(&r);
    free(blob);
    kbi_pkg_index_free(idx);
    kb_registry_free(reg);
    kb_ctx_free(ctx);
    teardown(&f);
}

Test(cli_lock, sync_without_a_lockfile)
{
    char *tmp = kbt_mkdtemp();
    char *file = kbi_asprintf("%s/missing.lock", tmp);
    const char *args[] = {"sync", "--file", file, NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 3);
    char *want =
        kbi_asprintf("kbpkg: no lockfile: %s does not exist; run 'kbpkg lock "
                     "org/name[@constraint]...' first to write one (or give --file PATH)\n",
                     file);
    cr_expect_str_eq(r.err, want);
    free(want);
    kbt_run_free(&r);
    /* the default name, relative: the folder it was looked for in is named; --json keeps it */
    const char *json[] = {"--json", "sync", NULL};
    char *here = getcwd(NULL, 0), *real = realpath(tmp, NULL);
    cr_assert(here && real && chdir(tmp) == 0);
    r = kbt_kbpkg(NULL, json);
    cr_assert_eq(chdir(here), 0);
    cr_expect_eq(r.exit_code, 3);
    json_t *doc = json_loads(r.out, 0, NULL);
    json_t *err = json_object_get(doc, "error");
    char *looked =
        kbi_asprintf("no lockfile: %s/kbpkg.lock does not exist; run 'kbpkg lock ", real);
    const char *msg = json_string_value(json_object_get(err, "message"));
    cr_expect(msg && strncmp(msg, looked, strlen(looked)) == 0, "%s", r.out);
    cr_expect_str_eq(json_string_value(json_object_get(err, "path")), "kbpkg.lock");
    cr_expect_str_eq(json_string_value(json_object_get(err, "kind")), "not found");
    json_decref(doc);
    free(looked);
    free(here);
    free(real);
    kbt_run_free(&r);
    free(file);
    kbt_rmtree(tmp);
    free(tmp);
}

static bool cached_blob(const fixture *f, const char *digest)
{
    char *path = kbi_asprintf("%s/blobs/sha256/%s", f->cache, kbi_digest_hex(digest));
    bool there = kbi_path_exists(path);
    free(path);
    return there;
}

/* kbpkg [--set S] gc ARGS... --json, run from folder cwd; returns "removed" (-1: failed). */
static long gc_in(const fixture *f, const char *cwd, const char *set, const char *args,
                  char **err_out)
{
    char *out = kbi_asprintf("%s/gc.out", f->tmp), *err = kbi_asprintf("%s/gc.err", f->tmp);
    char *cmd = kbi_asprintf("cd '%s' && env %s %s %s %s '%s' %s%s%s gc %s --json >'%s' 2>'%s'",
                             cwd, f->env[0], f->env[1], f->env[2], f->env[3], getenv("KBPKG_BIN"),
                             set ? "--set '" : "", set ? set : "", set ? "'" : "", args, out, err);
    int status = system(cmd);
    kb_buf b = KB_BUF_INIT;
    long removed = -1;
    if (status == 0 && kbi_read_file(NULL, out, &b) == 0) {
        json_t *o = json_loads(b.data, 0, NULL);
        cr_assert_not_null(o, "%s", b.data);
        removed = (long)json_integer_value(json_object_get(o, "removed"));
        json_decref(o);
    }
    kbi_buf_free(&b);
    if (err_out) {
        kbi_read_file(NULL, err, &b);
        *err_out = kbi_buf_detach(&b);
    }
    kbi_buf_free(&b);
    free(cmd);
    free(out);
    free(err);
    return removed;
}

/* install two targets, lock one, uninstall both, gc: the pinned blob stays, the other goes. */
Test(cli_lock, gc_keeps_the_blobs_a_lockfile_pins)
{
    fixture f = setup();
    const char *pin_v3[] = {"lock", "kbtest/cpu-add", "--registry",    f.hub, "--file",
                            f.lock, "--target",       "cpu-x86_64_v3", NULL};
    kbt_run r = kbt_kbpkg(f.env, pin_v3);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    const char *targets[] = {"cpu-x86_64_v2-x86_64-linux", "cpu-x86_64_v3-x86_64-linux"};
    for (size_t i = 0; i < 2; i++) {
        const char *install[] = {"install",  "kbtest/cpu-add", "--registry", f.hub,
                                 "--target", targets[i],       NULL};
        r = kbt_kbpkg(f.env, install);
        cr_assert_eq(r.exit_code, 0, "%s", r.err);
        kbt_run_free(&r);
    }
    r = run3(&f, "uninstall", "kbtest/cpu-add", NULL);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    kb_ctx *ctx = kbt_ctx();
    kb_registry *reg = NULL;
    kb_pkg_index *idx = hub_index(&f, ctx, &reg);
    const char *v2 = kbi_pkg_index_find(idx, targets[0])->layer_digest;
    const char *v3 = kbi_pkg_index_find(idx, targets[1])->layer_digest;
    cr_assert(cached_blob(&f, v2) && cached_blob(&f, v3), "both downloads are in the cache");
    char *elsewhere = kbi_asprintf("%s/elsewhere", f.tmp);
    cr_assert_eq(kbi_mkdir_p(NULL, elsewhere, 0755), 0);

    /* lockfiles that cannot be read stop gc before it removes anything */
    char *err = NULL;
    char *missing = kbi_asprintf("--keep-lock '%s/missing.lock'", f.tmp);
    cr_expect_eq(gc_in(&f, elsewhere, NULL, missing, &err), -1);
    cr_expect(strstr(err, "missing.lock") && strstr(err, "nothing removed"), "%s", err);
    free(err);
    char *bad = kbi_asprintf("%s/bad.lock", f.tmp);
    kbt_write(bad, "{\"lockfile\":1,");
    char *set_bad = kbi_asprintf("gc.keep_locks=%s", bad);
    cr_expect_eq(gc_in(&f, elsewhere, set_bad, "", &err), -1);
    cr_expect(strstr(err, bad), "names the lockfile: %s", err);
    free(err);
    cr_expect(cached_blob(&f, v2) && cached_blob(&f, v3), "a failed gc removes nothing");

    /* --keep-lock: the v3 pin stays, the unpinned v2 blob goes */
    char *keep = kbi_asprintf("--keep-lock '%s'", f.lock);
    cr_expect_eq(gc_in(&f, elsewhere, NULL, keep, &err), 1, "%s", err);
    free(err);
    cr_expect_not(cached_blob(&f, v2), "unpinned: removed");
    cr_expect(cached_blob(&f, v3), "pinned by %s: kept", f.lock);

    /* the default gc.keep_locks is ./kbpkg.lock: in the project folder the pin holds */
    cr_expect_eq(gc_in(&f, f.tmp, NULL, "", NULL), 0);
    cr_expect(cached_blob(&f, v3));
    /* with the setting emptied (or elsewhere) nothing pins it any more */
    cr_expect_eq(gc_in(&f, f.tmp, "gc.keep_locks=", "", NULL), 1);
    cr_expect_not(cached_blob(&f, v3));

    free(keep);
    free(set_bad);
    free(bad);
    free(missing);
    free(elsewhere);
    kbi_pkg_index_free(idx);
    kb_registry_free(reg);
    kb_ctx_free(ctx);
    teardown(&f);
}

/* A hub whose v3 manifest says its layer has -1 bytes (a cap of 16 EiB once cast): install
 * refuses it naming hub, manifest and layer, downloads nothing and keeps what was installed. */
Test(cli_lock, install_refuses_a_negative_layer_size_and_keeps_what_is_installed)
{
    fixture f = setup();
    const char *v2_install[] = {"install", "kbtest/cpu-add", "--registry",
                                f.hub,     "--target",       "cpu-x86_64_v2-x86_64-linux",
                                NULL};
    kbt_run r = kbt_kbpkg(f.env, v2_install);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);

    kb_ctx *ctx = kbt_ctx();
    kb_registry *reg = NULL;
    kb_pkg_index *idx = hub_index(&f, ctx, &reg);
    const kb_pkg_entry *v3 = kbi_pkg_index_find(idx, "cpu-x86_64_v3-x86_64-linux");
    kb_registry_manifest *m = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&m, reg, "kbtest/cpu-add", v3->manifest_digest), 0);
    json_t *man = json_loadb(m->data, m->len, 0, NULL);
    json_object_set_new(json_array_get(json_object_get(man, "layers"), 0), "size",
                        json_integer(-1));
    char *bytes = json_dumps(man, JSON_COMPACT | JSON_SORT_KEYS);
    char *digest = NULL;
    char hex[65];
    kbi_sha256_hex(bytes, strlen(bytes), hex);
    char *ref = kbi_asprintf("sha256:%s", hex);
    cr_assert_eq(kbi_registry_manifest_put(&digest, reg, "kbtest/cpu-add", ref, m->media_type,
                                           bytes, strlen(bytes)),
                 0);
    kbi_registry_manifest_free(m);
    cr_assert_eq(kbi_registry_manifest_get(&m, reg, "kbtest/cpu-add", "0.1.0"), 0);
    json_t *index = json_loadb(m->data, m->len, 0, NULL);
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(index, "manifests"), i, d)
    {
        if (strcmp(json_string_value(json_object_get(d, "digest")), v3->manifest_digest) == 0) {
            json_object_set_new(d, "digest", json_string(digest));
            json_object_set_new(d, "size", json_integer((json_int_t)strlen(bytes)));
        }
    }
    char *ibytes = json_dumps(index, JSON_COMPACT | JSON_SORT_KEYS);
    cr_assert_eq(kbi_registry_manifest_put(NULL, reg, "kbtest/cpu-add", "0.1.0", m->media_type,
                                           ibytes, strlen(ibytes)),
                 0);
    kbi_registry_manifest_free(m);

    const char *install[] = {"install", "kbtest/cpu-add@0.1.0", "--registry", f.hub, NULL};
    r = kbt_kbpkg(f.env, install);
    cr_expect_eq(r.exit_code, 5, "%s", r.err);
    char *want = kbi_asprintf("%s: kbtest/cpu-add cpu-x86_64_v3-x86_64-linux manifest %s: "
                              "layers[0] (%s): size -1 is negative",
                              f.hub, digest, v3->layer_digest);
    cr_expect(strstr(r.err, want), "%s", r.err);
    kbt_run_free(&r);
    cr_expect_not(cached_blob(&f, v3->layer_digest), "nothing downloaded");
    char *v3_dir = kbi_asprintf("%s/pkgs/kbtest/cpu-add/0.1.0/cpu-x86_64_v3-x86_64-linux", f.cache);
    cr_expect_not(kbi_path_exists(v3_dir), "nothing installed");
    const char *verify[] = {"verify", "--json", NULL};
    r = kbt_kbpkg(f.env, verify);
    cr_expect_eq(r.exit_code, 0, "the v2 install is intact: %s %s", r.out, r.err);
    cr_expect(strstr(r.out, "cpu-x86_64_v2-x86_64-linux"), "%s", r.out);
    kbt_run_free(&r);
    free(v3_dir);
    free(want);
    free(ibytes);
    free(ref);
    free(digest);
    free(bytes);
    json_decref(index);
    json_decref(man);
    kbi_pkg_index_free(idx);
    kb_registry_free(reg);
    kb_ctx_free(ctx);
    teardown(&f);
}
