/* The OCI Distribution transport over libcurl: requests, auth, retries, uploads and downloads. */
#include "registry/registry.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Error bodies and JSON answers beyond this are not ours to read. */
#define SMALL_BODY_MAX ((size_t)1024 * 1024)
#define RETRY_AFTER_MAX_S 30
#define MANIFEST_ACCEPT                                                                            \
    "Accept: " KB_MT_OCI_INDEX ", " KB_MT_OCI_MANIFEST ", " KB_MT_DOCKER_LIST                      \
    ", " KB_MT_DOCKER_MANIFEST

typedef struct remote {
    CURL *curl;
    char *token; /* bearer token from the registry's token service */
    long timeout_s;
    long retries;
    long deadline_s; /* net.deadline_s: the most one request may take, body included */
} remote;

/* Blob transfers get net.deadline_s plus a second per this many bytes of their size: a floor
 * rate of 256 KiB/s, far below any link that moves GPU binaries, and a bound on a registry that
 * trickles (net.timeout_s only catches silence). */
#define DEADLINE_BYTES_PER_S ((uint64_t)256 * 1024)
/* Pages of a tags or catalog list: 1000 x n=100 entries is far more than any package has. */
#define LIST_PAGES_MAX 1000

typedef enum { AUTH_REGISTRY, AUTH_TOKEN_SERVICE } auth_mode;

typedef struct http_req {
    const char *method;
    const char *url;
    const char *accept;       /* a full "Accept: ..." header, or NULL */
    const char *content_type; /* value, or NULL */
    const char *content_range;
    const char *data; /* request body from memory ... */
    int fd;           /* ... or from a file at offset, or -1 */
    uint64_t offset;
    uint64_t body_len;
    bool has_body;
    kb_blob_writer *sink; /* 2xx body goes here (downloads) */
    size_t max_body;      /* cap on a body read into memory */
    auth_mode auth;
    const char *progress_task; /* uploads; a download's progress is its sink's */
    const char *progress_item;
    const char *progress_label;
    uint64_t progress_job;
    uint64_t progress_total;
} http_req;

typedef struct http_resp {
    long status;
    char *reason;
    kb_buf body;
    char *location;
    char *content_type;
    char *www_authenticate;
    char *link;
    char *retry_after;
    char *docker_digest;
    uint64_t content_length;
    bool have_length;
} http_resp;

/* State shared with curl's callbacks during one attempt. */
typedef struct transfer {
    kb_registry *r;
    const http_req *req;
    http_resp *resp;
    uint64_t sent;
    bool sink_checked;
    int sink_rc;     /* the writer's error (limit, IO) */
    int progress_rc; /* cancelled by the progress callback */
    /* stall watch: curl's low-speed check averages over seconds of history, so a burst
     * followed by silence outlived net.timeout_s by several seconds; we time the silence */
    curl_off_t last_bytes;  /* dlnow + ulnow at the last change */
    struct timespec active; /* when bytes last moved (or a header arrived) */
    bool stalled;
} transfer;

static remote *R(kb_registry *r)
{
    return r->impl;
}

static void mark_active(transfer *t)
{
    clock_gettime(CLOCK_MONOTONIC, &t->active);
}

static double seconds_idle(const transfer *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t->active.tv_sec) +
           (double)(now.tv_nsec - t->active.tv_nsec) / 1e9;
}

static void resp_free(http_resp *resp)
{
    free(resp->reason);
    kbi_buf_free(&resp->body);
    free(resp->location);
    free(resp->content_type);
    free(resp->www_authenticate);
    free(resp->link);
    free(resp->retry_after);
    free(resp->docker_digest);
    memset(resp, 0, sizeof(*resp));
}

/* "/v2/<namespace>/<repo>" */
static char *repo_url(kb_registry *r, const char *repo, const char *fmt_tail, const char *arg)
{
    const char *ns = r->url.namespace;
    char *tail = kbi_asprintf(fmt_tail, arg ? arg : "");
    char *url =
        tail ? kbi_asprintf("%s/v2/%s%s%s/%s", r->url.base, ns, *ns ? "/" : "", repo, tail) : NULL;
    free(tail);
    return url;
}

static char *header_value(const char *line, size_t len, const char *name)
{
    size_t n = strlen(name);
    if (len <= n + 1 || strncasecmp(line, name, n) != 0 || line[n] != ':')
        return NULL;
    const char *v = line + n + 1;
    const char *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    return kbi_strndup(v, (size_t)(end - v));
}

