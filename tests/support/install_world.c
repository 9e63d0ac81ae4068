/* Test world for install reliability: build the vadd fixture once, repack and publish it. */
#define _GNU_SOURCE
#include "install_world.h"
#include "cache/store.h"
#include "registry/pkgindex.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void build_fixture(kbt_world *w)
{
    kb_ctx *ctx = kbt_ctx();
    char *src = kbt_data("builder/vadd");
    char *out = kbi_asprintf("%s/dist", w->tmp);
    char *work = kbi_asprintf("%s/work", w->tmp);
    kb_build_options bo = KB_BUILD_OPTIONS_INIT;
    const char *filters[] = {"cpu"};
    bo.targets = filters;
    bo.target_count = 1;
    bo.out_dir = out;
    bo.work_dir = work;
    bo.no_source_artifact = 1;
    kb_build_result *br = NULL;
    cr_assert_eq(kb_build(&br, ctx, src, &bo), 0, "%s", kb_ctx_last_error(ctx)->message);
    /* the lowest CPU level sorts first ('-' < '_'): it fits every x86_64 host */
    for (size_t i = 0; i < br->count; i++) {
        if (br->targets[i].status != KB_BUILD_BUILT)
            continue;
        if (!w->target || strcmp(br->targets[i].target, w->target) < 0) {
            free(w->target);
            free(w->artifact);
            w->target = kbi_strdup(br->targets[i].target);
            w->artifact = kbi_strdup(br->targets[i].artifact);
        }
    }
    cr_assert_not_null(w->artifact, "no CPU target was built");
    kb_build_result_free(br);
    free(src);
    free(out);
    free(work);
    kb_ctx_free(ctx);
}

void kbt_world_init(kbt_world *w)
{
    memset(w, 0, sizeof(*w));
    w->tmp = kbt_mkdtemp();
    w->hub = kbi_asprintf("%s/hub", w->tmp);
    w->cache = kbi_asprintf("%s/cache", w->tmp);
    w->env_cache = kbi_asprintf("KBPKG_CACHE=%s", w->cache);
    w->env_reg = kbi_asprintf("KBPKG_REGISTRY=%s", w->hub);
    w->env_cfg = kbi_asprintf("KBPKG_CONFIG_DIR=%s/config", w->tmp);
    setenv("KBPKG_CONFIG_DIR", w->env_cfg + strlen("KBPKG_CONFIG_DIR="), 1);
    setenv("KBPKG_SYSTEM_CONFIG", "/nonexistent/kbpkg.yaml", 1);
    unsetenv("KBPKG_DEVICES");
    unsetenv("KBPKG_TEST_PAUSE_AT");
    build_fixture(w);
}

void kbt_world_free(kbt_world *w)
{
    kbt_rmtree(w->tmp);
    free(w->tmp);
    free(w->hub);
    free(w->cache);
    free(w->artifact);
    free(w->target);
    free(w->env_cache);
    free(w->env_reg);
    free(w->env_cfg);
    memset(w, 0, sizeof(*w));
}

void kbt_world_use_registry(kbt_world *w, const char *url)
{
    free(w->env_reg);
    w->env_reg = kbi_asprintf("KBPKG_REGISTRY=%s", url);
}

static void sh(const char *cmd)
{
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* Rewrite kbpkg.json's name and version; returns the new text (owned). */
static char *rewrite_meta(const char *path, const char *name, const char *version)
{
    json_error_t jerr;
    json_t *meta = json_load_file(path, 0, &jerr);
    cr_assert_not_null(meta, "%s: %s", path, jerr.text);
    json_object_set_new(meta, "name", json_string(name));
    json_object_set_new(meta, "version", json_string(version));
    cr_assert_eq(json_dump_file(meta, path, JSON_INDENT(2) | JSON_SORT_KEYS), 0);
    char *text = json_dumps(meta, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(meta);
    return text;
}

char *kbt_world_publish(kbt_world *w, const char *registry, const char *name, const char *version,
                        size_t pad_bytes)
{
    char *flat = kbi_asprintf("%s-%s-%zu", name, version, pad_bytes);
    for (char *p = flat; *p; p++)
        if (*p == '/')
            *p = '_';
    char *dir = kbi_asprintf("%s/repack/%s", w->tmp, flat);
    char *out = kbi_asprintf("%s/repack/%s.tar.zst", w->tmp, flat);
    char *cmd = kbi_asprintf("mkdir -p '%s' && tar --zstd -xf '%s' -C '%s'", dir, w->artifact, dir);
    sh(cmd);
    free(cmd);
    char *meta_path = kbi_asprintf("%s/kbpkg.json", dir);
    char *meta = rewrite_meta(meta_path, name, version);
    if (pad_bytes) {
        /* base64 of random bytes: compresses to about 3/4, never to a bomb-like ratio */
        cmd = kbi_asprintf("mkdir -p '%s/include' && head -c %zu /dev/urandom | base64 -w 0 | "
                           "head -c %zu > '%s/include/pad.bin'",
                           dir, pad_bytes, pad_bytes, dir);
        sh(cmd);
        free(cmd);
    }
    cmd = kbi_asprintf("cd '%s' && tar --zstd -cf '%s' *", dir, out);
    sh(cmd);
    free(cmd);

    kb_ctx *ctx = kbt_ctx();
    kb_registry *r = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, registry), 0, "%s", kb_ctx_last_error(ctx)->message);
    kb_publish_item item = {out, w->target, NULL, meta};
    cr_assert_eq(kbi_pkg_publish(r, name, version, "vector add", &item, 1, false, NULL, NULL), 0,
                 "%s", kb_ctx_last_error(ctx)->message);
    kb_pkg_index *idx = NULL;
    cr_assert_eq(kbi_pkg_index_fetch(&idx, r, name, version, NULL), 0);
    kb_pkg_entry *e = (kb_pkg_entry *)kbi_pkg_index_find(idx, w->target);
    cr_assert_not_null(e);
    cr_assert_eq(kbi_pkg_entry_resolve(e, r, name), 0);
    char *digest = kbi_strdup(e->layer_digest);
    kbi_pkg_index_free(idx);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    free(meta);
    free(meta_path);
    free(flat);
    free(dir);
    free(out);
    return digest;
}

