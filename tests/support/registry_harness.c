/* Starts docker-registry on a free loopback port, and runs scripted HTTP servers for auth tests. */
#define _GNU_SOURCE
#include "registry_harness.h"
#include "kbtest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

bool kbt_registry_available(void)
{
    return access(KBT_DOCKER_REGISTRY, X_OK) == 0;
}

int kbt_free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(s >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t len = sizeof(a);
    getsockname(s, (struct sockaddr *)&a, &len);
    close(s);
    return ntohs(a.sin_port);
}

static bool port_answers(int port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(s);
    return ok;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void write_htpasswd(const char *path, const char *user, const char *password)
{
    char *htpasswd = NULL;
    if (kbi_which(&htpasswd, "htpasswd") != 0)
        kbt_skip_missing("htpasswd (apache2-utils) is not installed");
    const char *argv[] = {htpasswd, "-Bbn", user, password, NULL};
    kb_proc_result res = {0};
    cr_assert_eq(kbi_proc_run(NULL, &res, argv, NULL, 30000), 0);
    cr_assert_eq(res.exit_code, 0, "htpasswd failed: %s", res.output.data);
    /* htpasswd -n prints the line and an empty one: keep the first */
    char *nl = strchr(res.output.data, '\n');
    if (nl)
        nl[1] = '\0';
    kbt_write(path, res.output.data);
    kbi_proc_result_free(&res);
    free(htpasswd);
}

static void write_config(const kbt_registry *reg, bool auth)
{
    char *cfg = kbi_asprintf("%s/config.yml", reg->dir);
    char *text = kbi_asprintf("version: 0.1\n"
                              "log:\n  level: error\n  accesslog:\n    disabled: true\n"
                              "storage:\n  filesystem:\n    rootdirectory: %s\n"
                              "  delete:\n    enabled: true\n"
                              "http:\n  addr: 127.0.0.1:%d\n"
                              "%s%s%s",
                              reg->storage, reg->port,
                              auth ? "auth:\n  htpasswd:\n    realm: kbpkg-test\n    path: " : "",
                              auth ? reg->dir : "", auth ? "/htpasswd\n" : "");
    kbt_write(cfg, text);
    free(text);
    free(cfg);
}

void kbt_registry_start(kbt_registry *reg, const char *user, const char *password)
{
    memset(reg, 0, sizeof(*reg));
    if (!kbt_registry_available())
        kbt_skip_missing(KBT_DOCKER_REGISTRY " is not installed (apt-get install docker-registry)");
    reg->dir = kbt_mkdtemp();
    reg->storage = kbi_asprintf("%s/storage", reg->dir);
    reg->port = kbt_free_port();
    reg->url = kbi_asprintf("http://127.0.0.1:%d", reg->port);
    if (user) {
        char *path = kbi_asprintf("%s/htpasswd", reg->dir);
        write_htpasswd(path, user, password);
        free(path);
    }
    write_config(reg, user != NULL);
    char *cfg = kbi_asprintf("%s/config.yml", reg->dir);
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
    for (int i = 0; i < 200 && !port_answers(reg->port); i++) {
        int status;
        if (waitpid(reg->pid, &status, WNOHANG) == reg->pid) {
            kb_buf b = KB_BUF_INIT;
            kbi_read_file(NULL, log, &b);
            reg->pid = 0;
            cr_assert_fail("docker-registry exited: %s", b.data ? b.data : "");
        }
        sleep_ms(50);
    }
    free(log);
    cr_assert(port_answers(reg->port), "docker-registry did not start on port %d", reg->port);
}

void kbt_registry_stop(kbt_registry *reg)
{
    if (reg->pid > 0) {
        kill(reg->pid, SIGTERM);
        waitpid(reg->pid, NULL, 0);
    }
    kbt_rmtree(reg->dir);
    free(reg->dir);
    free(reg->storage);
    free(reg->url);
    memset(reg, 0, sizeof(*reg));
}

char *kbt_registry_blob_data(const kbt_registry *reg, const char *digest)
{
    const char *hex = digest + strlen("sha256:");
    return kbi_asprintf("%s/docker/registry/v2/blobs/sha256/%.2s/%s/data", reg->storage, hex, hex);
}

/* ---- scripted server ---- */

static bool read_request(int fd, kbt_http_request *req)
{
    char buf[16384];
    size_t len = 0;
    char *end = NULL;
    while (!end && len < sizeof(buf) - 1) {
        ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (n <= 0)
            return false;
        len += (size_t)n;
        buf[len] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    if (!end)
        return false;
    memset(req, 0, sizeof(*req));
    if (sscanf(buf, "%15s %1023s", req->method, req->path) != 2)
        return false;
    char *hdr = strstr(buf, "\r\n") + 2;
    size_t hlen = (size_t)(end + 2 - hdr);
    if (hlen >= sizeof(req->headers))
        hlen = sizeof(req->headers) - 1;
    memcpy(req->headers, hdr, hlen);
    char value[64];
    uint64_t body = 0;
    if (kbt_http_header(req, "Content-Length", value, sizeof(value)))
        kbi_parse_u64(value, &body);
    /* drain the body so the client sees our answer, not a reset */
    size_t have = len - (size_t)(end + 4 - buf);
    while (have < body) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    req->body_len = have;
    return true;
}

const char *kbt_http_header(const kbt_http_request *req, const char *name, char *buf, size_t size)
{
    size_t n = strlen(name);
    for (const char *line = req->headers; *line;) {
        const char *eol = strstr(line, "\r\n");
        if (!eol)
            break;
        if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
            const char *v = line + n + 1;
            while (*v == ' ')
                v++;
            snprintf(buf, size, "%.*s", (int)(eol - v), v);
            return buf;
        }
        line = eol + 2;
    }
    return NULL;
}

void kbt_http_reply(int fd, const char *status, const char *headers, const char *body)
{
    char head[4096];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %s\r\nConnection: close\r\nContent-Length: %zu\r\n%s\r\n", status,
                     strlen(body), headers ? headers : "");
    if (write(fd, head, (size_t)n) < 0 || write(fd, body, strlen(body)) < 0)
        return;
}

static void serve(int listener, kbt_http_handler handler, void *state)
{
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            _exit(1);
        }
        kbt_http_request req;
        if (read_request(fd, &req))
            handler(fd, &req, state);
        shutdown(fd, SHUT_WR);
        close(fd);
    }
}

void kbt_http_start(kbt_http_server *srv, kbt_http_handler handler, void *state)
{
    kbt_http_start_on(srv, 0, handler, state);
    cr_assert(srv->pid > 0, "cannot start a scripted HTTP server");
}

void kbt_http_start_on(kbt_http_server *srv, int port, kbt_http_handler handler, void *state)
{
    memset(srv, 0, sizeof(*srv));
    int s = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(s >= 0);
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(s); /* taken meanwhile: the caller picks another port */
        return;
    }
    cr_assert_eq(listen(s, 16), 0);
    socklen_t len = sizeof(a);
    getsockname(s, (struct sockaddr *)&a, &len);
    srv->port = ntohs(a.sin_port);
    snprintf(srv->url, sizeof(srv->url), "http://127.0.0.1:%d", srv->port);
    srv->pid = fork();
    cr_assert(srv->pid >= 0);
    if (srv->pid == 0)
        serve(s, handler, state); /* never returns; killed by kbt_http_stop */
    close(s);
}

void kbt_http_stop(kbt_http_server *srv)
{
    if (srv->pid > 0) {
        kill(srv->pid, SIGKILL);
        waitpid(srv->pid, NULL, 0);
    }
    srv->pid = 0;
}