static void keep_header(char **slot, char *value)
{
    if (!value)
        return;
    free(*slot);
    *slot = value;
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *userdata)
{
    transfer *t = userdata;
    http_resp *resp = t->resp;
    size_t len = size * nmemb;
    mark_active(t);
    if (len > 5 && strncmp(line, "HTTP/", 5) == 0) {
        /* a new response (after a redirect or 100 Continue): forget the previous one */
        const char *sp = memchr(line, ' ', len);
        resp->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        const char *reason = sp ? memchr(sp + 1, ' ', len - (size_t)(sp + 1 - line)) : NULL;
        free(resp->reason);
        resp->reason = NULL;
        if (reason) {
            const char *end = line + len;
            while (end > reason + 1 && (end[-1] == '\r' || end[-1] == '\n'))
                end--;
            resp->reason = kbi_strndup(reason + 1, (size_t)(end - reason - 1));
        }
        resp->have_length = false;
        return len;
    }
    keep_header(&resp->location, header_value(line, len, "Location"));
    keep_header(&resp->content_type, header_value(line, len, "Content-Type"));
    keep_header(&resp->www_authenticate, header_value(line, len, "WWW-Authenticate"));
    keep_header(&resp->link, header_value(line, len, "Link"));
    keep_header(&resp->retry_after, header_value(line, len, "Retry-After"));
    keep_header(&resp->docker_digest, header_value(line, len, "Docker-Content-Digest"));
    char *length = header_value(line, len, "Content-Length");
    if (length) {
        resp->have_length = kbi_parse_u64(length, &resp->content_length);
        free(length);
    }
    return len;
}

static bool status_ok(long status)
{
    return status >= 200 && status < 300;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    transfer *t = userdata;
    size_t len = size * nmemb;
    kb_blob_writer *w = t->req->sink;
    if (w && status_ok(t->resp->status)) {
        if (!t->sink_checked) {
            t->sink_checked = true;
            /* the server ignored our Range: start the file over */
            if (t->resp->status != 206 && w->written > 0 &&
                (t->sink_rc = kbi_blob_writer_truncate(w)) != 0)
                return 0;
            if (!w->expected && t->resp->have_length)
                w->expected = w->written + t->resp->content_length;
        }
        t->sink_rc = kbi_blob_writer_write(w, data, len);
        return t->sink_rc ? 0 : len;
    }
    size_t cap = t->req->max_body && status_ok(t->resp->status) ? t->req->max_body : SMALL_BODY_MAX;
    if (t->resp->body.len + len > cap) {
        t->sink_rc = kbi_error_set_url(t->r->ctx, KB_ERR_LIMIT, t->req->url,
                                       "%s %s: response larger than %zu bytes", t->req->method,
                                       t->req->url, cap);
        return 0;
    }
    return kbi_buf_append(&t->resp->body, data, len) ? 0 : len;
}

static size_t on_read(char *buf, size_t size, size_t nmemb, void *userdata)
{
    transfer *t = userdata;
    const http_req *req = t->req;
    uint64_t left = req->body_len - t->sent;
    size_t n = size * nmemb < left ? size * nmemb : (size_t)left;
    if (n == 0)
        return 0;
    if (req->fd >= 0) {
        ssize_t got = pread(req->fd, buf, n, (off_t)(req->offset + t->sent));
        if (got <= 0)
            return CURL_READFUNC_ABORT;
        n = (size_t)got;
    } else {
        memcpy(buf, req->data + t->sent, n);
    }
    t->sent += n;
    return n;
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    transfer *t = userdata;
    const http_req *req = t->req;
    bool moved = dlnow + ulnow != t->last_bytes;
    if (moved) {
        t->last_bytes = dlnow + ulnow;
        mark_active(t);
    } else if (seconds_idle(t) >= (double)R(t->r)->timeout_s) {
        t->stalled = true;
        return 1;
    }
    int rc = 0;
    if (req->sink && req->sink->job) {
        /* the sink reports each write; while nothing arrives, this keeps the time going and
         * lets the callback cancel a stalled download */
        if (!moved)
            rc = kbi_blob_writer_report(req->sink, false, 0);
    } else if (req->progress_task) {
        kb_progress p = {req->progress_task,
                         req->progress_item,
                         req->offset + (uint64_t)ulnow,
                         req->progress_total,
                         0,
                         req->progress_job,
                         req->progress_label,
                         "bytes",
                         0};
        rc = kbi_progress_emit(t->r->ctx, &p);
    }
    if (rc) {
        t->progress_rc = KB_ERR_CANCELLED;
        return 1;
    }
    return 0;
}

