/* A loopback HTTP proxy for tests: forwards to a real registry and injects network faults by rule.
 */
#ifndef KBT_FAULT_PROXY_H
#define KBT_FAULT_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * One request per connection: the proxy sends "Connection: close" both ways.
 * It runs in a thread of the test process (one more thread per connection),
 * so rules can change between calls and counters are read directly.
 */
typedef enum kbt_fault_kind {
    KBT_FAULT_CUT = 1,       /* send `offset` body bytes, then reset the connection */
    KBT_FAULT_TRUNCATE,      /* send `offset` body bytes of a longer Content-Length, then FIN */
    KBT_FAULT_STALL_HEADERS, /* wait `ms` before any byte of the answer, then answer */
    KBT_FAULT_STALL_BODY,    /* send `offset` body bytes, wait `ms`, send the rest */
    KBT_FAULT_STATUS,        /* answer `status` (500/503/429) with Retry-After: `retry_after` */
    KBT_FAULT_FLIP,          /* flip the body byte at `offset` (modulo the length) */
    KBT_FAULT_IGNORE_RANGE,  /* drop the Range header upstream: the client gets 200 full */
    KBT_FAULT_TRICKLE,       /* send the body `chunk` bytes at a time, `ms` apart */
    KBT_FAULT_CUT_REQUEST,   /* forward `offset` request-body bytes upstream, then cut both */
    KBT_FAULT_CUT_AFTER_UPSTREAM, /* forward the whole exchange upstream, reset the client */
    KBT_FAULT_ANSWER /* a hostile registry: answer `status` (0: 200) with `headers` and `body`
                        itself, trickled `chunk` bytes every `ms` when ms is set; upstream is
                        never asked. "{PROXY}" in headers or body becomes the proxy's URL */
} kbt_fault_kind;

typedef struct kbt_fault_rule {
    const char *method; /* "GET"; NULL: any */
    const char *path;   /* POSIX extended regex searched in the request path; NULL: any */
    unsigned nth;       /* fault the nth matching request (1-based); 0: every one */
    unsigned times;     /* with nth: fault this many matches from nth on (0 means 1) */
    kbt_fault_kind kind;
    uint64_t offset; /* body byte where cut/truncate/stall/flip acts */
    unsigned ms;     /* stall length, or delay between trickled chunks */
    int status;      /* KBT_FAULT_STATUS: 500, 503, 429 */
    int retry_after; /* seconds in Retry-After; 0: no header */
    size_t chunk;    /* KBT_FAULT_TRICKLE: bytes per write (0 means 1024) */
    bool corrupt;    /* also flip the body byte at corrupt_at, whatever the kind */
    uint64_t corrupt_at;
    const char *headers; /* KBT_FAULT_ANSWER: extra header lines, each ending "\r\n" */
    const char *body;    /* KBT_FAULT_ANSWER: the body ("" when NULL) */
} kbt_fault_rule;

/* What the proxy saw and did for one request, in arrival order. */
typedef struct kbt_proxy_entry {
    char method[16];
    char path[512];
    char range[64];     /* the client's Range header, "" when none */
    int status;         /* what the client was sent (0: nothing) */
    uint64_t body_sent; /* response body bytes written to the client */
    bool faulted;       /* a rule fired on it */
    char auth[16];      /* the scheme of its Authorization header ("Basic"), "" when none */
} kbt_proxy_entry;

typedef struct kbt_proxy kbt_proxy;

/* Start a proxy on 127.0.0.1:<free port> in front of upstream_port. Asserts it listens. */
kbt_proxy *kbt_proxy_start(int upstream_port);
/* Stop accepting, wait for connections in flight, free everything. NULL is fine. */
void kbt_proxy_stop(kbt_proxy *p);
int kbt_proxy_port(const kbt_proxy *p);
/* "http://127.0.0.1:PORT" (borrowed) */
const char *kbt_proxy_url(const kbt_proxy *p);

/* Add a rule (copied; its match counter starts at 0). Rules are tried in order; first wins. */
void kbt_proxy_add_rule(kbt_proxy *p, const kbt_fault_rule *rule);
/* Drop every rule (counters of requests stay). */
void kbt_proxy_clear_rules(kbt_proxy *p);
/* Forget the request log. */
void kbt_proxy_reset_log(kbt_proxy *p);

/* Requests seen whose method equals method (NULL: any) and path contains path_part (NULL: any). */
unsigned kbt_proxy_count(kbt_proxy *p, const char *method, const char *path_part);
/* Response body bytes sent to the client for such requests. */
uint64_t kbt_proxy_body_bytes(kbt_proxy *p, const char *method, const char *path_part);
/* A copy of the index-th logged request; false past the end. */
bool kbt_proxy_entry_at(kbt_proxy *p, size_t index, kbt_proxy_entry *out);
size_t kbt_proxy_entries(kbt_proxy *p);
/* The log to stderr, one request a line: to see what a failing test went through. */
void kbt_proxy_dump(kbt_proxy *p);

#endif
