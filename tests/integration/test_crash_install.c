/* SIGKILL during installs: the cache always shows the old state or the whole new one, verify
 * passes, the next install succeeds, partial downloads are resumed or discarded, gc cleans up. */
#define _GNU_SOURCE
#include "install_world.h"
#include "cache/store.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Run a shell command; the format is checked against its arguments by the compiler. */
static void sh(const char *fmt, ...) KB_PRINTF(1, 2);
static void sh(const char *fmt, ...)
{
    kb_buf cmd = KB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    kbi_buf_vprintf(&cmd, fmt, ap);
    va_end(ap);
    cr_assert_eq(system(cmd.data), 0, "%s", cmd.data);
    kbi_buf_free(&cmd);
}

static void install_ok(kbt_world *w, const char *ref)
{
    const char *args[] = {"install", ref, "--allow-unsigned", NULL};
    kbt_run r = kbt_world_kbpkg(w, NULL, args);
    cr_assert_eq(r.exit_code, 0, "install %s: %s", ref, r.err);
    kbt_run_free(&r);
}

static void verify_ok(kbt_world *w, const char *when)
{
    const char *args[] = {"verify", NULL};
    kbt_run r = kbt_world_kbpkg(w, NULL, args);
    cr_assert_eq(r.exit_code, 0, "verify %s: %s%s", when, r.out, r.err);
    kbt_run_free(&r);
}

/* Save the cache as a snapshot folder and put snapshots back (NULL: an empty cache). */
static void snapshot(kbt_world *w, const char *snap)
{
    sh("rm -rf '%1$s' && cp -a '%2$s' '%1$s'", snap, w->cache);
}

static void restore(kbt_world *w, const char *snap)
{
    if (snap)
        sh("rm -rf '%1$s' && cp -a '%2$s' '%1$s'", w->cache, snap);
    else
        sh("rm -rf '%s'", w->cache);
}

/* Make the installed 0.2.0 look like an older artifact of the same version, so the next
 * install replaces it with RENAME_EXCHANGE. */
static void age_record(kbt_world *w, const char *dir)
{
    char *rec = kbi_asprintf("%s/%s", dir, KB_INSTALL_RECORD);
    char *cmd = kbi_asprintf("sed -i 's/\"artifact_digest\": \"sha256:[0-9a-f]*\"/"
                             "\"artifact_digest\": \"sha256:%064d\"/' '%s'",
                             0, rec);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    free(rec);
    (void)w;
}

typedef enum phase {
    PH_BEFORE,   /* nothing of the new version on disk yet */
    PH_DOWNLOAD, /* a .part blob */
    PH_EXTRACT,  /* an extraction folder without a record */
    PH_RECORD,   /* a complete extraction folder, not yet renamed */
    PH_RENAMED,  /* the new install is in place, a temporary folder remains */
    PH_DONE,     /* the new install is in place, nothing left over */
    PH_COUNT
} phase;

static const char *const phase_names[PH_COUNT] = {"before download", "download", "extract",
                                                  "record",          "rename",   "done"};

/* Where the killed install stood, read from what it left in the version folder. */
static phase observed_phase(const char *vdir, const char *blob, bool new_state)
{
    bool extract = false, recorded = false;
    DIR *d = opendir(vdir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!kbi_str_starts(e->d_name, ".kbpkg-extract-"))
            continue;
        extract = true;
        char *rec = kbi_asprintf("%s/%s/%s", vdir, e->d_name, KB_INSTALL_RECORD);
        recorded = recorded || kbi_path_exists(rec);
        free(rec);
    }
    if (d)
        closedir(d);
    char *part = kbi_asprintf("%s.part", blob);
    bool has_part = kbi_path_exists(part);
    free(part);
    if (new_state)
        return extract ? PH_RENAMED : PH_DONE;
    if (extract)
        return recorded ? PH_RECORD : PH_EXTRACT;
    return has_part ? PH_DOWNLOAD : PH_BEFORE;
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Wall time of one fresh install of 0.2.0 (pause: KBPKG_TEST_PAUSE_AT or NULL). */
static long timed_install_ms(kbt_world *w, const char *pause)
{
    restore(w, NULL);
    char *env_pause = pause ? kbi_asprintf("KBPKG_TEST_PAUSE_AT=%s", pause) : NULL;
    const char *env[] = {env_pause, NULL};
    const char *args[] = {"install", "kbtest/vec-add@0.2.0", NULL};
    long t0 = now_ms();
    kbt_run r = kbt_world_kbpkg(w, env, args);
    long ms = now_ms() - t0;
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    free(env_pause);
    return ms;
}

