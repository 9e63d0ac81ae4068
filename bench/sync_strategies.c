/* Bench: ways to make a freshly written folder of files durable before a rename (the install's
 * last step), on the file system of DIR. */
/*
 * Each round writes FILES files of SIZE bytes into a new folder under DIR and times only the
 * sync, for every strategy in turn (the order rotates per round); medians over ROUNDS:
 *   fsync-each       write all, then fsync every file one after the other (kbpkg before)
 *   writeback+fsync  sync_file_range(WRITE) every 8 MiB while a file is written and when it is
 *                    closed, then fsync every file and the folder (kbpkg now: archive/extract.c
 *                    start_writeback, cache/store.c sync_install)
 *   two-pass         write all, then sync_file_range(WRITE) on every file, then fsync every
 *                    file and the folder
 *   syncfs           write all, then one syncfs(2) (also flushes everyone else's dirty data)
 * The write time is printed too: starting writeback early moves some cost into it.
 *
 *   kbpkg_bench_sync_strategies [-n FILES] [-s SIZE] [-r ROUNDS] DIR
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { FSYNC_EACH, WRITEBACK, TWO_PASS, SYNCFS, STRATEGIES };
static const char *const names[] = {"fsync-each", "writeback+fsync", "two-pass", "syncfs"};
#define STEP ((size_t)8 << 20)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, const char *path)
{
    perror(path);
    fprintf(stderr, "kbpkg_bench_sync_strategies: cannot %s\n", what);
    exit(1);
}

static void file_path(char *out, size_t size, const char *dir, unsigned long i)
{
    if (snprintf(out, size, "%s/f%lu", dir, i) >= (int)size)
        die("name a file in", dir);
}

static void fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0)
        die("fsync", path);
    close(fd);
}

/* Returns the sync time; *write_ms gets the write time. */
static double one(const char *dir, int strategy, unsigned long files, const char *buf, size_t size,
                  double *write_ms)
{
    char path[4096];
    if (mkdir(dir, 0755) != 0)
        die("create", dir);
    double t0 = now_ms();
    for (unsigned long i = 0; i < files; i++) {
        file_path(path, sizeof(path), dir, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
            die("create", path);
        for (size_t done = 0; done < size;) {
            size_t n = size - done < STEP ? size - done : STEP;
            if (write(fd, buf + done, n) != (ssize_t)n)
                die("write", path);
            done += n;
            if (strategy == WRITEBACK && n == STEP)
                sync_file_range(fd, (off_t)(done - n), (off_t)n, SYNC_FILE_RANGE_WRITE);
        }
        if (strategy == WRITEBACK)
            sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        close(fd);
    }
    double t1 = now_ms();
    if (strategy == SYNCFS) {
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || syncfs(fd) != 0)
            die("syncfs", dir);
        close(fd);
    } else {
        for (unsigned long i = 0; strategy == TWO_PASS && i < files; i++) {
            file_path(path, sizeof(path), dir, i);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                die("open", path);
            sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
            close(fd);
        }
        for (unsigned long i = 0; i < files; i++) {
            file_path(path, sizeof(path), dir, i);
            fsync_path(path);
        }
        fsync_path(dir);
    }
    double t2 = now_ms();
    *write_ms = t1 - t0;
    return t2 - t1;
}

static void remove_dir(const char *dir, unsigned long files)
{
    char path[4096];
    for (unsigned long i = 0; i < files; i++) {
        file_path(path, sizeof(path), dir, i);
        unlink(path);
    }
    rmdir(dir);
}

int main(int argc, char **argv)
{
    unsigned long files = 2000, rounds = 5;
    size_t size = 4096;
    int opt;
    while ((opt = getopt(argc, argv, "n:s:r:")) != -1) {
        if (opt == 'n')
            files = strtoul(optarg, NULL, 10);
        else if (opt == 's')
            size = strtoul(optarg, NULL, 10);
        else if (opt == 'r')
            rounds = strtoul(optarg, NULL, 10);
        else
            return 2;
    }
    if (argc - optind != 1 || !files || !rounds) {
        fprintf(stderr, "usage: kbpkg_bench_sync_strategies [-n FILES] [-s SIZE] [-r ROUNDS] "
                        "DIR\n");
        return 2;
    }
    char *buf = malloc(size ? size : 1);
    for (size_t i = 0; i < size; i++)
        buf[i] = (char)(i * 131 + 7);
    double *sync_ms[STRATEGIES], *write_ms[STRATEGIES];
    for (int s = 0; s < STRATEGIES; s++) {
        sync_ms[s] = calloc(rounds, sizeof(double));
        write_ms[s] = calloc(rounds, sizeof(double));
    }
    char dir[4096];
    for (unsigned long r = 0; r < rounds; r++)
        for (int k = 0; k < STRATEGIES; k++) {
            int s = (int)((r + (unsigned long)k) % STRATEGIES);
            snprintf(dir, sizeof(dir), "%s/sync-bench-%ld-%d", argv[optind], (long)getpid(), s);
            sync(); /* start each from a clean page cache: no one else's backlog */
            sync_ms[s][r] = one(dir, s, files, buf, size, &write_ms[s][r]);
            remove_dir(dir, files);
        }
    printf("%lu files of %zu bytes, %lu rounds, medians in ms\n\n", files, size, rounds);
    printf("| strategy | write | sync | write + sync |\n|---|---|---|---|\n");
    double *both = calloc(rounds, sizeof(double));
    for (int s = 0; s < STRATEGIES; s++) {
        for (unsigned long r = 0; r < rounds; r++)
            both[r] = write_ms[s][r] + sync_ms[s][r];
        printf("| %s | %.1f | %.1f | %.1f |\n", names[s], median(write_ms[s], rounds),
               median(sync_ms[s], rounds), median(both, rounds));
    }
    free(both);
    for (int s = 0; s < STRATEGIES; s++) {
        free(sync_ms[s]);
        free(write_ms[s]);
    }
    free(buf);
    return 0;
}
