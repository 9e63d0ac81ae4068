/* Bench: resolution time against a layout registry of many packages, and compat ranking speed. */
/*
 * For each package count N (default 10 and 10000) it writes a layout registry of N packages,
 * each one version whose index names 20 targets plus the source, then times
 * kb_resolve_package for one package in the middle (fake devices through probe.devices), the
 * counts interleaved run by run. It also times the pure ranking of 200,000 candidates with
 * kbi_compat_check_host: 10,000 packages x 20 targets.
 *
 * Generation: package 0 is published with kbi_pkg_publish (so its index, manifests and
 * index.json entries are exactly what kbpkg writes); packages 1..N-1 reuse its per-target
 * manifests and get their own index blob (name annotation changed), and index.json is written
 * once. Publishing 10,000 packages one by one would rewrite index.json 20,000 times.
 * Internal headers on purpose: kbi_pkg_publish and kbi_compat_check_host are not public.
 *
 *   kbpkg_bench_resolve_scale [-p 10,10000] [-r RUNS] [-d DEVICES] WORKDIR
 */
#include "model/target.h"
#include "kbpkg/kbpkg.h"
#include "registry/pkgindex.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TARGET_COUNT 20
#define MAX_COUNTS 8
#define RANK_PACKAGES 10000

/* A spread like a real hub's: SASS per arch, PTX, ROCm code objects, CPU levels. */
static const char *const bench_targets[TARGET_COUNT] = {
    "cuda13-sm_75-x86_64-linux",      "cuda13-sm_80-x86_64-linux",
    "cuda13-sm_86-x86_64-linux",      "cuda13-sm_89-x86_64-linux",
    "cuda13-sm_90-x86_64-linux",      "cuda13-sm_90a-x86_64-linux",
    "cuda13-sm_100-x86_64-linux",     "cuda13-sm_100a-x86_64-linux",
    "cuda13-sm_120-x86_64-linux",     "cuda13-compute_75-x86_64-linux",
    "cuda13-compute_80-x86_64-linux", "cuda13-compute_90-x86_64-linux",
    "rocm5-gfx906-x86_64-linux",      "rocm5-gfx90a-x86_64-linux",
    "rocm5-gfx1030-x86_64-linux",     "rocm5-gfx1100-x86_64-linux",
    "rocm6-gfx942-x86_64-linux",      "cpu-x86_64_v2-x86_64-linux",
    "cpu-x86_64_v3-x86_64-linux",     "cpu-x86_64_v4-x86_64-linux",
};

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

static void die(kb_ctx *ctx, const char *what)
{
    fprintf(stderr, "kbpkg_bench_resolve_scale: %s: %s\n", what,
            ctx ? kb_ctx_last_error(ctx)->message : "failed");
    exit(1);
}

static void package_name(char *buf, size_t size, size_t i)
{
    snprintf(buf, size, "bench/pkg-%05zu", i);
}

/* Package 0 through the real publish path: 20 targets and a source, one small blob. */
static void publish_template(kb_ctx *ctx, const char *hub, const char *workdir)
{
    char blob[4096];
    snprintf(blob, sizeof(blob), "%s/fake.tar.zst", workdir);
    FILE *f = fopen(blob, "wb");
    if (!f || fputs("resolution never downloads this", f) < 0 || fclose(f) != 0)
        die(NULL, blob);
    kb_publish_item items[TARGET_COUNT + 1];
    for (size_t i = 0; i < TARGET_COUNT; i++)
        items[i] = (kb_publish_item){blob, bench_targets[i], NULL, "{}"};
    items[TARGET_COUNT] = (kb_publish_item){blob, KB_SOURCE_TARGET, NULL, "{}"};
    kb_registry *r = NULL;
    char name[64];
    package_name(name, sizeof(name), 0);
    if (kb_registry_open(&r, ctx, hub) != 0 ||
        kbi_pkg_publish(r, name, "1.0.0", "bench", items, TARGET_COUNT + 1, false, NULL, NULL))
        die(ctx, "publishing the template package");
    kb_registry_free(r);
}

static json_t *load_json(const char *path)
{
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) {
        fprintf(stderr, "kbpkg_bench_resolve_scale: %s:%d:%d: %s\n", path, err.line, err.column,
                err.text);
        exit(1);
    }
    return j;
}

/* Write bytes as blobs/sha256/<hex>; digest_out gets "sha256:<hex>". */
static void write_blob(const char *hub, const char *bytes, size_t len, char *digest_out,
                       size_t digest_size)
{
    char hex[65], path[4096];
    kbi_sha256_hex(bytes, len, hex);
    snprintf(digest_out, digest_size, "sha256:%s", hex);
    snprintf(path, sizeof(path), "%s/blobs/sha256/%s", hub, hex);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, len, f) != len || fclose(f) != 0)
        die(NULL, path);
}

