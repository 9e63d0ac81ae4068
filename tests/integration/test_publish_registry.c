/* Publish, farm, lock and sync through the public API against a real docker-registry. */
#include "kbtest.h"
#include "registry_harness.h"

#include <stdlib.h>
#include <string.h>

typedef struct session {
    kbt_registry srv;
    kb_ctx *ctx;
    char *tmp, *pkg, *ref, *lockfile;
} session;

static void open_session(session *s)
{
    memset(s, 0, sizeof(*s));
    if (!kbt_registry_available())
        kbt_skip_missing("docker-registry is not installed (%s)", KBT_DOCKER_REGISTRY);
    kbt_registry_start(&s->srv, NULL, NULL);
    s->ctx = kbt_ctx();
    s->tmp = kbt_mkdtemp();
    s->pkg = kbi_asprintf("%s/pkg", s->tmp);
    s->ref = kbi_asprintf("oci://127.0.0.1:%d/kbtest", s->srv.port);
    s->lockfile = kbi_asprintf("%s/kbpkg.lock", s->tmp);
    char *cache = kbi_asprintf("%s/cache", s->tmp);
    char *config = kbi_asprintf("%s/config", s->tmp);
    cr_assert_eq(kb_ctx_set(s->ctx, "cache.dir", cache), 0);
    cr_assert_eq(kb_ctx_set(s->ctx, "config.dir", config), 0); /* keys/ and credentials */
    cr_assert_eq(kb_ctx_set(s->ctx, "registry", s->ref), 0);
    cr_assert_eq(kb_ctx_set(s->ctx, "probe.devices", "none"), 0);
    cr_assert_eq(kb_ctx_set(s->ctx, "probe.cpu", "x86_64_v3"), 0);
    cr_assert_eq(kb_ctx_set(s->ctx, "net.retries", "1"), 0);
    char *src = kbt_data("publish/cpu-add");
    char *cmd = kbi_asprintf("cp -r '%s' '%s'", src, s->pkg);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
    free(src);
    free(cache);
    free(config);
}

static void close_session(session *s)
{
    kb_ctx_free(s->ctx);
    kbt_registry_stop(&s->srv);
    kbt_rmtree(s->tmp);
    free(s->tmp);
    free(s->pkg);
    free(s->ref);
    free(s->lockfile);
}

static const char *msg(const session *s)
{
    return kb_ctx_last_error(s->ctx)->message;
}

static size_t count_status(const kb_publish_report *r, const char *status)
{
    size_t n = 0;
    for (size_t i = 0; i < kb_publish_report_count(r); i++) {
        const kb_report_row *row = NULL;
        kb_publish_report_row(&row, r, i);
        n += strcmp(kb_status_name(row->status), status) == 0;
    }
    return n;
}

static char *publish(session *s, const char *status, size_t expect_count)
{
    kb_publish_options o = KB_PUBLISH_OPTIONS_INIT;
    kb_publish_report *r = NULL;
    cr_assert_eq(kb_publish(&r, s->ctx, s->pkg, &o), 0, "%s", msg(s));
    cr_expect_eq(count_status(r, status), expect_count, "%zu items '%s'", expect_count, status);
    cr_expect_str_eq(kb_publish_report_registry(r), s->ref);
    char *digest = kbi_strdup(kb_publish_report_index_digest(r));
    kb_publish_report_free(r);
    return digest;
}

