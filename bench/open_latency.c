/* Bench: warm kb_kernel_open latency against plain dlopen+dlsym of the same installed library. */
/*
 * Uses the public API only. Three measurements, interleaved so that noise hits both sides alike:
 *   fresh   one open in a new process (exec of this program): the library is not mapped yet,
 *           and kb_kernel_open also pays its once-per-ctx host probe;
 *   cycle   open + sym + close in a loop: dlclose unmaps, so every dlopen maps and relocates;
 *   held    the same while another handle keeps the library loaded: dlopen is a refcount bump,
 *           so what is left is kbpkg's own work (ref parse, cache listing, ranking, checks).
 *
 *   kbpkg_bench_open_latency [-n ITERATIONS] [-f FRESH_PROCESSES] [-d DEVICES] CACHE REF SYMBOL
 */
#include "kbpkg/kbpkg.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct settings {
    const char *cache, *ref, *symbol, *devices;
    unsigned long iterations, fresh;
} settings;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(double *v, size_t n, double p)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return v[(size_t)(p * (double)(n - 1) + 0.5)];
}

static kb_ctx *make_ctx(const settings *s)
{
    kb_ctx *ctx = NULL;
    if (kb_ctx_new(&ctx, NULL) != 0 || kb_ctx_set(ctx, "cache.dir", s->cache) != 0 ||
        kb_ctx_set(ctx, "probe.devices", s->devices) != 0) {
        fprintf(stderr, "kbpkg_bench_open_latency: cannot set up a ctx\n");
        exit(1);
    }
    return ctx;
}

static kb_kernel *open_kernel(kb_ctx *ctx, const settings *s)
{
    kb_kernel *k = NULL;
    if (kb_kernel_open(&k, ctx, s->ref, KB_OPEN_DEFAULT) != 0) {
        fprintf(stderr, "kbpkg_bench_open_latency: %s\n", kb_ctx_last_error(ctx)->message);
        exit(1);
    }
    if (!kb_kernel_sym(k, s->symbol)) {
        fprintf(stderr, "kbpkg_bench_open_latency: %s has no export %s\n", s->ref, s->symbol);
        exit(1);
    }
    return k;
}

static void *open_plain(const char *library, const char *symbol)
{
    void *h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!h || !dlsym(h, symbol)) {
        fprintf(stderr, "kbpkg_bench_open_latency: %s\n", dlerror());
        exit(1);
    }
    return h;
}

/* The installed lib/lib*.so of what kb_kernel_open picks: dlopen gets exactly that file. */
static char *library_of(kb_ctx *ctx, const settings *s)
{
    kb_kernel *k = open_kernel(ctx, s);
    size_t dirlen = strlen(kb_kernel_path(k)) + sizeof("/lib");
    char *dir = malloc(dirlen);
    snprintf(dir, dirlen, "%s/lib", kb_kernel_path(k));
    kb_kernel_close(k);
    DIR *d = opendir(dir);
    char *found = NULL;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n > 3 && strcmp(e->d_name + n - 3, ".so") == 0) {
            size_t len = dirlen + n + 1;
            found = malloc(len);
            snprintf(found, len, "%s/%s", dir, e->d_name);
        }
    }
    if (d)
        closedir(d);
    free(dir);
    if (!found) {
        fprintf(stderr, "kbpkg_bench_open_latency: no lib/*.so installed for %s\n", s->ref);
        exit(1);
    }
    return found;
}

/* Child side of "fresh": one open from a cold process, its microseconds on stdout. */
static int once(const settings *s, const char *mode, const char *library)
{
    double t0 = now_us();
    if (strcmp(mode, "kbpkg") == 0) {
        kb_ctx *ctx = make_ctx(s);
        kb_kernel *k = open_kernel(ctx, s);
        printf("%.1f\n", now_us() - t0);
        kb_kernel_close(k);
        kb_ctx_free(ctx);
    } else {
        void *h = open_plain(library, s->symbol);
        printf("%.1f\n", now_us() - t0);
        dlclose(h);
    }
    return 0;
}