/* A copy of index.json entry e for name:tag pointing at digest/size. */
static json_t *tag_entry(json_t *e, const char *name, const char *tag, const char *digest,
                         size_t size)
{
    json_t *copy = json_deep_copy(e);
    char ref[128];
    snprintf(ref, sizeof(ref), "%s:%s", name, tag);
    json_object_set_new(copy, "digest", json_string(digest));
    json_object_set_new(copy, "size", json_integer((json_int_t)size));
    json_object_set_new(json_object_get(copy, "annotations"), "org.opencontainers.image.ref.name",
                        json_string(ref));
    return copy;
}

static json_t *template_index(const char *hub, json_t *entry)
{
    const char *digest = json_string_value(json_object_get(entry, "digest"));
    char path[4096];
    snprintf(path, sizeof(path), "%s/blobs/sha256/%s", hub, digest + strlen("sha256:"));
    return load_json(path);
}

/* Packages 1..n-1: their own index blob each, tags "1.0.0" and "latest", one index.json. */
static void clone_packages(const char *hub, size_t n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/index.json", hub);
    json_t *layout = load_json(path);
    json_t *manifests = json_object_get(layout, "manifests");
    json_t *entry = json_array_get(manifests, 0);
    json_t *index = template_index(hub, entry);
    for (size_t i = 1; i < n; i++) {
        char name[64], digest[80];
        package_name(name, sizeof(name), i);
        json_object_set_new(json_object_get(index, "annotations"), "dev.kbpkg.name",
                            json_string(name));
        char *bytes = json_dumps(index, JSON_COMPACT | JSON_SORT_KEYS);
        size_t len = strlen(bytes);
        write_blob(hub, bytes, len, digest, sizeof(digest));
        free(bytes);
        json_array_append_new(manifests, tag_entry(entry, name, "1.0.0", digest, len));
        json_array_append_new(manifests, tag_entry(entry, name, "latest", digest, len));
    }
    if (json_dump_file(layout, path, JSON_COMPACT) != 0)
        die(NULL, path);
    json_decref(index);
    json_decref(layout);
}

static void make_hub(kb_ctx *ctx, const char *workdir, size_t n, char *hub, size_t hub_size)
{
    snprintf(hub, hub_size, "%s/hub-%zu", workdir, n);
    struct stat st;
    if (stat(hub, &st) == 0) {
        printf("reusing %s\n", hub);
        return;
    }
    double t0 = now_ms();
    publish_template(ctx, hub, workdir);
    clone_packages(hub, n);
    printf("generated %s: %zu packages x %d targets in %.1f s\n", hub, n, TARGET_COUNT,
           (now_ms() - t0) / 1e3);
}

static double time_resolve(kb_ctx *ctx, const char *hub, size_t n, char *chosen, size_t size)
{
    char name[64];
    package_name(name, sizeof(name), n / 2);
    kb_install_options o = KB_INSTALL_OPTIONS_INIT;
    o.registry = hub;
    o.allow_unsigned = 1;
    o.resolve_only = 1;
    kb_install_result *res = NULL;
    double t0 = now_ms();
    if (kb_resolve_package(&res, ctx, name, &o) != 0)
        die(ctx, name);
    double ms = now_ms() - t0;
    snprintf(chosen, size, "%s", kb_install_result_target(res));
    kb_install_result_free(res);
    return ms;
}

/* The best of 20 targets for each of 10,000 packages: 200,000 kbi_compat_check_host calls. */
static double time_ranking(kb_ctx *ctx, const kb_host *host, int parse_each, int *best_score)
{
    kb_target parsed[TARGET_COUNT];
    for (size_t t = 0; t < TARGET_COUNT; t++)
        if (kbi_target_parse(ctx, &parsed[t], bench_targets[t]) != 0)
            die(ctx, bench_targets[t]);
    kb_compat_opts opts = {0};
    double t0 = now_ms();
    int total = 0;
    for (size_t p = 0; p < RANK_PACKAGES; p++) {
        int best = -1;
        for (size_t t = 0; t < TARGET_COUNT; t++) {
            kb_target one;
            if (parse_each && kbi_target_parse(ctx, &one, bench_targets[t]) != 0)
                die(ctx, bench_targets[t]);
            kb_compat c;
            kbi_compat_check_host(&c, parse_each ? &one : &parsed[t], host, &opts);
            if (c.fit != KB_FIT_NONE && c.score > best)
                best = c.score;
        }
        total += best;
    }
    *best_score = total / RANK_PACKAGES;
    return now_ms() - t0;
}

