/* Test registries: Debian's docker-registry on loopback, and a scripted one-process HTTP server. */
#ifndef KBT_REGISTRY_HARNESS_H
#define KBT_REGISTRY_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define KBT_DOCKER_REGISTRY "/usr/bin/docker-registry"

/* A docker-registry serving 127.0.0.1:port from a temporary folder. */
typedef struct kbt_registry {
    pid_t pid;
    int port;
    char *dir;     /* the temp folder: config.yml, htpasswd, storage/, registry.log */
    char *storage; /* dir/storage: the filesystem driver's root */
    char *url;     /* "http://127.0.0.1:PORT" */
} kbt_registry;

/* true when docker-registry is installed (tests kbt_skip_missing otherwise). */
bool kbt_registry_available(void);
/* Start one; with user set, htpasswd (bcrypt) basic auth is required. Asserts it answers. */
void kbt_registry_start(kbt_registry *reg, const char *user, const char *password);
void kbt_registry_stop(kbt_registry *reg);
/* The storage path of a blob: .../blobs/sha256/<2 hex>/<hex>/data */
char *kbt_registry_blob_data(const kbt_registry *reg, const char *digest);

/* A free TCP port on 127.0.0.1 (bound and released: good enough for tests). */
int kbt_free_port(void);

/*
 * A scripted HTTP/1.1 server in a forked child, one connection at a time
 * (Connection: close). The handler runs in the child and writes a whole
 * response to fd; state is the child's copy of the caller's struct.
 */
typedef struct kbt_http_request {
    char method[16];
    char path[1024];
    char headers[8192]; /* raw header lines */
    size_t body_len;
} kbt_http_request;
typedef void (*kbt_http_handler)(int fd, const kbt_http_request *req, void *state);

typedef struct kbt_http_server {
    pid_t pid;
    int port;
    char url[64]; /* "http://127.0.0.1:PORT" */
} kbt_http_server;

void kbt_http_start(kbt_http_server *srv, kbt_http_handler handler, void *state);
/* The same on a given port; srv->pid stays 0 when the port is taken. */
void kbt_http_start_on(kbt_http_server *srv, int port, kbt_http_handler handler, void *state);
void kbt_http_stop(kbt_http_server *srv);
/* Write "HTTP/1.1 <status>" with extra header lines (each ending \r\n) and a body. */
void kbt_http_reply(int fd, const char *status, const char *headers, const char *body);
/* The value of a request header, or NULL (static buffer inside req's copy). */
const char *kbt_http_header(const kbt_http_request *req, const char *name, char *buf, size_t size);

#endif