Test(publish_registry, publish_lock_sync_tamper_offline)
{
    session s;
    open_session(&s);
    /* With a default key, publish signs the index and sync's signature check passes. */
    kb_trust_key *key = NULL;
    cr_assert_eq(kb_trust_key_generate(&key, s.ctx, "publisher"), 0, "%s", msg(&s));
    kb_trust_key_free(key);
    char *d1 = publish(&s, "published", 3);
    char *d2 = publish(&s, "unchanged", 3);
    cr_expect_str_eq(d2, d1, "republishing the same bytes keeps the index");
    kb_registry *reg = NULL;
    kb_trust_verdict verdict;
    cr_assert_eq(kb_registry_open(&reg, s.ctx, s.ref), 0, "%s", msg(&s));
    cr_assert_eq(kb_trust_verify_index(&verdict, s.ctx, reg, "kbtest/cpu-add", "0.1.0", d1), 0);
    cr_expect_eq(verdict.status, KB_TRUST_SIGNED_TRUSTED, "the publish hook signed: %s",
                 verdict.detail);
    kb_trust_verdict_clear(&verdict);
    kb_registry_free(reg);

    const char *refs[] = {"kbtest/cpu-add@0.1"};
    kb_lockfile *lock = NULL;
    cr_assert_eq(kb_lockfile_resolve(&lock, s.ctx, refs, 1, NULL), 0, "%s", msg(&s));
    cr_assert_eq(kb_lockfile_write(s.ctx, lock, s.lockfile), 0, "%s", msg(&s));
    const char *index = NULL;
    cr_assert_eq(kb_lockfile_package(NULL, NULL, NULL, &index, NULL, lock, 0), 0);
    cr_expect_str_eq(index, d1);
    kb_lockfile_free(lock);

    cr_assert_eq(kb_lockfile_load(&lock, s.ctx, s.lockfile), 0, "%s", msg(&s));
    kb_sync_report *rep = NULL;
    cr_assert_eq(kb_sync(&rep, s.ctx, lock, NULL), 0, "%s", msg(&s));
    const kb_report_row *row = NULL;
    cr_assert_eq(kb_sync_report_row(&row, rep, 0), 0);
    cr_expect_eq(kb_sync_report_row(&row, rep, 1), KB_ERR_NOT_FOUND);
    const char *target = row->target, *dir = row->dir, *digest = row->digest;
    cr_expect_str_eq(row->package, "kbtest/cpu-add");
    cr_expect_str_eq(target, "cpu-x86_64_v3-x86_64-linux");
    cr_expect_eq(row->status, KB_STATUS_INSTALLED);
    const char *pinned = NULL;
    for (size_t i = 0; i < 3; i++) {
        const char *t, *layer;
        kb_lockfile_artifact(&t, NULL, &layer, NULL, lock, 0, i);
        if (strcmp(t, target) == 0)
            pinned = layer;
    }
    cr_expect_str_eq(digest, pinned);
    char *record = kbi_asprintf("%s/kbpkg-install.json", dir);
    kb_buf rec = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, record, &rec), 0);
    char *field = kbi_asprintf("\"artifact_digest\": \"%s\"", pinned);
    cr_expect(strstr(rec.data, field), "%s", rec.data);
    /* the record names the registry so that it reopens: namespace included (it used to keep
     * only "http://host:port", where kbtest/cpu-add does not exist) */
    char *where = kbi_asprintf("http://127.0.0.1:%d/kbtest", s.srv.port);
    char *reg_field = kbi_asprintf("\"registry\": \"%s\"", where);
    cr_expect(strstr(rec.data, reg_field), "%s", rec.data);
    char **tags = NULL;
    size_t ntags = 0;
    cr_assert_eq(kb_registry_open(&reg, s.ctx, where), 0, "%s", msg(&s));
    cr_expect_eq(kb_registry_list_tags(&tags, &ntags, reg, "kbtest/cpu-add"), 0, "%s", msg(&s));
    bool has_version = false;
    for (size_t i = 0; i < ntags; i++)
        has_version = has_version || strcmp(tags[i], "0.1.0") == 0;
    cr_expect(has_version, "the reopened registry lists kbtest/cpu-add's 0.1.0 (%zu tags)", ntags);
    kb_strings_free(tags, ntags);
    kb_registry_free(reg);
    free(reg_field);
    free(where);
    kb_sync_report_free(rep);

    /* Offline after a sync: nothing to do, no connection (the registry is stopped too). */
    kbt_registry_stop(&s.srv);
    cr_assert_eq(kb_ctx_set(s.ctx, "offline", "true"), 0);
    rep = NULL;
    cr_assert_eq(kb_sync(&rep, s.ctx, lock, NULL), 0, "%s", msg(&s));
    cr_assert_eq(kb_sync_report_row(&row, rep, 0), 0);
    cr_expect_eq(row->status, KB_STATUS_ALREADY_INSTALLED);
    kb_sync_report_free(rep);

    /* Offline with nothing installed: says what is missing. */
    char *pkgs = kbi_asprintf("%s/cache/pkgs", s.tmp);
    kbt_rmtree(pkgs);
    rep = NULL;
    cr_expect_eq(kb_sync(&rep, s.ctx, lock, NULL), KB_ERR_OFFLINE);
    char *want = kbi_asprintf("offline: kbtest/cpu-add@0.1.0 cpu-x86_64_v3-x86_64-linux (%s) is "
                              "not installed",
                              pinned);
    cr_expect(kbi_str_starts(msg(&s), want), "%s", msg(&s));

    kb_lockfile_free(lock);
    free(want);
    free(pkgs);
    free(field);
    free(record);
    kbi_buf_free(&rec);
    free(d1);
    free(d2);
    close_session(&s);
}