static size_t parse_counts(const char *text, size_t *counts)
{
    size_t n = 0;
    for (const char *p = text; *p && n < MAX_COUNTS;) {
        uint64_t v = 0;
        char item[32];
        size_t len = strcspn(p, ",");
        snprintf(item, sizeof(item), "%.*s", (int)len, p);
        if (!kbi_parse_u64(item, &v) || v == 0) {
            fprintf(stderr, "kbpkg_bench_resolve_scale: bad package count '%s'\n", item);
            exit(2);
        }
        counts[n++] = (size_t)v;
        p += len + (p[len] == ',');
    }
    return n;
}

static void bench_resolve(kb_ctx *ctx, const char *workdir, const size_t *counts, size_t nc,
                          unsigned runs)
{
    char hubs[MAX_COUNTS][4096], chosen[MAX_COUNTS][128] = {""};
    double *ms = calloc((size_t)runs * nc, sizeof(double));
    for (size_t c = 0; c < nc; c++)
        make_hub(ctx, workdir, counts[c], hubs[c], sizeof(hubs[c]));
    for (unsigned r = 0; r < runs; r++)
        for (size_t c = 0; c < nc; c++)
            ms[c * runs + r] = time_resolve(ctx, hubs[c], counts[c], chosen[c], sizeof(chosen[c]));
    printf("\n| packages | runs | resolve median ms | vs %zu packages | chosen |\n", counts[0]);
    printf("|---|---|---|---|---|\n");
    double base = median(ms, runs);
    for (size_t c = 0; c < nc; c++) {
        double m = median(ms + c * runs, runs);
        printf("| %zu | %u | %.2f | %.2fx | %s |\n", counts[c], runs, m, m / base, chosen[c]);
    }
    free(ms);
}

static void bench_ranking(kb_ctx *ctx, const char *devices, unsigned runs)
{
    kb_host host = {.cpu_arch = "x86_64", .cpu_level = "x86_64_v3", .os = "linux"};
    snprintf(host.glibc, sizeof(host.glibc), "2.36");
    if (kbi_devices_parse(ctx, &host.devices, &host.device_count, devices) != 0)
        die(ctx, devices);
    double *pre = calloc(runs, sizeof(double)), *each = calloc(runs, sizeof(double));
    int score = 0;
    for (unsigned r = 0; r < runs; r++) {
        pre[r] = time_ranking(ctx, &host, 0, &score);
        each[r] = time_ranking(ctx, &host, 1, &score);
    }
    unsigned n = RANK_PACKAGES * TARGET_COUNT;
    double a = median(pre, runs), b = median(each, runs);
    printf("\n| ranking %u candidates (devices %s) | runs | median ms | ns per candidate |\n", n,
           devices);
    printf("|---|---|---|---|\n");
    printf("| kbi_compat_check_host, targets parsed once | %u | %.2f | %.0f |\n", runs, a,
           a * 1e6 / n);
    printf("| kbi_target_parse + kbi_compat_check_host | %u | %.2f | %.0f |\n", runs, b,
           b * 1e6 / n);
    printf("(mean best score %d)\n", score);
    free(pre);
    free(each);
    kbi_devices_free(host.devices);
}

int main(int argc, char **argv)
{
    const char *counts_text = "10,10000", *devices = "sm_86";
    unsigned runs = 15;
    int opt;
    while ((opt = getopt(argc, argv, "p:r:d:")) != -1) {
        if (opt == 'p')
            counts_text = optarg;
        else if (opt == 'r')
            runs = (unsigned)strtoul(optarg, NULL, 10);
        else if (opt == 'd')
            devices = optarg;
        else
            return 2;
    }
    if (argc - optind != 1 || runs == 0) {
        fprintf(stderr, "usage: kbpkg_bench_resolve_scale [-p 10,10000] [-r RUNS] "
                        "[-d DEVICES] WORKDIR\n");
        return 2;
    }
    const char *workdir = argv[optind];
    size_t counts[MAX_COUNTS];
    size_t nc = parse_counts(counts_text, counts);
    kb_ctx *ctx = NULL;
    kb_ctx_options co = KB_CTX_OPTIONS_INIT;
    co.no_config_files = 1;
    if (kb_ctx_new(&ctx, &co) != 0 || kb_ctx_set(ctx, "probe.devices", devices) != 0)
        die(ctx, "ctx");
    char cache[4096];
    snprintf(cache, sizeof(cache), "%s/cache", workdir);
    if (kb_ctx_set(ctx, "cache.dir", cache) != 0)
        die(ctx, "cache.dir");
    bench_resolve(ctx, workdir, counts, nc, runs);
    bench_ranking(ctx, devices, runs);
    kb_ctx_free(ctx);
    return 0;
}