Test(crash, sigkill_at_random_points_of_install)
{
    kbt_world w;
    kbt_world_init(&w);
    char *d1 = kbt_world_publish(&w, w.hub, "kbtest/vec-add", "0.1.0", 0);
    char *d2 = kbt_world_publish(&w, w.hub, "kbtest/vec-add", "0.2.0", 0);
    char *snap_old = kbi_asprintf("%s/snap-old", w.tmp);
    char *snap_same = kbi_asprintf("%s/snap-same", w.tmp);
    install_ok(&w, "kbtest/vec-add@0.2.0");
    char *only_new = kbt_world_installed(&w);
    restore(&w, NULL);
    install_ok(&w, "kbtest/vec-add@0.1.0");
    char *only_old = kbt_world_installed(&w);
    snapshot(&w, snap_old);
    install_ok(&w, "kbtest/vec-add@0.2.0");
    char *both = kbt_world_installed(&w);
    char *vdir = kbi_asprintf("%s/pkgs/kbtest/vec-add/0.2.0", w.cache);
    char *target_dir = kbi_asprintf("%s/%s", vdir, w.target);
    age_record(&w, target_dir);
    snapshot(&w, snap_same);
    char *aged = kbt_world_installed(&w);
    cr_assert_str_neq(aged, both);
    char *blob = kbi_asprintf("%s/blobs/sha256/%s", w.cache, strchr(d2, ':') + 1);

    /* This machine's pace decides where a kill lands: time a whole install with and without
     * the pauses, and spread the kills from mid-startup to the end of the paused install. */
    long plain_ms = timed_install_ms(&w, NULL), paused_ms = timed_install_ms(&w, "all");
    long lo = plain_ms / 2, hi = paused_ms + 20;

    enum { SCENARIOS = 3, ITERATIONS = 51 };
    const char *scenario_names[SCENARIOS] = {"fresh cache", "0.1.0 installed",
                                             "0.2.0 installed (older artifact)"};
    const char *snaps[SCENARIOS] = {NULL, snap_old, snap_same};
    const char *befores[SCENARIOS] = {"", only_old, aged};
    const char *afters[SCENARIOS] = {only_new, both, both};
    unsigned tally[SCENARIOS][PH_COUNT] = {{0}};
    unsigned leftovers_seen = 0, gc_runs = 0, killed = 0;
    unsigned seed = getenv("KBT_SEED") ? (unsigned)strtoul(getenv("KBT_SEED"), NULL, 10) : 4242;
    const char *pause_env[] = {"KBPKG_TEST_PAUSE_AT=all", NULL};
    const char *install[] = {"install", "kbtest/vec-add@0.2.0", NULL};
    const char *gc[] = {"gc", NULL};
    for (int i = 0; i < ITERATIONS; i++) {
        int s = i % SCENARIOS;
        restore(&w, snaps[s]);
        long delay = lo + rand_r(&seed) % (hi - lo + 1);
        pid_t pid = kbt_world_spawn(&w, pause_env, install);
        sleep_ms(delay);
        kill(pid, SIGKILL);
        int code = kbt_world_wait(pid);
        cr_assert(code == 0 || code == 128 + SIGKILL, "iteration %d: exit %d", i, code);
        killed += code != 0;

        char *state = kbt_world_installed(&w);
        bool is_before = strcmp(state, befores[s]) == 0;
        bool is_after = strcmp(state, afters[s]) == 0;
        cr_assert(is_before || is_after,
                  "iteration %d (%s, kill after %ld ms): half an install is listed:\n%s\n"
                  "expected either:\n%s\nor:\n%s",
                  i, scenario_names[s], delay, state, befores[s], afters[s]);
        tally[s][observed_phase(vdir, blob, is_after && !is_before)]++;
        free(state);
        /* the aged record names an artifact that is not in the cache (forged above), which
         * verify rightly reports: it checks files against the artifact, not the record */
        if (!(snaps[s] == snap_same && is_before && !is_after))
            verify_ok(&w, "after a kill");

        size_t left = kbt_world_leftovers(&w);
        leftovers_seen += left > 0;
        if (left && i % 2) {
            /* gc removes what the killed process left, and nothing that is installed */
            kbt_run r = kbt_world_kbpkg(&w, NULL, gc);
            cr_assert_eq(r.exit_code, 0, "%s", r.err);
            kbt_run_free(&r);
            gc_runs++;
            cr_expect_eq(kbt_world_leftovers(&w), 0, "iteration %d: gc left temporary files", i);
            state = kbt_world_installed(&w);
            cr_expect(!strcmp(state, befores[s]) || !strcmp(state, afters[s]), "%s", state);
            free(state);
        }
        install_ok(&w, "kbtest/vec-add@0.2.0");
        state = kbt_world_installed(&w);
        cr_assert_str_eq(state, afters[s], "iteration %d: the install after a kill", i);
        free(state);
    }
    fprintf(stderr,
            "crash: %d iterations (install %ld ms, paused %ld ms, kills at %ld-%ld ms), %u killed, "
            "%u left temporary files, %u gc runs\n",
            ITERATIONS, plain_ms, paused_ms, lo, hi, killed, leftovers_seen, gc_runs);
    unsigned seen_phases = 0;
    for (int s = 0; s < SCENARIOS; s++) {
        fprintf(stderr, "crash: %-34s", scenario_names[s]);
        for (int p = 0; p < PH_COUNT; p++) {
            fprintf(stderr, " %s=%u", phase_names[p], tally[s][p]);
            seen_phases |= tally[s][p] ? 1u << p : 0;
        }
        fprintf(stderr, "\n");
    }
    /* the pauses spread the kills: most phases must have been hit at least once */
    cr_expect(__builtin_popcount(seen_phases) >= 4, "kills landed in too few phases: %x",
              seen_phases);
    free(only_new);
    free(only_old);
    free(both);
    free(aged);
    free(vdir);
    free(target_dir);
    free(blob);
    free(snap_old);
    free(snap_same);
    free(d1);
    free(d2);
    kbt_world_free(&w);
}

