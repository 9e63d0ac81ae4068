/* The fault-injecting loopback proxy: forwards to an upstream registry, logs, and breaks on cue. */
#define _GNU_SOURCE
#include "fault_proxy.h"
#include "kbtest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX (64 * 1024)
#define IO_TIMEOUT_S 30

typedef struct rule_slot {
    kbt_fault_rule rule;
    char *method;
    char *path;
    char *headers, *body; /* KBT_FAULT_ANSWER's, with {PROXY} expanded */
    regex_t re;
    bool has_re;
    unsigned matched;
} rule_slot;

struct kbt_proxy {
    int listener;
    int port;
    int upstream_port;
    char url[64];
    pthread_t acceptor;
    pthread_mutex_t mu;
    pthread_cond_t idle;
    int active; /* connection threads running */
    bool stopping;
    rule_slot *rules;
    size_t nrules;
    kbt_proxy_entry *log;
    size_t nlog;
    size_t caplog;
};

/* A parsed HTTP head plus the body bytes that arrived with it. */
typedef struct http_head {
    char *raw;   /* the whole head, NUL-terminated, "\r\n\r\n" included */
    size_t len;  /* bytes of head */
    char *extra; /* body bytes read past the head */
    size_t nextra;
} http_head;

typedef struct conn {
    kbt_proxy *p;
    int fd;
} conn;

/* ---- small socket helpers ---- */

