/* Progress of a real `kbpkg install` from a layout registry and of `kbpkg build -j2`: plain
 * lines through a pipe, a live display (rate, ETA, redraws) under a pseudo-terminal, nothing
 * with -q, no progress in --json. The layer blob is served through a FIFO fed slowly, so the
 * download lasts long enough to be drawn while it runs. */
#define _GNU_SOURCE
#include "kbtest.h"
#include "registry/pkgindex.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PKG "kbtest/cpu-add"
#define TARGET "cpu-x86_64_v3-x86_64-linux"

typedef struct fixture {
    char *tmp, *pkg, *hub, *blob_path, *layer_label;
    kb_buf blob; /* the layer's bytes, fed through the FIFO */
    int runs;    /* a fresh cache per run */
} fixture;

static fixture setup(void)
{
    fixture f = {0};
    f.tmp = kbt_mkdtemp();
    f.pkg = kbi_asprintf("%s/pkg", f.tmp);
    f.hub = kbi_asprintf("%s/hub", f.tmp);
    char *src = kbt_data("publish/cpu-add");
    char *cmd = kbi_asprintf("cp -r '%s' '%s'", src, f.pkg);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
    free(src);
    char *cfg = kbi_asprintf("XDG_CONFIG_HOME=%s/config", f.tmp);
    const char *env[] = {cfg, "KBPKG_DEVICES=none", "KBPKG_CPU=x86_64_v3", NULL};
    const char *args[] = {"-q", "publish", f.pkg, "--registry", f.hub, NULL};
    kbt_run r = kbt_kbpkg(env, args);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    free(cfg);
    /* where the layer the install will fetch lives */
    kb_ctx *ctx = kbt_ctx();
    kb_registry *reg = NULL;
    kb_pkg_index *idx = NULL;
    cr_assert_eq(kb_registry_open(&reg, ctx, f.hub), 0);
    cr_assert_eq(kbi_pkg_index_fetch(&idx, reg, PKG, "0.1.0", NULL), 0);
    kb_pkg_entry *e = (kb_pkg_entry *)kbi_pkg_index_find(idx, TARGET);
    cr_assert_not_null(e);
    cr_assert_eq(kbi_pkg_entry_resolve(e, reg, PKG), 0);
    f.blob_path = kbi_asprintf("%s/blobs/sha256/%s", f.hub, e->layer_digest + 7);
    f.layer_label = kbi_asprintf(PKG " %s", e->target); /* downloads are named by target */
    cr_assert_eq(kbi_read_file(ctx, f.blob_path, &f.blob), 0);
    cr_assert_gt(f.blob.len, 1000);
    kbi_pkg_index_free(idx);
    kb_registry_free(reg);
    kb_ctx_free(ctx);
    return f;
}

static void teardown(fixture *f)
{
    kbt_rmtree(f->tmp);
    free(f->tmp);
    free(f->pkg);
    free(f->hub);
    free(f->blob_path);
    free(f->layer_label);
    kbi_buf_free(&f->blob);
}

/* Replace the layer blob by a FIFO and feed its bytes in 10 pieces, 150 ms apart. */
static pid_t slow_blob(fixture *f)
{
    unlink(f->blob_path);
    cr_assert_eq(mkfifo(f->blob_path, 0644), 0, "mkfifo %s: %s", f->blob_path, strerror(errno));
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(f->blob_path, O_WRONLY);
        size_t piece = f->blob.len / 10 + 1;
        for (size_t off = 0; fd >= 0 && off < f->blob.len; off += piece) {
            size_t n = f->blob.len - off < piece ? f->blob.len - off : piece;
            if (write(fd, f->blob.data + off, n) != (ssize_t)n)
                _exit(1);
            struct timespec ts = {0, 150 * 1000000L};
            nanosleep(&ts, NULL);
        }
        _exit(0);
    }
    return pid;
}