static bool curl_transient(CURLcode c)
{
    switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

/* url is on the registry's own scheme, host and port (r->url.base is "scheme://host[:port]"):
 * a Link header, an upload Location or a token realm elsewhere gets no credentials. */
static bool same_origin(const kb_registry *r, const char *url)
{
    size_t n = strlen(r->url.base);
    return strncasecmp(url, r->url.base, n) == 0 &&
           (url[n] == '/' || url[n] == '?' || url[n] == '\0');
}

static struct curl_slist *request_headers(kb_registry *r, const http_req *req, uint64_t range_from)
{
    struct curl_slist *h = NULL;
    h = curl_slist_append(h, "Expect:");
    if (req->accept)
        h = curl_slist_append(h, req->accept);
    char line[512];
    if (req->content_type) {
        snprintf(line, sizeof(line), "Content-Type: %s", req->content_type);
        h = curl_slist_append(h, line);
    }
    if (req->content_range) {
        snprintf(line, sizeof(line), "Content-Range: %s", req->content_range);
        h = curl_slist_append(h, line);
    }
    if (range_from) {
        snprintf(line, sizeof(line), "Range: bytes=%llu-", (unsigned long long)range_from);
        h = curl_slist_append(h, line);
    }
    if (req->auth == AUTH_REGISTRY && R(r)->token && same_origin(r, req->url)) {
        char *auth = kbi_asprintf("Authorization: Bearer %s", R(r)->token);
        if (auth)
            h = curl_slist_append(h, auth);
        free(auth);
    }
    return h;
}

/* Basic credentials go to the registry itself, or to a token service on the same host. */
static bool may_send_credentials(kb_registry *r, const http_req *req)
{
    if (!r->user || !same_origin(r, req->url))
        return false;
    return req->auth == AUTH_REGISTRY ? R(r)->token == NULL : true;
}

static long request_deadline_ms(kb_registry *r, const http_req *req)
{
    uint64_t size = req->sink ? req->sink->max_size : req->has_body ? req->body_len : 0;
    uint64_t s = (uint64_t)R(r)->deadline_s + size / DEADLINE_BYTES_PER_S;
    return s > (uint64_t)LONG_MAX / 1000 ? LONG_MAX : (long)(s * 1000);
}

static void setup_curl(CURL *c, kb_registry *r, const http_req *req, transfer *t)
{
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, req->url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_UNRESTRICTED_AUTH, 0L); /* never to another host */
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    /* no redirect from https down to http: what travels (a token, a manifest) stays encrypted */
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR,
                     kbi_str_starts(r->url.base, "https:") ? "https" : "http,https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, R(r)->timeout_s);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, R(r)->timeout_s);
    if (R(r)->deadline_s > 0)
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, request_deadline_ms(r, req));
    curl_easy_setopt(c, CURLOPT_USERAGENT, "kbpkg/" KBPKG_VERSION_STRING);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, t);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    if (strcmp(req->method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (req->has_body) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, t);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)req->body_len);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
    } else if (strcmp(req->method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
    } else if (strcmp(req->method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
    }
    if (may_send_credentials(r, req)) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERNAME, r->user);
        curl_easy_setopt(c, CURLOPT_PASSWORD, r->password ? r->password : "");
    }
}

/* What to do after a 401/403: a status code alone leaves the user guessing. The user name is
 * shown (it says which login was used); the password never is. */
static char *auth_hint(const kb_registry *r, long status)
{
    const char *how = "kbpkg login oci://%s (or set KBPKG_REGISTRY_USER and "
                      "KBPKG_REGISTRY_PASSWORD)";
    char *login = kbi_asprintf(how, r->url.host);
    char *hint = NULL;
    if (!login)
        return NULL;
    if (!r->user)
        hint = kbi_asprintf("not logged in: log in with: %s", login);
    else if (status == 401)
        hint =
            kbi_asprintf("the registry refused user '%s': log in again with: %s", r->user, login);
    else
        hint = kbi_asprintf("user '%s' may not do this here: log in as one who may, with: %s",
                            r->user, login);
    free(login);
    return hint;
}

/* "GET url: 404 NAME_UNKNOWN: repository name not known to registry" */
static int http_error(kb_registry *r, const http_req *req, const http_resp *resp)
{
    char *oci = kbi_oci_error_summary(resp->body.data, resp->body.len);
    char *hint = NULL;
    int code = KB_ERR_HTTP;
    if (resp->status == 401 || resp->status == 403) {
        code = KB_ERR_AUTH;
        hint = auth_hint(r, resp->status);
    } else if (resp->status == 404)
        code = KB_ERR_NOT_FOUND;
    else if (oci)
        code = KB_ERR_REGISTRY;
    const char *reason = resp->reason && *resp->reason ? resp->reason : "";
    int rc =
        kbi_error_set_url(r->ctx, code, req->url, "%s %s: %ld %s%s%s", req->method, req->url,
                          resp->status, oci ? oci : reason, hint ? "; " : "", hint ? hint : "");
    free(hint);
    free(oci);
    return rc;
}