/* Leftovers of every kind: hidden from list and verify, removed by gc with a count. */
Test(crash, gc_removes_what_killed_processes_left)
{
    kbt_world w;
    kbt_world_init(&w);
    char *digest = kbt_world_publish(&w, w.hub, "kbtest/vec-add", "0.1.0", 0);
    install_ok(&w, "kbtest/vec-add");
    char *installed = kbt_world_installed(&w);
    char *vdir = kbi_asprintf("%s/pkgs/kbtest/vec-add/0.1.0", w.cache);
    /* a killed extraction, a killed uninstall (still holding a whole record) and downloads */
    sh("mkdir -p '%s/.kbpkg-extract-AbC123/lib' && echo x > '%s/.kbpkg-extract-AbC123/lib/libx.so'",
       vdir, vdir);
    char *src = kbi_asprintf("%s/%s", vdir, w.target);
    char *removing = kbi_asprintf("%s.removing.99999", src);
    sh("cp -a '%s' '%s'", src, removing);
    char *part = kbi_asprintf("%s/blobs/sha256/%064d.part", w.cache, 1);
    kbt_write(part, "half a blob");
    char *tmpblob = kbi_asprintf("%s/blobs/sha256/%064d.tmp-Zz9Yy8", w.cache, 2);
    kbt_write(tmpblob, "a one-shot write");
    char *empty = kbi_asprintf("%s/pkgs/kbtest/other/9.9.9", w.cache);
    cr_assert_eq(kbi_mkdir_p(NULL, empty, 0755), 0);
    cr_assert_eq(kbt_world_leftovers(&w), 4);

    char *now = kbt_world_installed(&w);
    cr_expect_str_eq(now, installed, "leftovers are never listed as installs");
    free(now);
    verify_ok(&w, "with leftovers");
    const char *gc[] = {"gc", "--json", NULL};
    kbt_run r = kbt_world_kbpkg(&w, NULL, gc);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"removed\": 4"), "two folders and two partial blobs: %s", r.out);
    kbt_run_free(&r);
    cr_expect_eq(kbt_world_leftovers(&w), 0);
    cr_expect(!kbi_path_exists(empty), "empty folders go too");
    now = kbt_world_installed(&w);
    cr_expect_str_eq(now, installed, "gc keeps what is installed");
    free(now);
    char *blob = kbi_asprintf("%s/blobs/sha256/%s", w.cache, strchr(digest, ':') + 1);
    cr_expect(kbi_path_exists(blob), "the installed artifact's blob stays");
    verify_ok(&w, "after gc");
    free(blob);
    free(empty);
    free(part);
    free(tmpblob);
    free(src);
    free(removing);
    free(vdir);
    free(installed);
    free(digest);
    kbt_world_free(&w);
}

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Wait until the download writes (the .part grows past what an earlier kill left, or the
 * process ended), then kill it. */