/* Put the plain blob file back (a FIFO nobody reads would block the next reader). */
static void end_slow_blob(fixture *f, pid_t writer)
{
    kill(writer, SIGKILL);
    waitpid(writer, NULL, 0);
    unlink(f->blob_path);
    FILE *out = fopen(f->blob_path, "wb");
    cr_assert_not_null(out);
    fwrite(f->blob.data, 1, f->blob.len, out);
    fclose(out);
}

/* The env of one run: a fresh cache each time, so every install downloads. */
static void run_env(fixture *f, char **cache, char **cfg)
{
    *cache = kbi_asprintf("KBPKG_CACHE=%s/cache%d", f->tmp, ++f->runs);
    *cfg = kbi_asprintf("XDG_CONFIG_HOME=%s/config", f->tmp);
}

/* Run kbpkg on a pseudo-terminal of 100 x 30: everything it writes (stdout and stderr). */
static char *run_pty(fixture *f, const char *extra_env, const char *const *args, int *exit_code)
{
    char *cache, *cfg;
    run_env(f, &cache, &cfg);
    const char *env[] = {cache, cfg, "KBPKG_DEVICES=none", "KBPKG_CPU=x86_64_v3", extra_env, NULL};
    kbt_run r = kbt_kbpkg_pty(env, args, 100, NULL);
    *exit_code = r.exit_code;
    free(cache);
    free(cfg);
    return r.out;
}

/* Run kbpkg with stderr on a pipe and stdout in a file. */
static kbt_run run_pipe(fixture *f, const char *const *args)
{
    char *cache, *cfg;
    run_env(f, &cache, &cfg);
    const char *bin = getenv("KBPKG_BIN");
    size_t n = 0;
    while (args[n])
        n++;
    const char **argv = calloc(n + 2, sizeof(*argv));
    argv[0] = bin;
    for (size_t i = 0; i < n; i++)
        argv[i + 1] = args[i];
    int err[2];
    cr_assert_eq(pipe(err), 0);
    FILE *out = tmpfile();
    cr_assert_not_null(out);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        putenv(cache);
        putenv(cfg);
        putenv("KBPKG_DEVICES=none");
        putenv("KBPKG_CPU=x86_64_v3");
        setenv("TERM", "xterm", 1);
        dup2(fileno(out), 1);
        dup2(err[1], 2);
        close(err[0]);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(err[1]);
    free(argv);
    kb_buf e = KB_BUF_INIT;
    char chunk[4096];
    ssize_t got;
    while ((got = read(err[0], chunk, sizeof(chunk))) > 0)
        kbi_buf_append(&e, chunk, (size_t)got);
    close(err[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    kbt_run r = {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), NULL, NULL};
    kb_buf o = KB_BUF_INIT;
    rewind(out);
    while ((got = (ssize_t)fread(chunk, 1, sizeof(chunk), out)) > 0)
        kbi_buf_append(&o, chunk, (size_t)got);
    fclose(out);
    kbi_buf_grow(&o, 0);
    kbi_buf_grow(&e, 0);
    r.out = kbi_buf_detach(&o);
    r.err = kbi_buf_detach(&e);
    free(cache);
    free(cfg);
    return r;
}

/* The visible columns of the longest line that shows a live "fetching"/"building" line. */
static size_t widest_live_line(const char *out)
{
    size_t widest = 0;
    for (const char *s = out; *s;) {
        size_t n = strcspn(s, "\r\n");
        size_t cols = 0;
        bool live = false;
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '\033') { /* skip a CSI sequence */
                i++;
                while (i < n && !(s[i] >= '@' && s[i] <= '~' && s[i] != '['))
                    i++;
                continue;
            }
            cols++;
        }
        char *line = kbi_strndup(s, n);
        live = strstr(line, "fetching") || strstr(line, "building");
        free(line);
        if (live && cols > widest)
            widest = cols;
        s += n;
        while (*s == '\r' || *s == '\n')
            s++;
    }
    return widest;
}