/* Run this program again with --once MODE and read back its number. */
static double fresh_process(const settings *s, const char *self, const char *mode,
                            const char *library)
{
    int fd[2];
    if (pipe(fd) != 0)
        exit(1);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        execl("/proc/self/exe", self, "--once", mode, library, s->devices, s->cache, s->ref,
              s->symbol, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char buf[64] = {0};
    ssize_t n = read(fd[0], buf, sizeof(buf) - 1);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "kbpkg_bench_open_latency: the --once %s child failed\n", mode);
        exit(1);
    }
    return strtod(buf, NULL);
}

static void report(const char *what, double *kb, double *dl, size_t n)
{
    double kb_med = percentile(kb, n, 0.5), dl_med = percentile(dl, n, 0.5);
    printf("| %-6s | %8zu | %10.1f | %10.1f | %10.1f | %10.1f | %6.1fx |\n", what, n, kb_med,
           percentile(kb, n, 0.9), dl_med, percentile(dl, n, 0.9), kb_med / dl_med);
}

static void run_fresh(const settings *s, const char *self, const char *library)
{
    double *kb = calloc(s->fresh, sizeof(double)), *dl = calloc(s->fresh, sizeof(double));
    for (unsigned long i = 0; i < s->fresh; i++) {
        kb[i] = fresh_process(s, self, "kbpkg", library);
        dl[i] = fresh_process(s, self, "dlopen", library);
    }
    report("fresh", kb, dl, s->fresh);
    free(kb);
    free(dl);
}

/* Open/close loops; with keep_loaded another handle pins the library in memory. */
static void run_loop(const settings *s, kb_ctx *ctx, const char *library, int keep_loaded)
{
    void *pin = keep_loaded ? open_plain(library, s->symbol) : NULL;
    double *kb = calloc(s->iterations, sizeof(double));
    double *dl = calloc(s->iterations, sizeof(double));
    for (unsigned long i = 0; i < s->iterations; i++) {
        double t0 = now_us();
        kb_kernel *k = open_kernel(ctx, s);
        kb_kernel_close(k);
        double t1 = now_us();
        dlclose(open_plain(library, s->symbol));
        double t2 = now_us();
        kb[i] = t1 - t0;
        dl[i] = t2 - t1;
    }
    report(keep_loaded ? "held" : "cycle", kb, dl, s->iterations);
    free(kb);
    free(dl);
    if (pin)
        dlclose(pin);
}

int main(int argc, char **argv)
{
    settings s = {.devices = "none", .iterations = 2000, .fresh = 31};
    /* the child side of "fresh": --once MODE LIBRARY DEVICES CACHE REF SYMBOL */
    if (argc == 8 && strcmp(argv[1], "--once") == 0) {
        s = (settings){.devices = argv[4], .cache = argv[5], .ref = argv[6], .symbol = argv[7]};
        return once(&s, argv[2], argv[3]);
    }
    int opt;
    while ((opt = getopt(argc, argv, "n:f:d:")) != -1) {
        if (opt == 'n')
            s.iterations = strtoul(optarg, NULL, 10);
        else if (opt == 'f')
            s.fresh = strtoul(optarg, NULL, 10);
        else if (opt == 'd')
            s.devices = optarg;
        else
            return 2;
    }
    if (argc - optind != 3 || s.iterations == 0 || s.fresh == 0) {
        fprintf(stderr, "usage: kbpkg_bench_open_latency [-n ITERATIONS] [-f FRESH] "
                        "[-d DEVICES] CACHE REF SYMBOL\n");
        return 2;
    }
    s.cache = argv[optind];
    s.ref = argv[optind + 1];
    s.symbol = argv[optind + 2];

    kb_ctx *ctx = make_ctx(&s);
    char *library = library_of(ctx, &s);
    printf("library %s, devices %s\n\n", library, s.devices);
    printf("| case   | runs     | kbpkg med  | kbpkg p90  | dlopen med | dlopen p90 | ratio  |\n");
    printf("|--------|----------|------------|------------|------------|------------|--------|\n");
    run_fresh(&s, argv[0], library);
    run_loop(&s, ctx, library, 0);
    run_loop(&s, ctx, library, 1);
    printf("\n(microseconds; kbpkg = kb_kernel_open + kb_kernel_sym [+ close in loops], dlopen = "
           "dlopen + dlsym [+ dlclose]; fresh includes kb_ctx_new and the host probe)\n");
    free(library);
    kb_ctx_free(ctx);
    return 0;
}