static unsigned backoff_ms(const http_resp *resp, long attempt)
{
    uint64_t seconds;
    if (resp->retry_after && kbi_parse_u64(resp->retry_after, &seconds))
        return (unsigned)(seconds > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : seconds) * 1000u;
    unsigned ms = 250u << (attempt > 5 ? 5 : attempt);
    return ms > 8000 ? 8000 : ms;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int fetch_token(kb_registry *r, const char *challenge_header);

/* The last failure's message, saying that retries were spent on it. */
static int gave_up(kb_registry *r, int rc, long attempts)
{
    if (attempts < 2)
        return rc;
    const kb_error *e = kb_ctx_last_error(r->ctx);
    char *last = kbi_strdup(e->message);
    char *url = kbi_strdup(e->url);
    if (last)
        rc = kbi_error_set_url(r->ctx, rc, url, "%s (gave up after %ld attempts)", last, attempts);
    free(last);
    free(url);
    return rc;
}

/* One attempt: perform and classify. Returns 0 with resp filled, or an error. */
static int perform_once(kb_registry *r, const http_req *req, http_resp *resp, CURLcode *cc)
{
    transfer t = {.r = r, .req = req, .resp = resp};
    mark_active(&t);
    uint64_t range_from = req->sink ? req->sink->written : 0;
    struct curl_slist *headers = request_headers(r, req, range_from);
    setup_curl(R(r)->curl, r, req, &t);
    curl_easy_setopt(R(r)->curl, CURLOPT_HTTPHEADER, headers);
    *cc = curl_easy_perform(R(r)->curl);
    curl_slist_free_all(headers);
    if (range_from)
        kbi_log(r->ctx, KB_LOG_DEBUG, "%s %s (Range: bytes=%llu-) -> %ld", req->method, req->url,
                (unsigned long long)range_from, resp->status);
    else
        kbi_log(r->ctx, KB_LOG_DEBUG, "%s %s -> %ld", req->method, req->url, resp->status);
    if (t.stalled)
        return kbi_error_set_url(r->ctx, KB_ERR_TIMEOUT, req->url,
                                 "%s %s: no data for %ld s (net.timeout_s)", req->method, req->url,
                                 R(r)->timeout_s);
    if (*cc == CURLE_OPERATION_TIMEDOUT && R(r)->deadline_s > 0)
        return kbi_error_set_url(r->ctx, KB_ERR_TIMEOUT, req->url,
                                 "%s %s: not done within %.1f s (net.deadline_s, plus 1 s per "
                                 "256 KiB of a blob)",
                                 req->method, req->url, request_deadline_ms(r, req) / 1000.0);
    if (t.progress_rc)
        return kbi_error_set_url(r->ctx, KB_ERR_CANCELLED, req->url, "%s %s: cancelled",
                                 req->method, req->url);
    if (t.sink_rc)
        return t.sink_rc;
    if (*cc != CURLE_OK) {
        int code = *cc == CURLE_OPERATION_TIMEDOUT ? KB_ERR_TIMEOUT : KB_ERR_NETWORK;
        return kbi_error_set_url(r->ctx, code, req->url, "%s %s: %s", req->method, req->url,
                                 curl_easy_strerror(*cc));
    }
    return 0;
}

/* A request with bearer-token renewal and retries of transient failures. */
static int http_do(kb_registry *r, const http_req *req, http_resp *resp)
{
    bool token_tried = false;
    for (long attempt = 0;; attempt++) {
        resp_free(resp);
        CURLcode cc = CURLE_OK;
        int rc = perform_once(r, req, resp, &cc);
        bool last = attempt >= R(r)->retries;
        if (rc && rc != KB_ERR_NETWORK && rc != KB_ERR_TIMEOUT)
            return rc; /* cancelled, size cap, disk */
        if (rc == KB_ERR_TIMEOUT)
            cc = CURLE_OPERATION_TIMEDOUT; /* our stall watch aborted it: as transient */
        if (rc && !curl_transient(cc))
            return rc;
        if (rc && last)
            return gave_up(r, rc, attempt + 1);
        if (!rc && resp->status == 401 && req->auth == AUTH_REGISTRY && !token_tried &&
            resp->www_authenticate && strncasecmp(resp->www_authenticate, "Bearer", 6) == 0) {
            token_tried = true;
            rc = fetch_token(r, resp->www_authenticate);
            if (rc)
                return rc;
            attempt--; /* a new token is not a retry */
            continue;
        }
        bool retry_status = resp->status >= 500 || resp->status == 429;
        if (!rc && !retry_status)
            return status_ok(resp->status) || resp->status == 416 ? 0 : http_error(r, req, resp);
        if (!rc && last)
            return gave_up(r, http_error(r, req, resp), attempt + 1);
        unsigned ms = backoff_ms(resp, attempt);
        kbi_log(r->ctx, KB_LOG_DEBUG, "%s %s: retrying in %u ms (%ld of %ld)", req->method,
                req->url, ms, attempt + 1, R(r)->retries);
        kb_ctx_clear_error(r->ctx);
        sleep_ms(ms);
    }
}

/* Ask the token service named by a Bearer challenge for a token. */
static int fetch_token(kb_registry *r, const char *challenge_header)
{
    kb_auth_challenge ch;
    if (kbi_auth_challenge_parse(&ch, challenge_header) != 0 || !ch.realm)
        return kbi_error_set_url(r->ctx, KB_ERR_AUTH, r->url.base,
                                 "%s: unreadable WWW-Authenticate challenge '%s'", r->url.base,
                                 challenge_header);
    kb_buf url = KB_BUF_INIT;
    kbi_buf_puts(&url, ch.realm);
    char sep = strchr(ch.realm, '?') ? '&' : '?';
    const char *names[] = {"service", "scope"};
    const char *values[] = {ch.service, ch.scope};
    for (size_t i = 0; i < 2; i++) {
        if (!values[i])
            continue;
        char *esc = curl_easy_escape(R(r)->curl, values[i], 0);
        kbi_buf_printf(&url, "%c%s=%s", sep, names[i], esc ? esc : "");
        curl_free(esc);
        sep = '&';
    }
    http_req req = {.method = "GET",
                    .url = url.data,
                    .fd = -1,
                    .auth = AUTH_TOKEN_SERVICE,
                    .max_body = SMALL_BODY_MAX};
    http_resp resp = {0};
    int rc = url.data ? http_do(r, &req, &resp) : kbi_error_oom(r->ctx);
    if (!rc) {
        json_t *j = json_loadb(resp.body.data, resp.body.len, 0, NULL);
        const char *token = json_string_value(json_object_get(j, "token"));
        if (!token)
            token = json_string_value(json_object_get(j, "access_token"));
        if (token) {
            free(R(r)->token);
            R(r)->token = kbi_strdup(token);
        } else {
            rc = kbi_error_set_url(r->ctx, KB_ERR_AUTH, url.data,
                                   "GET %s: the token service answered without a token", url.data);
        }
        json_decref(j);
    } else if (rc == KB_ERR_AUTH) {
        kbi_error_prefix(r->ctx, "token request refused");
    }
    resp_free(&resp);
    kbi_buf_free(&url);
    kbi_auth_challenge_free(&ch);
    return rc;
}

static int expect_status(kb_registry *r, const http_req *req, http_resp *resp, long want)
{
    if (resp->status == want)
        return 0;
    return http_error(r, req, resp);
}

static int remote_ping(kb_registry *r)
{
    char *url = kbi_asprintf("%s/v2/", r->url.base);
    if (!url)
        return kbi_error_oom(r->ctx);
    http_req req = {.method = "GET", .url = url, .fd = -1, .max_body = SMALL_BODY_MAX};
    http_resp resp = {0};
    int rc = http_do(r, &req, &resp);
    if (!rc)
        rc = expect_status(r, &req, &resp, 200);
    resp_free(&resp);
    free(url);
    return rc;
}

static int remote_blob_exists(uint64_t *size_out, kb_registry *r, const char *repo,
                              const char *digest)
{
    char *url = repo_url(r, repo, "blobs/%s", digest);
    if (!url)
        return kbi_error_oom(r->ctx);
    http_req req = {.method = "HEAD", .url = url, .fd = -1};
    http_resp resp = {0};
    int rc = http_do(r, &req, &resp);
    if (!rc)
        rc = expect_status(r, &req, &resp, 200);
    if (!rc)
        *size_out = resp.content_length;
    resp_free(&resp);
    free(url);
    return rc;
}

static int remote_blob_get(kb_registry *r, const char *repo, const char *digest, kb_blob_writer *w)
{
    char *url = repo_url(r, repo, "blobs/%s", digest);
    if (!url)
        return kbi_error_oom(r->ctx);
    http_req req = {.method = "GET", .url = url, .fd = -1, .sink = w};
    http_resp resp = {0};
    int rc = http_do(r, &req, &resp);
    if (!rc && resp.status == 416) {
        /* our partial file is not a prefix the server can continue: start over */
        rc = kbi_blob_writer_truncate(w);
        if (!rc)
            rc = http_do(r, &req, &resp);
    }
    if (!rc && !status_ok(resp.status))
        rc = http_error(r, &req, &resp);
    resp_free(&resp);
    free(url);
    return rc;
}

/* Upload URLs come back relative or absolute, with or without a query. */
static char *absolute_location(kb_registry *r, const char *location)
{
    if (!location)
        return NULL;
    if (kbi_str_starts(location, "http://") || kbi_str_starts(location, "https://"))
        return kbi_strdup(location);
    return kbi_asprintf("%s%s%s", r->url.base, location[0] == '/' ? "" : "/", location);
}

static char *with_digest(const char *location, const char *digest)
{
    return kbi_asprintf("%s%cdigest=%s", location, strchr(location, '?') ? '&' : '?', digest);
}

/* POST for an upload session; its Location is where the bytes go. */
static int start_upload(char **location, kb_registry *r, const char *repo)
{
    *location = NULL;
    char *url = repo_url(r, repo, "blobs/uploads/", NULL);
    if (!url)
        return kbi_error_oom(r->ctx);
    http_req req = {.method = "POST", .url = url, .fd = -1};
    http_resp resp = {0};
    int rc = http_do(r, &req, &resp);
    if (!rc)
        rc = expect_status(r, &req, &resp, 202);
    if (!rc && !(*location = absolute_location(r, resp.location)))
        rc = kbi_error_set_url(r->ctx, KB_ERR_REGISTRY, url,
                               "POST %s: 202 without a Location for the upload", url);
    resp_free(&resp);
    free(url);
    return rc;
}

/* What an upload reports as progress: one job per blob uploaded from a file. */
typedef struct upload_progress {
    uint64_t job; /* 0: not reported (small blobs from memory) */
    const char *label;
    uint64_t size;
    uint64_t done; /* what the registry acknowledged */
} upload_progress;

static void upload_report(kb_registry *r, const char *digest, const upload_progress *up,
                          uint64_t done, bool finished, int status)
{
    if (!up->job)
        return;
    kb_progress p = {"upload", digest,    done,    up->size, finished ? 1 : 0,
                     up->job,  up->label, "bytes", status};
    kbi_progress_emit(r->ctx, &p);
}

static int send_chunk(char **location, kb_registry *r, const char *method, const char *url,
                      const char *digest, int fd, const void *data, uint64_t offset, uint64_t len,
                      long want, upload_progress *up)
{
    char range[64];
    snprintf(range, sizeof(range), "%llu-%llu", (unsigned long long)offset,
             (unsigned long long)(offset + (len ? len : 1) - 1));
    http_req req = {.method = method,
                    .url = url,
                    .fd = fd,
                    .data = data,
                    .offset = offset,
                    .body_len = len,
                    .has_body = true,
                    .content_type = "application/octet-stream",
                    .content_range = strcmp(method, "PATCH") == 0 ? range : NULL,
                    .progress_task = up->job ? "upload" : NULL,
                    .progress_item = digest,
                    .progress_label = up->label,
                    .progress_job = up->job,
                    .progress_total = up->size};
    if (data)
        req.data = (const char *)data + offset, req.offset = offset;
    http_resp resp = {0};
    int rc = http_do(r, &req, &resp);
    if (!rc)
        rc = expect_status(r, &req, &resp, want);
    if (!rc)
        up->done = offset + len;
    if (!rc && location) {
        char *next = absolute_location(r, resp.location);
        if (next) {
            free(*location);
            *location = next;
        }
    }
    resp_free(&resp);
    return rc;
}

/* One upload session: POST, PATCH chunks in order, final PUT. */
static int upload_once(kb_registry *r, const char *repo, const char *digest, uint64_t size, int fd,
                       const void *data, upload_progress *up)
{
    char *location = NULL;
    int rc = start_upload(&location, r, repo);
    uint64_t chunk = r->chunk_size ? r->chunk_size : KB_UPLOAD_CHUNK_DEFAULT;
    uint64_t sent = 0;
    /* large blobs: PATCH in order (docker-registry ignores Content-Range), then PUT */
    while (!rc && size > chunk && sent < size) {
        uint64_t n = size - sent < chunk ? size - sent : chunk;
        rc = send_chunk(&location, r, "PATCH", location, digest, fd, data, sent, n, 202, up);
        sent += n;
    }
    char *final = !rc ? with_digest(location, digest) : NULL;
    if (!rc && !final)
        rc = kbi_error_oom(r->ctx);
    if (!rc)
        rc = send_chunk(NULL, r, "PUT", final, digest, fd, data, sent, size - sent, 201, up);
    free(final);
    free(location);
    return rc;
}

/* Failures a fresh upload session can get past: the old one is dead or its state unknown. */
static bool upload_restartable(int rc)
{
    return rc == KB_ERR_NETWORK || rc == KB_ERR_TIMEOUT || rc == KB_ERR_HTTP ||
           rc == KB_ERR_REGISTRY || rc == KB_ERR_NOT_FOUND;
}

/* Did the registry store it after all (the answer to the final PUT was what got lost)? */
static bool blob_arrived(kb_registry *r, const char *repo, const char *digest, uint64_t size)
{
    kb_error saved = *kb_ctx_last_error(r->ctx);
    char *message = kbi_strdup(saved.message);
    char *url = kbi_strdup(saved.url);
    uint64_t have = 0;
    bool there = remote_blob_exists(&have, r, repo, digest) == 0 && have == size;
    if (!there && message) /* keep the upload's own failure as the error */
        kbi_error_set_url(r->ctx, saved.code, url, "%s", message);
    free(message);
    free(url);
    return there;
}

/*
 * A cut mid-upload leaves the session at an offset only the server knows (docker-registry
 * then answers 404 BLOB_UPLOAD_INVALID to every retry of that request), so the request-level
 * retries cannot finish it: the whole upload is restarted in a new session, at most twice and
 * only when net.retries allows retries at all.
 */
static int remote_blob_put(kb_registry *r, const char *repo, const char *digest, uint64_t size,
                           const char *path, const void *data, const char *what)
{
    int fd = -1;
    if (path && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return kbi_error_set_path(r->ctx, KB_ERR_IO, path, 0, 0, "cannot open %s: %s", path,
                                  strerror(errno));
    long restarts = R(r)->retries < 2 ? R(r)->retries : 2;
    /* artifacts and sources come from files; what comes from memory is small JSON */
    upload_progress up = {0, NULL, size, 0};
    char *label = NULL;
    if (path) {
        label = kbi_registry_progress_label(repo, digest, what);
        up.job = label ? kbi_progress_job_new(r->ctx) : 0;
        up.label = label;
    }
    upload_report(r, digest, &up, 0, false, 0);
    int rc = upload_once(r, repo, digest, size, fd, data, &up);
    for (long i = 0; rc && upload_restartable(rc); i++) {
        if (blob_arrived(r, repo, digest, size)) {
            kbi_log(r->ctx, KB_LOG_DEBUG, "blob %s: the registry has it; its answer was lost",
                    digest);
            kb_ctx_clear_error(r->ctx);
            rc = 0;
            break;
        }
        if (i >= restarts)
            break;
        kbi_log(r->ctx, KB_LOG_DEBUG, "blob %s: upload failed (%s); starting a new session", digest,
                kb_ctx_last_error(r->ctx)->message);
        kb_ctx_clear_error(r->ctx);
        rc = upload_once(r, repo, digest, size, fd, data, &up);
    }
    upload_report(r, digest, &up, rc ? up.done : size, true, rc);
    free(label);
    if (fd >= 0)
        close(fd);
    return rc;
}

static int remote_manifest_get(kb_registry_manifest **out, kb_registry *r, const char *repo,
                               const char *reference)
{
    char *url = repo_url(r, repo, "manifests/%s", reference);
    if (!url)
        return kbi_error_oom(r->ctx);
    http_req req = {.method = "GET",
                    .url = url,
                    .fd = -1,
                    .accept = MANIFEST_ACCEPT,
                    .max_body = KB_MANIFEST_MAX};
    http_resp resp = {0};
    int rc = http_do(r, &req, &resp);
    if (!rc)
        rc = expect_status(r, &req, &resp, 200);
    kb_registry_manifest *m = NULL;
    if (!rc && (!(m = calloc(1, sizeof(*m))) || kbi_buf_grow(&resp.body, 0)))
        rc = kbi_error_oom(r->ctx);
    if (!rc && resp.docker_digest) {
        /* the registry's word on the digest must match the bytes it sent */
        char hex[65];
        kbi_sha256_hex(resp.body.data, resp.body.len, hex);
        if (!kbi_str_starts(resp.docker_digest, "sha256:") ||
            strcmp(resp.docker_digest + 7, hex) != 0)
            rc = kbi_error_set_url(r->ctx, KB_ERR_DIGEST, url,
                                   "GET %s: digest mismatch: the registry says %s, got sha256:%s",
                                   url, resp.docker_digest, hex);
    }
    if (!rc) {
        m->len = resp.body.len;
        m->data = kbi_buf_detach(&resp.body);
        char *mt = resp.content_type;
        char *semi = mt ? strchr(mt, ';') : NULL;
        if (semi)
            *semi = '\0';
        if (!mt || !*mt || strcmp(mt, "application/json") == 0) {
            json_t *j = json_loadb(m->data, m->len, 0, NULL);
            m->media_type = kbi_strdup(json_string_value(json_object_get(j, "mediaType")));
            json_decref(j);
        } else {
            m->media_type = kbi_strdup(mt);
        }
        if (!m->media_type)
            m->media_type = kbi_strdup(KB_MT_OCI_MANIFEST);
    }
    resp_free(&resp);
    free(url);
    if (rc) {
        kbi_registry_manifest_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

static int remote_manifest_put(kb_registry *r, const char *repo, const char *reference,
                               const char *media_type, const void *data, size_t len,
                               const char *digest)
{
    char *url = repo_url(r, repo, "manifests/%s", reference);
    if (!url)
        return kbi_error_oom(r->ctx);
    http_req req = {.method = "PUT",
                    .url = url,
                    .fd = -1,
                    .data = data,
                    .body_len = len,
                    .has_body = true,
                    .content_type = media_type};
    http_resp resp = {0};
    int rc = http_do(r, &req, &resp);
    if (!rc)
        rc = expect_status(r, &req, &resp, 201);
    if (!rc && resp.docker_digest && strcmp(resp.docker_digest, digest) != 0)
        rc = kbi_error_set_url(r->ctx, KB_ERR_DIGEST, url,
                               "PUT %s: the registry stored digest %s, expected %s", url,
                               resp.docker_digest, digest);
    resp_free(&resp);
    free(url);
    return rc;
}

/* Link: </v2/x/tags/list?last=b&n=100>; rel="next" -> absolute URL, or NULL. */
static char *next_link(kb_registry *r, const char *link)
{
    if (!link || !strstr(link, "rel=\"next\""))
        return NULL;
    const char *lt = strchr(link, '<');
    const char *gt = lt ? strchr(lt, '>') : NULL;
    if (!gt)
        return NULL;
    char *rel = kbi_strndup(lt + 1, (size_t)(gt - lt - 1));
    char *abs = absolute_location(r, rel);
    free(rel);
    return abs;
}

/* GET a paginated list; pushes each string of array `field`; repos filter by prefix. */
static int get_list(kb_strv *out, kb_registry *r, char *url, const char *field,
                    const char *strip_prefix)
{
    int rc = 0;
    size_t pages = 0;
    /* a hash set: checking each new entry against the list was quadratic (64 s for 100k tags) */
    json_t *have = json_object();
    for (size_t i = 0; have && i < out->len; i++)
        json_object_set_new(have, out->items[i], json_true());
    if (!have)
        rc = kbi_error_oom(r->ctx);
    while (!rc && url) {
        if (++pages > LIST_PAGES_MAX) {
            rc =
                kbi_error_set_url(r->ctx, KB_ERR_LIMIT, url,
                                  "GET %s: more than %d pages (a registry whose Link headers never "
                                  "end)",
                                  url, LIST_PAGES_MAX);
            break;
        }
        http_req req = {.method = "GET", .url = url, .fd = -1, .max_body = SMALL_BODY_MAX};
        http_resp resp = {0};
        rc = http_do(r, &req, &resp);
        if (!rc)
            rc = expect_status(r, &req, &resp, 200);
        json_error_t jerr;
        json_t *j = rc ? NULL : json_loadb(resp.body.data, resp.body.len, 0, &jerr);
        if (!rc && !j)
            rc = kbi_error_set_url(r->ctx, KB_ERR_REGISTRY, url, "GET %s: invalid JSON: %s", url,
                                   jerr.text);
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(j, field), i, item)
        {
            const char *s = json_string_value(item);
            if (rc || !s)
                continue;
            if (strip_prefix && *strip_prefix) {
                if (!kbi_str_starts(s, strip_prefix))
                    continue;
                s += strlen(strip_prefix);
            }
            if (json_object_get(have, s))
                continue;
            if (json_object_set_new(have, s, json_true()) || kbi_strv_push(out, s))
                rc = kbi_error_oom(r->ctx);
        }
        json_decref(j);
        char *next = rc ? NULL : next_link(r, resp.link);
        if (next && strcmp(next, url) == 0) {
            rc = kbi_error_set_url(r->ctx, KB_ERR_REGISTRY, url,
                                   "GET %s: the next page's Link points at the same page", url);
            free(next);
            next = NULL;
        }
        resp_free(&resp);
        free(url);
        url = next;
    }
    free(url);
    json_decref(have);
    return rc;
}

static int remote_tags(kb_strv *out, kb_registry *r, const char *repo)
{
    char *url = repo_url(r, repo, "tags/list?n=%s", "100");
    return url ? get_list(out, r, url, "tags", NULL) : kbi_error_oom(r->ctx);
}

static int remote_catalog(kb_strv *out, kb_registry *r)
{
    char *url = kbi_asprintf("%s/v2/_catalog?n=100", r->url.base);
    char *prefix = *r->url.namespace ? kbi_asprintf("%s/", r->url.namespace) : kbi_strdup("");
    int rc = url && prefix ? get_list(out, r, url, "repositories", prefix) : kbi_error_oom(r->ctx);
    if (!url || !prefix)
        free(url);
    free(prefix);
    return rc;
}

static void remote_free(kb_registry *r)
{
    remote *rm = R(r);
    if (!rm)
        return;
    if (rm->curl)
        curl_easy_cleanup(rm->curl);
    free(rm->token);
    free(rm);
    r->impl = NULL;
}

static const kb_registry_ops remote_ops = {
    .kind = "remote",
    .blob_exists = remote_blob_exists,
    .blob_get = remote_blob_get,
    .blob_put = remote_blob_put,
    .manifest_get = remote_manifest_get,
    .manifest_put = remote_manifest_put,
    .tags = remote_tags,
    .catalog = remote_catalog,
    .ping = remote_ping,
    .free = remote_free,
};

int kbi_remote_init(kb_registry *r)
{
    remote *rm = calloc(1, sizeof(*rm));
    if (!rm)
        return kbi_error_oom(r->ctx);
    r->impl = rm;
    r->ops = &remote_ops;
    rm->curl = curl_easy_init();
    if (!rm->curl)
        return kbi_error_set(r->ctx, KB_ERR_NETWORK, "cannot initialise libcurl");
    rm->timeout_s = kbi_config_long(r->ctx, "net.timeout_s");
    rm->retries = kbi_config_long(r->ctx, "net.retries");
    rm->deadline_s = kbi_config_long(r->ctx, "net.deadline_s");
    if (rm->timeout_s <= 0)
        rm->timeout_s = 30;
    if (rm->retries < 0)
        rm->retries = 0;
    return 0;
}