Test(progress_cli, terminal_shows_live_rate_and_eta_then_a_summary)
{
    fixture f = setup();
    pid_t writer = slow_blob(&f);
    const char *args[] = {"install", PKG, "--registry", f.hub, NULL};
    int code;
    char *out = run_pty(&f, NULL, args, &code);
    end_slow_blob(&f, writer);
    cr_expect_eq(code, 0, "%s", out);
    char *live = kbi_asprintf("\033[36mfetching\033[0m %s [", f.layer_label);
    cr_expect(strstr(out, live), "a live line with a bar: %s", out);
    cr_expect(strstr(out, " B/s ETA 0:0") || strstr(out, " KiB/s ETA 0:0"), "rate and ETA: %s",
              out);
    cr_expect(strstr(out, "\r\033[1A"), "redrawn in place: %s", out);
    char *summary = kbi_asprintf("\033[32mfetched\033[0m %s ", f.layer_label);
    const char *at = strstr(out, summary);
    cr_expect(at, "the summary: %s", out);
    const char *in = at ? strstr(at, " KiB in ") : NULL;
    cr_expect(in && strtod(in + 8, NULL) >= 1.0, "the feed took over a second: %s", out);
    cr_expect(strstr(out, "installed " PKG " 0.1.0 " TARGET), "%s", out);
    cr_expect_leq(widest_live_line(out), 99, "live lines fit 100 columns: %s", out);
    free(live);
    free(summary);
    free(out);

    /* NO_COLOR and --no-color: the same display without colors */
    const char *no_color_env[] = {"NO_COLOR=1", NULL};
    for (int i = 0; i < 2; i++) {
        writer = slow_blob(&f);
        const char *flag_args[] = {"install", PKG, "--registry", f.hub, "--no-color", NULL};
        out = run_pty(&f, i == 0 ? no_color_env[0] : NULL, i == 0 ? args : flag_args, &code);
        end_slow_blob(&f, writer);
        cr_expect_eq(code, 0, "%s", out);
        char *plain_live = kbi_asprintf("fetching %s [", f.layer_label);
        cr_expect(strstr(out, plain_live), "%s", out);
        cr_expect(strstr(out, "/s ETA"), "%s", out);
        cr_expect_not(strstr(out, "\033[3"), "no color: %s", out);
        free(plain_live);
        free(out);
    }
    teardown(&f);
}

Test(progress_cli, quiet_and_json_print_no_progress_on_a_terminal)
{
    fixture f = setup();
    pid_t writer = slow_blob(&f);
    const char *quiet[] = {"-q", "install", PKG, "--registry", f.hub, NULL};
    int code;
    char *out = run_pty(&f, NULL, quiet, &code);
    end_slow_blob(&f, writer);
    cr_expect_eq(code, 0);
    cr_expect_str_eq(out, "", "-q prints nothing at all");
    free(out);

    writer = slow_blob(&f);
    const char *json[] = {"--json", "install", PKG, "--registry", f.hub, NULL};
    out = run_pty(&f, NULL, json, &code);
    end_slow_blob(&f, writer);
    cr_expect_eq(code, 0, "%s", out);
    cr_expect_not(strstr(out, "fetch"), "%s", out);
    cr_expect_not(strchr(out, '\033'), "%s", out);
    json_error_t jerr;
    json_t *root = json_loads(out, 0, &jerr);
    cr_expect_not_null(root, "only the JSON document: %s (%s)", out, jerr.text);
    json_decref(root);
    free(out);
    teardown(&f);
}