static bool send_all(int fd, const void *data, size_t len)
{
    const char *s = data;
    while (len) {
        ssize_t n = send(fd, s, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        s += n;
        len -= (size_t)n;
    }
    return true;
}

static void set_timeouts(int fd)
{
    struct timeval tv = {IO_TIMEOUT_S, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* An abortive close: the peer sees a reset, not a clean end of stream. */
static void reset_close(int fd)
{
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
}

static bool stopping(kbt_proxy *p)
{
    pthread_mutex_lock(&p->mu);
    bool s = p->stopping;
    pthread_mutex_unlock(&p->mu);
    return s;
}

/* Sleep ms, but give up early when the client hangs up or the proxy stops: false then. */
static bool wait_ms(kbt_proxy *p, int fd, unsigned ms)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long done = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (done >= (long)ms)
            return true;
        if (stopping(p))
            return false;
        struct pollfd pfd = {fd, POLLIN, 0};
        long slice = (long)ms - done < 50 ? (long)ms - done : 50;
        if (poll(&pfd, 1, (int)slice) > 0) {
            char c;
            /* the request was read whole: anything readable now is the client closing */
            if (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0)
                return false;
        }
    }
}

static bool read_head(int fd, http_head *h)
{
    memset(h, 0, sizeof(*h));
    h->raw = malloc(HEAD_MAX + 1);
    if (!h->raw)
        return false;
    size_t len = 0;
    for (;;) {
        if (len == HEAD_MAX)
            return false;
        ssize_t n = recv(fd, h->raw + len, HEAD_MAX - len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        len += (size_t)n;
        h->raw[len] = '\0';
        char *end = strstr(h->raw, "\r\n\r\n");
        if (end) {
            h->len = (size_t)(end + 4 - h->raw);
            h->nextra = len - h->len;
            h->extra = h->raw + h->len;
            return true;
        }
    }
}

static void head_free(http_head *h)
{
    free(h->raw);
    memset(h, 0, sizeof(*h));
}

/* The value of header name in a head, copied into buf; NULL when absent. */
static const char *head_header(const http_head *h, const char *name, char *buf, size_t size)
{
    size_t n = strlen(name);
    const char *line = strstr(h->raw, "\r\n");
    while (line && line + 2 < h->raw + h->len) {
        line += 2;
        const char *eol = strstr(line, "\r\n");
        if (!eol || eol == line)
            break;
        if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
            const char *v = line + n + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            snprintf(buf, size, "%.*s", (int)(eol - v), v);
            return buf;
        }
        line = eol;
    }
    return NULL;
}

/* Append the head's header lines to out, leaving out the hop-by-hop ones and those in skip. */
static void copy_headers(kb_buf *out, const http_head *h, const char *const *skip)
{
    const char *line = strstr(h->raw, "\r\n");
    while (line && line + 2 < h->raw + h->len) {
        line += 2;
        const char *eol = strstr(line, "\r\n");
        if (!eol || eol == line)
            break;
        bool keep = true;
        for (size_t i = 0; skip[i]; i++) {
            size_t n = strlen(skip[i]);
            if (strncasecmp(line, skip[i], n) == 0 && line[n] == ':')
                keep = false;
        }
        if (keep)
            kbi_buf_append(out, line, (size_t)(eol - line + 2));
        line = eol;
    }
}

/* ---- rules and the log ---- */

static bool rule_matches(rule_slot *s, const char *method, const char *path)
{
    if (s->method && strcmp(s->method, method) != 0)
        return false;
    return !s->has_re || regexec(&s->re, path, 0, NULL, 0) == 0;
}

/* Log the request and pick the rule that fires on it (a copy; kind 0 when none). */
static size_t admit(kbt_proxy *p, const char *method, const char *path, const char *range,
                    const char *auth, kbt_fault_rule *fired)
{
    memset(fired, 0, sizeof(*fired));
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->nrules; i++) {
        rule_slot *s = &p->rules[i];
        if (!rule_matches(s, method, path))
            continue;
        unsigned n = ++s->matched;
        unsigned times = s->rule.times ? s->rule.times : 1;
        bool fires = s->rule.nth == 0 || (n >= s->rule.nth && n < s->rule.nth + times);
        if (fires && !fired->kind)
            *fired = s->rule;
    }
    if (p->nlog == p->caplog) {
        size_t cap = p->caplog ? p->caplog * 2 : 64;
        kbt_proxy_entry *grown = realloc(p->log, cap * sizeof(*grown));
        cr_assert_not_null(grown);
        p->log = grown;
        p->caplog = cap;
    }
    size_t idx = p->nlog++;
    kbt_proxy_entry *e = &p->log[idx];
    memset(e, 0, sizeof(*e));
    snprintf(e->method, sizeof(e->method), "%s", method);
    snprintf(e->path, sizeof(e->path), "%s", path);
    snprintf(e->range, sizeof(e->range), "%s", range ? range : "");
    /* the scheme only: a test asserts where credentials went, never what they were */
    snprintf(e->auth, sizeof(e->auth), "%.*s", auth ? (int)strcspn(auth, " ") : 0,
             auth ? auth : "");
    e->faulted = fired->kind != 0;
    pthread_mutex_unlock(&p->mu);
    return idx;
}

static void record_answer(kbt_proxy *p, size_t idx, int status, uint64_t body_sent)
{
    pthread_mutex_lock(&p->mu);
    if (idx < p->nlog) {
        p->log[idx].status = status;
        p->log[idx].body_sent = body_sent;
    }
    pthread_mutex_unlock(&p->mu);
}

/* ---- one exchange ---- */

static int connect_upstream(int port)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (s >= 0)
            close(s);
        return -1;
    }
    set_timeouts(s);
    return s;
}

/* Request body bytes still to come from the client, and what to do with them. */
typedef struct body_pump {
    int client;
    int up;          /* -1: read and drop */
    uint64_t left;   /* bytes the client has yet to send (after what came with the head) */
    uint64_t budget; /* bytes still to forward upstream */
    bool early;      /* upstream answered before taking the whole body */
} body_pump;

/* Upstream has something to say (an early answer, or it closed): stop feeding it. */
static bool upstream_spoke(int up)
{
    struct pollfd pfd = {up, POLLIN, 0};
    return poll(&pfd, 1, 0) > 0;
}

/* Wait until upstream can take bytes or speaks; false when it speaks (or on timeout). */
static bool upstream_writable(int up)
{
    struct pollfd pfd = {up, POLLIN | POLLOUT, 0};
    if (poll(&pfd, 1, IO_TIMEOUT_S * 1000) <= 0)
        return false;
    return !(pfd.revents & (POLLIN | POLLHUP | POLLERR));
}