static const char **child_env(kbt_world *w, const char *const *extra)
{
    size_t n = 0;
    while (extra && extra[n])
        n++;
    const char **env = calloc(n + 5, sizeof(*env));
    size_t k = 0;
    env[k++] = w->env_cache;
    env[k++] = w->env_reg;
    env[k++] = w->env_cfg;
    env[k++] = "KBPKG_DEVICES=none";
    for (size_t i = 0; i < n; i++)
        env[k++] = extra[i];
    return env;
}

kbt_run kbt_world_kbpkg(kbt_world *w, const char *const *extra_env, const char *const *args)
{
    const char **env = child_env(w, extra_env);
    kbt_run r = kbt_kbpkg(env, args);
    free(env);
    return r;
}

pid_t kbt_world_spawn(kbt_world *w, const char *const *extra_env, const char *const *args)
{
    const char *bin = getenv("KBPKG_BIN");
    cr_assert(bin && *bin, "KBPKG_BIN is not set (run the tests through ctest)");
    const char **env = child_env(w, extra_env);
    size_t n = 0;
    while (args[n])
        n++;
    const char **argv = calloc(n + 2, sizeof(*argv));
    argv[0] = bin;
    for (size_t i = 0; i < n; i++)
        argv[i + 1] = args[i];
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        for (size_t i = 0; env[i]; i++)
            putenv((char *)env[i]);
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    free(argv);
    free(env);
    return pid;
}

int kbt_world_wait(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *kbt_world_installed(kbt_world *w)
{
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "cache.dir", w->cache), 0);
    kb_cache *c = NULL;
    cr_assert_eq(kbi_cache_open(&c, ctx), 0, "%s", kb_ctx_last_error(ctx)->message);
    kb_installed *list = NULL;
    size_t n = 0;
    cr_assert_eq(kbi_cache_list(&list, &n, c, NULL), 0);
    char **lines = calloc(n + 1, sizeof(*lines));
    for (size_t i = 0; i < n; i++) {
        kb_installed *p = &list[i];
        char *record = kbi_path_join(p->dir, KB_INSTALL_RECORD);
        cr_assert(kbi_path_exists(record), "listed install without its record: %s", p->dir);
        cr_assert(p->library && kbi_path_exists(p->library), "listed install without a library: %s",
                  p->dir);
        char *want = kbi_cache_pkg_dir(c, p->name, p->version, p->target);
        cr_assert_str_eq(p->dir, want, "an install is listed from a temporary folder");
        lines[i] = kbi_asprintf("%s@%s %s %s", p->name, p->version, p->target,
                                p->artifact_digest ? p->artifact_digest : "-");
        free(want);
        free(record);
    }
    qsort(lines, n, sizeof(*lines), cmp_str);
    kb_buf b = KB_BUF_INIT;
    kbi_buf_puts(&b, "");
    for (size_t i = 0; i < n; i++) {
        kbi_buf_printf(&b, "%s\n", lines[i]);
        free(lines[i]);
    }
    free(lines);
    kbi_installed_list_free(list, n);
    kbi_cache_close(c);
    kb_ctx_free(ctx);
    return kbi_buf_detach(&b);
}

static bool is_leftover(const char *name)
{
    return kbi_str_starts(name, ".kbpkg-extract-") || strstr(name, ".removing.") ||
           kbi_str_ends(name, ".part") || strstr(name, ".tmp");
}

static size_t count_leftovers(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char *p = kbi_path_join(dir, e->d_name);
        if (is_leftover(e->d_name))
            n++;
        else if (kbi_is_dir(p))
            n += count_leftovers(p);
        free(p);
    }
    closedir(d);
    return n;
}

size_t kbt_world_leftovers(kbt_world *w)
{
    return count_leftovers(w->cache);
}

size_t kbt_count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0)
        if (strstr(line, needle))
            n++;
    free(line);
    fclose(f);
    return n;
}

static bool port_answers(int port)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
    if (s >= 0)
        close(s);
    return ok;
}

void kbt_registry_enable_access_log(kbt_registry *reg)
{
    kill(reg->pid, SIGTERM);
    waitpid(reg->pid, NULL, 0);
    char *cfg = kbi_asprintf("%s/config.yml", reg->dir);
    char *cmd = kbi_asprintf("sed -i '/accesslog:/d; /disabled: true/d' '%s'", cfg);
    sh(cmd);
    free(cmd);
    char *log = kbi_asprintf("%s/registry.log", reg->dir);
    reg->pid = fork();
    cr_assert(reg->pid >= 0);
    if (reg->pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(KBT_DOCKER_REGISTRY, "docker-registry", "serve", cfg, (char *)NULL);
        _exit(127);
    }
    free(cfg);
    free(log);
    bool up = false;
    for (int i = 0; i < 200 && !up; i++) {
        struct timespec ts = {0, 50000000L};
        nanosleep(&ts, NULL);
        up = port_answers(reg->port);
    }
    cr_assert(up, "docker-registry did not come back on %s", reg->url);
}