Test(progress_cli, pipe_gets_one_plain_line_per_finished_download)
{
    fixture f = setup();
    /* served slowly: a local 4 KiB read takes under a millisecond, too short for a rate */
    pid_t writer = slow_blob(&f);
    const char *args[] = {"install", PKG, "--registry", f.hub, NULL};
    kbt_run r = run_pipe(&f, args);
    end_slow_blob(&f, writer);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    char *line = kbi_asprintf("\nfetched %s ", f.layer_label);
    const char *at = strstr(r.err, line);
    cr_expect(at, "%s", r.err);
    if (at) {
        const char *end = strchr(at + 1, '\n');
        char *whole = kbi_strndup(at + 1, end ? (size_t)(end - at - 1) : strlen(at + 1));
        cr_expect(strstr(whole, " KiB in ") && strstr(whole, "/s"), "bytes, time, rate: %s", whole);
        free(whole);
    }
    cr_expect_not(strstr(r.err, "fetching"), "nothing while it runs: %s", r.err);
    cr_expect_not(strchr(r.err, '\033'), "no escape codes: %s", r.err);
    cr_expect_not(strstr(r.out, "fetched"), "progress never goes to stdout: %s", r.out);
    cr_expect(strstr(r.out, "installed " PKG " 0.1.0 " TARGET), "%s", r.out);
    kbt_run_free(&r);
    free(line);

    const char *quiet[] = {"-q", "install", PKG, "--registry", f.hub, NULL};
    r = run_pipe(&f, quiet);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect_str_eq(r.err, "");
    cr_expect_str_eq(r.out, "");
    kbt_run_free(&r);
    teardown(&f);
}

/* "<prefix><size> KiB in <seconds>": the summary line of a built target names its size (the
 * exact size follows what an artifact ships, so only its form is pinned). */
static bool built_line_with_size(const char *out, const char *prefix)
{
    const char *at = strstr(out, prefix);
    if (!at)
        return false;
    at += strlen(prefix);
    char *end = NULL;
    double size = strtod(at, &end);
    return end != at && size > 0 && strncmp(end, " KiB in ", 8) == 0;
}

Test(progress_cli, parallel_build_has_a_line_per_target)
{
    fixture f = setup();
    char *out_dir = kbi_asprintf("%s/out", f.tmp);
    const char *args[] = {"build", f.pkg, "-j2", "--out", out_dir, NULL};
    int code;
    char *out = run_pty(&f, NULL, args, &code);
    cr_expect_eq(code, 0, "%s", out);
    cr_expect(strstr(out, "building\033[0m " PKG " cpu-x86_64_v2-x86_64-linux "), "%s", out);
    cr_expect(strstr(out, "building\033[0m " PKG " cpu-x86_64_v3-x86_64-linux "), "%s", out);
    cr_expect(strstr(out, "building\033[0m " PKG " [") && strstr(out, "/2 targets"), "%s", out);
    cr_expect(built_line_with_size(out, "built\033[0m " PKG " cpu-x86_64_v2-x86_64-linux "), "%s",
              out);
    cr_expect(built_line_with_size(out, "built\033[0m " PKG " cpu-x86_64_v3-x86_64-linux "), "%s",
              out);
    cr_expect_leq(widest_live_line(out), 99, "%s", out);
    free(out);

    kbt_run r = run_pipe(&f, args);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(built_line_with_size(r.err, "built " PKG " cpu-x86_64_v2-x86_64-linux "), "%s",
              r.err);
    cr_expect(built_line_with_size(r.err, "built " PKG " cpu-x86_64_v3-x86_64-linux "), "%s",
              r.err);
    cr_expect_not(strchr(r.err, '\033'), "%s", r.err);
    cr_expect_not(strstr(r.err, "building"), "%s", r.err);
    kbt_run_free(&r);

    /* -v: the compiler command lines, above the live lines */
    const char *verbose[] = {"-v", "build", f.pkg, "-j2", "--out", out_dir, NULL};
    r = run_pipe(&f, verbose);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "-march=x86-64-v2") && strstr(r.err, "-march=x86-64-v3"), "%s", r.err);
    kbt_run_free(&r);
    free(out_dir);
    teardown(&f);
}

Test(progress_cli, verbose_install_names_the_files_read)
{
    fixture f = setup();
    const char *args[] = {"-v", "install", PKG, "--registry", f.hub, NULL};
    kbt_run r = run_pipe(&f, args);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    char *read_line = kbi_asprintf("kbpkg: debug: read %s", f.blob_path);
    cr_expect(strstr(r.err, read_line), "%s", r.err);
    free(read_line);
    kbt_run_free(&r);
    teardown(&f);
}