static bool forward(body_pump *bp, const char *data, size_t len)
{
    size_t n = len < bp->budget ? len : (size_t)bp->budget;
    while (bp->up >= 0 && !bp->early && n) {
        if (!upstream_writable(bp->up)) {
            bp->early = true; /* the server answered early (an upload it refuses) */
            break;
        }
        ssize_t w = send(bp->up, data, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (w <= 0)
            return false;
        data += w;
        n -= (size_t)w;
        bp->budget -= (uint64_t)w;
    }
    return true;
}

/*
 * Move the request body: what came with the head first, then from the client, up to the
 * budget upstream. Stops early when upstream answers before taking it all (it must be read
 * at once: the server resets the connection soon after, losing its answer); drain_body then
 * reads and drops the rest. False when the client or upstream fails.
 */
static bool pump_body(body_pump *bp, const http_head *h)
{
    size_t first = h->nextra < bp->left ? h->nextra : (size_t)bp->left;
    if (!forward(bp, h->extra, first))
        return false;
    bp->left -= first;
    char buf[65536];
    while (bp->left && bp->budget && !bp->early) {
        if (bp->up >= 0 && upstream_spoke(bp->up)) {
            bp->early = true;
            break;
        }
        size_t want = bp->left < sizeof(buf) ? (size_t)bp->left : sizeof(buf);
        ssize_t n = recv(bp->client, buf, want, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        bp->left -= (uint64_t)n;
        if (!forward(bp, buf, (size_t)n))
            return false;
    }
    return true;
}

static bool drain_body(body_pump *bp)
{
    char buf[65536];
    while (bp->left) {
        size_t want = bp->left < sizeof(buf) ? (size_t)bp->left : sizeof(buf);
        ssize_t n = recv(bp->client, buf, want, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        bp->left -= (uint64_t)n;
    }
    return true;
}

/* Undo Transfer-Encoding: chunked into out. */
static bool dechunk(const char *data, size_t len, kb_buf *out)
{
    size_t pos = 0;
    for (;;) {
        const char *eol = memmem(data + pos, len - pos, "\r\n", 2);
        if (!eol)
            return false;
        unsigned long size = strtoul(data + pos, NULL, 16);
        pos = (size_t)(eol - data) + 2;
        if (size == 0)
            return true;
        if (pos + size + 2 > len)
            return false;
        kbi_buf_append(out, data + pos, size);
        pos += size + 2;
    }
}

typedef struct upstream_answer {
    http_head head; /* the status line and headers as upstream sent them */
    int status;
    kb_buf body;  /* decoded */
    bool no_body; /* HEAD, 204, 304: pass Content-Length through untouched */
} upstream_answer;

/* Once the head is in: is the body complete? Fills a->body when it is. */
static bool answer_complete(upstream_answer *a, const kb_buf *all, bool eof)
{
    const char *body = all->data + a->head.len;
    size_t blen = all->len - a->head.len;
    char te[64], cl[32];
    uint64_t want = 0;
    kbi_buf_reset(&a->body);
    if (a->no_body)
        return true;
    if (head_header(&a->head, "Transfer-Encoding", te, sizeof(te)) && strcasestr(te, "chunked"))
        return dechunk(body, blen, &a->body);
    if (head_header(&a->head, "Content-Length", cl, sizeof(cl)) && kbi_parse_u64(cl, &want)) {
        if (blen < want)
            return false;
        blen = (size_t)want;
    } else if (!eof) {
        return false; /* delimited by the end of the connection */
    }
    return kbi_buf_append(&a->body, body, blen) == 0;
}

/*
 * Read one answer. Upstream is asked to keep the connection alive: with "Connection: close"
 * Go's server closes without draining a request body it did not want (an upload it refuses
 * early), and the reset that follows destroys its answer before we read it.
 */
static bool read_answer(int up, const char *method, upstream_answer *a)
{
    memset(a, 0, sizeof(*a));
    kb_buf all = KB_BUF_INIT;
    char buf[65536];
    bool done = false, eof = false;
    while (!done && !eof) {
        ssize_t n = recv(up, buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        eof = n == 0;
        if (n > 0 && kbi_buf_append(&all, buf, (size_t)n))
            break;
        if (!a->head.raw) {
            char *end = all.len ? memmem(all.data, all.len, "\r\n\r\n", 4) : NULL;
            if (!end)
                continue;
            a->head.len = (size_t)(end + 4 - all.data);
            a->head.raw = kbi_strndup(all.data, a->head.len);
            sscanf(all.data, "HTTP/%*s %d", &a->status);
            a->no_body = strcmp(method, "HEAD") == 0 || a->status == 204 || a->status == 304;
        }
        done = answer_complete(a, &all, eof);
    }
    kbi_buf_free(&all);
    return done;
}

static void answer_free(upstream_answer *a)
{
    head_free(&a->head);
    kbi_buf_free(&a->body);
}

/* Write the answer to the client, breaking it as the rule says. Returns body bytes sent. */
static uint64_t deliver(kbt_proxy *p, int client, upstream_answer *a, const kbt_fault_rule *f,
                        bool *reset)
{
    static const char *const skip[] = {"Connection", "Keep-Alive", "Transfer-Encoding",
                                       "Content-Length", NULL};
    static const char *const skip_no_body[] = {"Connection", "Keep-Alive", "Transfer-Encoding",
                                               NULL};
    kb_buf out = KB_BUF_INIT;
    const char *eol = strstr(a->head.raw, "\r\n");
    kbi_buf_append(&out, a->head.raw, (size_t)(eol - a->head.raw + 2));
    copy_headers(&out, &a->head, a->no_body ? skip_no_body : skip);
    if (!a->no_body)
        kbi_buf_printf(&out, "Content-Length: %zu\r\n", a->body.len);
    kbi_buf_puts(&out, "Connection: close\r\n\r\n");
    bool ok = send_all(client, out.data, out.len);
    kbi_buf_free(&out);
    char *body = a->body.data ? a->body.data : "";
    size_t len = a->no_body ? 0 : a->body.len;
    if (f->kind == KBT_FAULT_FLIP && len)
        body[f->offset % len] ^= 0x5a;
    if (f->corrupt && len)
        body[f->corrupt_at % len] ^= 0x5a;
    size_t at = f->offset < len ? (size_t)f->offset : len;
    uint64_t sent = 0;
    switch (ok ? f->kind : 0) {
    case KBT_FAULT_CUT:
    case KBT_FAULT_TRUNCATE:
        if (send_all(client, body, at))
            sent = at;
        *reset = f->kind == KBT_FAULT_CUT;
        return sent;
    case KBT_FAULT_STALL_BODY:
        if (!send_all(client, body, at))
            return 0;
        sent = at;
        if (wait_ms(p, client, f->ms) && send_all(client, body + at, len - at))
            sent = len;
        return sent;
    case KBT_FAULT_TRICKLE: {
        size_t chunk = f->chunk ? f->chunk : 1024;
        while (sent < len) {
            size_t n = len - sent < chunk ? len - sent : chunk;
            if (!send_all(client, body + sent, n))
                break;
            sent += n;
            if (sent < len && !wait_ms(p, client, f->ms))
                break;
        }
        return sent;
    }
    default:
        return ok && send_all(client, body, len) ? len : 0;
    }
}

static void answer_status(int client, const kbt_fault_rule *f)
{
    const char *reason = f->status == 429   ? "Too Many Requests"
                         : f->status == 503 ? "Service Unavailable"
                                            : "Internal Server Error";
    char head[256];
    char retry[64] = "";
    if (f->retry_after > 0)
        snprintf(retry, sizeof(retry), "Retry-After: %d\r\n", f->retry_after);
    const char *body = "injected fault\n";
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\n%sContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     f->status, reason, retry, strlen(body));
    if (send_all(client, head, (size_t)n))
        send_all(client, body, strlen(body));
}

/* A hostile registry's own answer (KBT_FAULT_ANSWER); returns the body bytes sent. */
static uint64_t answer_canned(kbt_proxy *p, int client, const kbt_fault_rule *f, bool *reset)
{
    const char *body = f->body ? f->body : "";
    size_t len = strlen(body);
    char head[4096];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d Answer\r\n%sContent-Length: %zu\r\nConnection: close\r\n\r\n",
                     f->status ? f->status : 200, f->headers ? f->headers : "", len);
    if (n < 0 || (size_t)n >= sizeof(head) || !send_all(client, head, (size_t)n)) {
        *reset = true;
        return 0;
    }
    size_t chunk = f->ms ? (f->chunk ? f->chunk : 1) : len;
    uint64_t sent = 0;
    while (sent < len) {
        size_t k = len - sent < chunk ? len - sent : chunk;
        if (!send_all(client, body + sent, k)) {
            *reset = true;
            break;
        }
        sent += k;
        if (f->ms && sent < len && !wait_ms(p, client, f->ms))
            break;
    }
    return sent;
}

/* Rebuild the request for upstream: same line and headers (keep-alive: see read_answer). */
static void upstream_request(kb_buf *out, const http_head *h, bool drop_range)
{
    static const char *const skip[] = {"Connection", "Keep-Alive", "Proxy-Connection", NULL};
    static const char *const skip_range[] = {"Connection", "Keep-Alive", "Proxy-Connection",
                                             "Range", NULL};
    const char *eol = strstr(h->raw, "\r\n");
    kbi_buf_append(out, h->raw, (size_t)(eol - h->raw + 2));
    /* Host stays the proxy's, so the registry's upload Locations come back through us */
    copy_headers(out, h, drop_range ? skip_range : skip);
    kbi_buf_puts(out, "\r\n");
}

static void serve_conn(kbt_proxy *p, int client)
{
    set_timeouts(client);
    http_head h;
    if (!read_head(client, &h)) {
        head_free(&h);
        close(client);
        return;
    }
    char method[16] = "", path[1024] = "", range[64], cl[32], te[64];
    sscanf(h.raw, "%15s %1023s", method, path);
    const char *rg = head_header(&h, "Range", range, sizeof(range));
    char authz[512];
    const char *auth = head_header(&h, "Authorization", authz, sizeof(authz));
    kbt_fault_rule f;
    size_t idx = admit(p, method, path, rg, auth, &f);
    uint64_t body_len = 0;
    if (head_header(&h, "Content-Length", cl, sizeof(cl)))
        kbi_parse_u64(cl, &body_len);
    bool chunked_request = head_header(&h, "Transfer-Encoding", te, sizeof(te)) != NULL;
    int status = 0;
    uint64_t sent = 0;
    bool reset = false;
    int up = -1;
    upstream_answer a = {0};
    if (chunked_request) {
        /* not something kbpkg sends; say so loudly rather than mis-forward it */
        f.kind = KBT_FAULT_STATUS, f.status = 501, f.retry_after = 0;
    }
    if (f.kind == KBT_FAULT_ANSWER) {
        body_pump drop = {client, -1, body_len, 0, false};
        pump_body(&drop, &h);
        drain_body(&drop);
        status = f.status ? f.status : 200;
        sent = answer_canned(p, client, &f, &reset);
        goto done;
    }
    if (f.kind == KBT_FAULT_STATUS) {
        body_pump drop = {client, -1, body_len, 0, false};
        pump_body(&drop, &h);
        drain_body(&drop);
        answer_status(client, &f);
        status = f.status;
        goto done;
    }
    if (f.kind == KBT_FAULT_STALL_HEADERS && !wait_ms(p, client, f.ms))
        goto done;
    up = connect_upstream(p->upstream_port);
    if (up < 0) {
        reset = true;
        goto done;
    }
    kb_buf req = KB_BUF_INIT;
    upstream_request(&req, &h, f.kind == KBT_FAULT_IGNORE_RANGE);
    bool ok = send_all(up, req.data, req.len);
    kbi_buf_free(&req);
    body_pump bp = {client, up, body_len, f.kind == KBT_FAULT_CUT_REQUEST ? f.offset : UINT64_MAX,
                    false};
    ok = ok && pump_body(&bp, &h);
    if (f.kind == KBT_FAULT_CUT_REQUEST && !bp.early) {
        reset_close(up); /* upstream sees its body cut short */
        up = -1;
        reset = true;
        goto done;
    }
    if (!ok || !read_answer(up, method, &a) || !drain_body(&bp)) {
        reset = true;
        goto done;
    }
    if (f.kind == KBT_FAULT_CUT_AFTER_UPSTREAM) {
        reset = true; /* upstream did the work; the client never hears of it */
        goto done;
    }
    status = a.status;
    sent = deliver(p, client, &a, &f, &reset);
done:
    record_answer(p, idx, status, sent);
    answer_free(&a);
    if (up >= 0)
        close(up);
    head_free(&h);
    if (reset) {
        reset_close(client);
    } else {
        shutdown(client, SHUT_WR);
        close(client);
    }
}

static void *conn_main(void *arg)
{
    conn *c = arg;
    kbt_proxy *p = c->p;
    serve_conn(p, c->fd);
    free(c);
    pthread_mutex_lock(&p->mu);
    p->active--;
    pthread_cond_broadcast(&p->idle);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void *accept_main(void *arg)
{
    kbt_proxy *p = arg;
    while (!stopping(p)) {
        struct pollfd pfd = {p->listener, POLLIN, 0};
        if (poll(&pfd, 1, 50) <= 0)
            continue;
        int fd = accept4(p->listener, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        conn *c = malloc(sizeof(*c));
        pthread_t t;
        pthread_mutex_lock(&p->mu);
        p->active++;
        pthread_mutex_unlock(&p->mu);
        if (c)
            *c = (conn){p, fd};
        if (!c || pthread_create(&t, NULL, conn_main, c) != 0) {
            free(c);
            close(fd);
            pthread_mutex_lock(&p->mu);
            p->active--;
            pthread_mutex_unlock(&p->mu);
            continue;
        }
        pthread_detach(t);
    }
    return NULL;
}

/* ---- the public face ---- */

kbt_proxy *kbt_proxy_start(int upstream_port)
{
    kbt_proxy *p = calloc(1, sizeof(*p));
    cr_assert_not_null(p);
    p->upstream_port = upstream_port;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->idle, NULL);
    p->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(p->listener >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(p->listener, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(p->listener, 64), 0);
    socklen_t len = sizeof(a);
    getsockname(p->listener, (struct sockaddr *)&a, &len);
    p->port = ntohs(a.sin_port);
    snprintf(p->url, sizeof(p->url), "http://127.0.0.1:%d", p->port);
    cr_assert_eq(pthread_create(&p->acceptor, NULL, accept_main, p), 0);
    return p;
}

void kbt_proxy_stop(kbt_proxy *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->acceptor, NULL);
    pthread_mutex_lock(&p->mu);
    while (p->active > 0)
        pthread_cond_wait(&p->idle, &p->mu);
    pthread_mutex_unlock(&p->mu);
    close(p->listener);
    kbt_proxy_clear_rules(p);
    free(p->log);
    pthread_cond_destroy(&p->idle);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int kbt_proxy_port(const kbt_proxy *p)
{
    return p->port;
}

const char *kbt_proxy_url(const kbt_proxy *p)
{
    return p->url;
}

/* text with every "{PROXY}" replaced by the proxy's URL (owned; "" for NULL) */
static char *expand_proxy(const kbt_proxy *p, const char *text)
{
    kb_buf b = KB_BUF_INIT;
    kbi_buf_puts(&b, "");
    for (const char *s = text ? text : ""; *s;) {
        const char *at = strstr(s, "{PROXY}");
        size_t n = at ? (size_t)(at - s) : strlen(s);
        kbi_buf_append(&b, s, n);
        s += n;
        if (at) {
            kbi_buf_puts(&b, p->url);
            s += strlen("{PROXY}");
        }
    }
    return kbi_buf_detach(&b);
}

void kbt_proxy_add_rule(kbt_proxy *p, const kbt_fault_rule *rule)
{
    rule_slot s = {.rule = *rule};
    s.method = rule->method ? kbi_strdup(rule->method) : NULL;
    s.path = rule->path ? kbi_strdup(rule->path) : NULL;
    if (s.path) {
        cr_assert_eq(regcomp(&s.re, s.path, REG_EXTENDED | REG_NOSUB), 0, "bad rule regex '%s'",
                     s.path);
        s.has_re = true;
    }
    s.rule.method = s.method;
    s.rule.path = s.path;
    s.headers = expand_proxy(p, rule->headers);
    s.body = expand_proxy(p, rule->body);
    s.rule.headers = s.headers;
    s.rule.body = s.body;
    pthread_mutex_lock(&p->mu);
    rule_slot *grown = realloc(p->rules, (p->nrules + 1) * sizeof(*grown));
    cr_assert_not_null(grown);
    p->rules = grown;
    p->rules[p->nrules++] = s;
    pthread_mutex_unlock(&p->mu);
}

void kbt_proxy_clear_rules(kbt_proxy *p)
{
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->nrules; i++) {
        if (p->rules[i].has_re)
            regfree(&p->rules[i].re);
        free(p->rules[i].method);
        free(p->rules[i].path);
        free(p->rules[i].headers);
        free(p->rules[i].body);
    }
    free(p->rules);
    p->rules = NULL;
    p->nrules = 0;
    pthread_mutex_unlock(&p->mu);
}

void kbt_proxy_reset_log(kbt_proxy *p)
{
    pthread_mutex_lock(&p->mu);
    p->nlog = 0;
    pthread_mutex_unlock(&p->mu);
}

/* Queries come after the client returned: let the threads finish their bookkeeping first. */
static void lock_idle(kbt_proxy *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->active > 0)
        pthread_cond_wait(&p->idle, &p->mu);
}

static bool entry_is(const kbt_proxy_entry *e, const char *method, const char *path_part)
{
    return (!method || strcmp(e->method, method) == 0) &&
           (!path_part || strstr(e->path, path_part));
}

unsigned kbt_proxy_count(kbt_proxy *p, const char *method, const char *path_part)
{
    unsigned n = 0;
    lock_idle(p);
    for (size_t i = 0; i < p->nlog; i++)
        n += entry_is(&p->log[i], method, path_part);
    pthread_mutex_unlock(&p->mu);
    return n;
}

uint64_t kbt_proxy_body_bytes(kbt_proxy *p, const char *method, const char *path_part)
{
    uint64_t n = 0;
    lock_idle(p);
    for (size_t i = 0; i < p->nlog; i++)
        if (entry_is(&p->log[i], method, path_part))
            n += p->log[i].body_sent;
    pthread_mutex_unlock(&p->mu);
    return n;
}

bool kbt_proxy_entry_at(kbt_proxy *p, size_t index, kbt_proxy_entry *out)
{
    lock_idle(p);
    bool ok = index < p->nlog;
    if (ok)
        *out = p->log[index];
    pthread_mutex_unlock(&p->mu);
    return ok;
}

size_t kbt_proxy_entries(kbt_proxy *p)
{
    lock_idle(p);
    size_t n = p->nlog;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void kbt_proxy_dump(kbt_proxy *p)
{
    lock_idle(p);
    for (size_t i = 0; i < p->nlog; i++) {
        const kbt_proxy_entry *e = &p->log[i];
        fprintf(stderr, "proxy: %s %.80s%s%s -> %d, %llu body bytes%s\n", e->method, e->path,
                *e->range ? " Range: " : "", e->range, e->status, (unsigned long long)e->body_sent,
                e->faulted ? " [fault]" : "");
    }
    pthread_mutex_unlock(&p->mu);
}