/* The registry serves other bytes for the pinned layer: refused, naming package and pin. */
Test(publish_registry, sync_refuses_a_tampered_blob)
{
    session s;
    open_session(&s);
    char *d1 = publish(&s, "published", 3);
    const char *refs[] = {"kbtest/cpu-add"};
    kb_lockfile *lock = NULL;
    /* unsigned from a remote registry: lock refuses to pin it as sync refuses to install it */
    cr_expect_eq(kb_lockfile_resolve(&lock, s.ctx, refs, 1, NULL), KB_ERR_SIGNATURE);
    kb_lock_options lo = KB_LOCK_OPTIONS_INIT;
    lo.allow_unsigned = 1;
    cr_assert_eq(kb_lockfile_resolve(&lock, s.ctx, refs, 1, &lo), 0, "%s", msg(&s));
    const char *layer = NULL;
    for (size_t i = 0; i < 3; i++) {
        const char *t, *l;
        kb_lockfile_artifact(&t, NULL, &l, NULL, lock, 0, i);
        if (strcmp(t, "cpu-x86_64_v3-x86_64-linux") == 0)
            layer = l;
    }
    cr_assert_not_null(layer);
    /* No signing key here: a remote registry's unsigned index is refused by default. */
    kb_sync_report *rep = NULL;
    cr_expect_eq(kb_sync(&rep, s.ctx, lock, NULL), KB_ERR_SIGNATURE, "%s", msg(&s));
    cr_expect(strstr(msg(&s), "kbtest/cpu-add"), "%s", msg(&s));
    char *blob = kbt_registry_blob_data(&s.srv, layer);
    kbt_write(blob, "other bytes under the pinned digest");
    kb_sync_options so = KB_SYNC_OPTIONS_INIT;
    so.allow_unsigned = 1;
    cr_expect_eq(kb_sync(&rep, s.ctx, lock, &so), KB_ERR_DIGEST);
    cr_expect(kbi_str_starts(msg(&s), "kbtest/cpu-add@0.1.0 cpu-x86_64_v3-x86_64-linux (pinned "),
              "%s", msg(&s));
    cr_expect(strstr(msg(&s), layer), "%s", msg(&s));
    cr_expect_null(rep);
    free(blob);
    free(d1);
    kb_lockfile_free(lock);
    close_session(&s);
}

Test(publish_registry, farm_twice_publishes_once)
{
    session s;
    open_session(&s);
    const char *paths[] = {s.pkg};
    kb_farm_report *r = NULL;
    cr_assert_eq(kb_farm(&r, s.ctx, paths, 1, NULL), 0, "%s", msg(&s));
    cr_expect_eq(kb_farm_report_count_status(r, KB_STATUS_PUBLISHED), 2);
    cr_expect_eq(kb_farm_report_count_status(r, KB_STATUS_FAILED), 0);
    kb_farm_report_free(r);
    cr_assert_eq(kb_farm(&r, s.ctx, paths, 1, NULL), 0, "%s", msg(&s));
    cr_expect_eq(kb_farm_report_count_status(r, KB_STATUS_PUBLISHED), 0);
    cr_expect_eq(kb_farm_report_count_status(r, KB_STATUS_ALREADY_THERE), 2);
    const kb_report_row *row = NULL;
    cr_assert_eq(kb_farm_report_row(&row, r, 0), 0);
    cr_expect_str_eq(row->package, "kbtest/cpu-add");
    cr_expect_str_eq(row->version, "0.1.0");
    cr_expect_str_eq(row->target, "cpu-x86_64_v2-x86_64-linux");
    cr_expect_eq(row->status, KB_STATUS_ALREADY_THERE);
    cr_expect_str_eq(kb_status_name(row->status), "already there");
    kb_farm_report_free(r);
    close_session(&s);
}
