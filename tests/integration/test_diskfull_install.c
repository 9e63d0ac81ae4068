/* Disk full and file size limits during install: a clear error naming the path, a cache that
 * still verifies with nothing half-installed, and a working install once there is room. */
#define _GNU_SOURCE
#include "install_world.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static char *slurp(int fd)
{
    kb_buf b = KB_BUF_INIT;
    char chunk[4096];
    ssize_t n;
    lseek(fd, 0, SEEK_SET);
    while ((n = read(fd, chunk, sizeof(chunk))) > 0)
        kbi_buf_append(&b, chunk, (size_t)n);
    kbi_buf_grow(&b, 0);
    return kbi_buf_detach(&b);
}

/* kbpkg install with RLIMIT_FSIZE set in the child and SIGXFSZ ignored, so a write past the
 * limit fails with EFBIG instead of killing the process. limit 0: no limit. */
static kbt_run install_limited(kbt_world *w, rlim_t limit)
{
    const char *bin = getenv("KBPKG_BIN");
    cr_assert(bin && *bin, "KBPKG_BIN is not set (run the tests through ctest)");
    char tmpl[] = "/tmp/kbt-errXXXXXX";
    int err_fd = mkstemp(tmpl);
    cr_assert(err_fd >= 0);
    unlink(tmpl);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        putenv(w->env_cache);
        putenv(w->env_reg);
        putenv(w->env_cfg);
        putenv("KBPKG_DEVICES=none");
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(err_fd, 2);
        if (limit) {
            signal(SIGXFSZ, SIG_IGN);
            struct rlimit rl = {limit, limit};
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
                _exit(126);
        }
        execl(bin, bin, "install", "kbtest/vec-add", (char *)NULL);
        _exit(127);
    }
    kbt_run r = {kbt_world_wait(pid), kbi_strdup(""), slurp(err_fd)};
    close(err_fd);
    return r;
}

static void assert_cache_usable(kbt_world *w, const char *when)
{
    const char *verify[] = {"verify", NULL};
    kbt_run r = kbt_world_kbpkg(w, NULL, verify);
    cr_assert_eq(r.exit_code, 0, "verify %s: %s%s", when, r.out, r.err);
    kbt_run_free(&r);
    char *state = kbt_world_installed(w);
    cr_assert_str_eq(state, "", "nothing is listed as installed %s", when);
    free(state);
}

static void fill(const char *path, size_t bytes)
{
    char *cmd = kbi_asprintf("head -c %zu /dev/zero > '%s'", bytes, path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
}

/* base64 text of 2 MiB: a blob of about 1.5 MiB that extracts to a 2 MiB file */
enum { PAD = 2 << 20, KIB = 1024 };

Test(diskfull, tmpfs_cache_runs_out_of_space)
{
    kbt_world w;
    kbt_world_init(&w);
    cr_assert_eq(kbi_mkdir_p(NULL, w.cache, 0755), 0);
    if (mount("tmpfs", w.cache, "tmpfs", 0, "size=5m") != 0) {
        int err = errno;
        kbt_world_free(&w);
        cr_skip("cannot mount a 5 MiB tmpfs as the cache (%s): needs root or CAP_SYS_ADMIN; "
                "the RLIMIT_FSIZE test still runs",
                strerror(err));
    }
    kbt_world_publish(&w, w.hub, "kbtest/vec-add", "0.1.0", PAD);
    char *filler = kbi_asprintf("%s/filler", w.cache);

    /* about 1 MiB free: the download itself does not fit */
    fill(filler, 4 * 1024 * KIB);
    kbt_run r = install_limited(&w, 0);
    cr_expect(r.exit_code != 0 && r.exit_code < 128, "exit %d: %s", r.exit_code, r.err);
    cr_expect(strcasestr(r.err, "no space left on device") && strstr(r.err, w.cache) &&
                  strstr(r.err, ".part"),
              "names the download it could not write: %s", r.err);
    fprintf(stderr, "diskfull: exit %d: %s", r.exit_code, r.err);
    kbt_run_free(&r);
    assert_cache_usable(&w, "after the download ran out of space");
    cr_expect_eq(kbt_world_leftovers(&w), 0, "a .part that hit a full disk is not kept");

    /* about 2.5 MiB free: the blob fits, its extraction does not */
    unlink(filler);
    fill(filler, 2560 * KIB);
    r = install_limited(&w, 0);
    cr_expect(r.exit_code != 0 && r.exit_code < 128, "exit %d: %s", r.exit_code, r.err);
    cr_expect(strcasestr(r.err, "no space left on device") && strstr(r.err, "pad.bin"),
              "names the file it could not extract: %s", r.err);
    fprintf(stderr, "diskfull: exit %d: %s", r.exit_code, r.err);
    kbt_run_free(&r);
    assert_cache_usable(&w, "after extraction ran out of space");
    cr_expect_eq(kbt_world_leftovers(&w), 0, "the extraction folder is removed");

    /* room again: the install succeeds (the verified blob is reused) */
    unlink(filler);
    r = install_limited(&w, 0);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    char *state = kbt_world_installed(&w);
    cr_expect(strstr(state, "kbtest/vec-add@0.1.0"), "%s", state);
    free(state);
    const char *verify[] = {"verify", NULL};
    r = kbt_world_kbpkg(&w, NULL, verify);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    free(filler);
    umount2(w.cache, MNT_DETACH);
    kbt_world_free(&w);
}

Test(diskfull, file_size_limit_gives_a_clear_error)
{
    kbt_world w;
    kbt_world_init(&w);
    kbt_world_publish(&w, w.hub, "kbtest/vec-add", "0.1.0", PAD);

    /* 512 KiB: the download stops with EFBIG */
    kbt_run r = install_limited(&w, 512 * KIB);
    cr_expect(r.exit_code != 0 && r.exit_code < 128, "exit %d: %s", r.exit_code, r.err);
    cr_expect(strstr(r.err, "file size limit reached") && strstr(r.err, w.cache) &&
                  strstr(r.err, ".part"),
              "names the download and the limit: %s", r.err);
    fprintf(stderr, "diskfull: exit %d: %s", r.exit_code, r.err);
    kbt_run_free(&r);
    assert_cache_usable(&w, "after the download hit the limit");

    /* 1.75 MiB: the blob (resumed) fits, the 2 MiB file inside does not */
    r = install_limited(&w, 1792 * KIB);
    cr_expect(r.exit_code != 0 && r.exit_code < 128, "exit %d: %s", r.exit_code, r.err);
    cr_expect(strstr(r.err, "file size limit reached") && strstr(r.err, "pad.bin"),
              "names the file and the limit: %s", r.err);
    fprintf(stderr, "diskfull: exit %d: %s", r.exit_code, r.err);
    kbt_run_free(&r);
    assert_cache_usable(&w, "after extraction hit the limit");
    cr_expect_eq(kbt_world_leftovers(&w), 0, "the extraction folder is removed");

    r = install_limited(&w, 0);
    cr_expect_eq(r.exit_code, 0, "without the limit the install succeeds: %s", r.err);
    kbt_run_free(&r);
    char *state = kbt_world_installed(&w);
    cr_expect(strstr(state, "kbtest/vec-add@0.1.0"), "%s", state);
    free(state);
    kbt_world_free(&w);
}