static off_t kill_during_download(pid_t pid, const char *part, const char *blob, long extra_ms)
{
    off_t start = file_size(part);
    for (int i = 0; i < 20000; i++) {
        if (file_size(part) > start || kbi_path_exists(blob))
            break;
        if (kill(pid, 0) != 0)
            break;
        struct timespec ts = {0, 500000L};
        nanosleep(&ts, NULL);
    }
    sleep_ms(extra_ms);
    kill(pid, SIGKILL);
    kbt_world_wait(pid);
    return file_size(part);
}

static void assert_blob_whole_or_absent(const char *blob, const char *digest)
{
    if (!kbi_path_exists(blob))
        return;
    char hex[65];
    cr_assert_eq(kbi_sha256_file(NULL, blob, hex, NULL), 0);
    cr_assert_str_eq(hex, strchr(digest, ':') + 1, "a blob under its digest name is whole");
}

Test(crash, sigkill_during_large_blob_download)
{
    if (!kbt_registry_available())
        kbt_skip_missing("docker-registry is not installed");
    kbt_world w;
    kbt_world_init(&w);
    kbt_registry reg;
    kbt_registry_start(&reg, NULL, NULL);
    kbt_registry_enable_access_log(&reg);
    kbt_world_use_registry(&w, reg.url);
    enum { PAD = 26 << 20 }; /* base64 text: a blob of about 20 MiB */
    char *digest = kbt_world_publish(&w, reg.url, "kbtest/vec-add", "0.3.0", PAD);
    char *blob = kbi_asprintf("%s/blobs/sha256/%s", w.cache, strchr(digest, ':') + 1);
    char *part = kbi_asprintf("%s.part", blob);
    char *log = kbi_asprintf("%s/registry.log", reg.dir);
    char *get = kbi_asprintf("GET /v2/kbtest/vec-add/blobs/%s ", digest);
    const char *install[] = {"install", "kbtest/vec-add", "--allow-unsigned", NULL};

    unsigned seed = 7;
    char *stored = kbt_registry_blob_data(&reg, digest);
    off_t blob_size = file_size(stored);
    free(stored);
    cr_assert(blob_size > PAD / 2);
    unsigned parts_grown = 0;
    off_t sizes[6] = {0};
    int kills = 0;
    for (int i = 0; i < 6; i++) {
        off_t before = file_size(part);
        pid_t pid = kbt_world_spawn(&w, NULL, install);
        off_t size = kill_during_download(pid, part, blob, rand_r(&seed) % 40);
        sizes[kills++] = size;
        parts_grown += size > before;
        cr_assert(size <= blob_size, "a .part never holds more than the blob: %lld > %lld",
                  (long long)size, (long long)blob_size);
        assert_blob_whole_or_absent(blob, digest);
        char *state = kbt_world_installed(&w);
        cr_assert(state[0] == '\0' || strstr(state, "kbtest/vec-add@0.3.0"), "%s", state);
        free(state);
        verify_ok(&w, "after a kill during download");
        if (kbi_path_exists(blob))
            break; /* one got through: the rest of the test needs a .part, start over */
    }
    size_t gets_before = kbt_count_lines(log, get);
    size_t resumed_before = kbt_count_lines(log, "\" 206 ");
    bool had_part = file_size(part) > 0;
    install_ok(&w, "kbtest/vec-add");
    assert_blob_whole_or_absent(blob, digest);
    cr_assert(kbi_path_exists(blob));
    cr_expect(!kbi_path_exists(part), "the .part became the blob");
    verify_ok(&w, "after the download finished");
    if (had_part)
        cr_expect_eq(kbt_count_lines(log, "\" 206 "), resumed_before + 1,
                     "a .part is resumed with a Range request");

    /* a .part of foreign bytes: resumed, found wrong by its digest, downloaded again */
    const char *uninstall[] = {"uninstall", "kbtest/vec-add", NULL};
    kbt_run r = kbt_world_kbpkg(&w, NULL, uninstall);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    const char *gc[] = {"gc", NULL};
    r = kbt_world_kbpkg(&w, NULL, gc);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    cr_assert(!kbi_path_exists(blob));
    /* a .part holding a true prefix (what a cut leaves): resumed with a Range request */
    char *stored_blob = kbt_registry_blob_data(&reg, digest);
    sh("head -c 5000000 '%s' > '%s'", stored_blob, part);
    free(stored_blob);
    size_t ranged = kbt_count_lines(log, "\" 206 ");
    install_ok(&w, "kbtest/vec-add");
    assert_blob_whole_or_absent(blob, digest);
    cr_expect_eq(kbt_count_lines(log, "\" 206 "), ranged + 1, "the prefix was resumed");
    verify_ok(&w, "after a resumed download");
    r = kbt_world_kbpkg(&w, NULL, uninstall);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    r = kbt_world_kbpkg(&w, NULL, gc);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);

    sh("head -c 1048576 /dev/urandom > '%s'", part);
    size_t gets_bad = kbt_count_lines(log, get);
    install_ok(&w, "kbtest/vec-add");
    assert_blob_whole_or_absent(blob, digest);
    cr_expect(kbi_path_exists(blob));
    cr_expect_eq(kbt_count_lines(log, get), gets_bad + 2,
                 "one resumed GET that fails the digest, one whole GET");
    verify_ok(&w, "after a bad .part");
    fprintf(stderr, "crash: large blob (%lld bytes): %d kills, %u grew the .part (sizes:",
            (long long)blob_size, kills, parts_grown);
    for (int i = 0; i < kills; i++)
        fprintf(stderr, " %lld", (long long)sizes[i]);
    fprintf(stderr, "); GETs before the final install %zu, resumed %s\n", gets_before,
            had_part ? "yes" : "no");
    kbt_registry_stop(&reg);
    free(get);
    free(log);
    free(part);
    free(blob);
    free(digest);
    kbt_world_free(&w);
}
