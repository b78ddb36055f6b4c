/*
 * Outbound HTTP for plugins, on h2o's HTTP client (HTTP/1.1, and HTTP/2 where
 * a TLS upstream offers it by ALPN) and socket pool.
 *
 * A call (weft_fetch) is created from the plugin's request on any thread,
 * then started and finished on one loop thread, whose upstreams keep pooled
 * keep-alive connections. The host calls in http_host.c decide how the
 * plugin waits for it.
 */
#ifndef WEFT_OUTBOUND_H
#define WEFT_OUTBOUND_H

#include <stdint.h>
#include <weft/plugin.h>

#include "base/timer.h"
#include "core/loop.h"

typedef struct weft_upstream weft_upstream;
typedef struct weft_fetch weft_fetch;

struct weft_fetch {
    /* the call, copied from the plugin's request */
    char *method, *url, *host, *authority, *path, *ca_file;
    uint16_t port;
    int is_ssl;
    h2o_iovec_t body_out;   /* the request body (malloc'd) */
    char **hdr_names, **hdr_values; /* the plugin's headers, copied (lower-case names) */
    size_t n_hdrs;
    int has_ua;
    int connect_timeout_ms, timeout_ms, max_connections;
    size_t max_body;
    const char *label; /* the route, for log lines */

    /* the outcome; res is handed over by weft_fetch_take() */
    weft_http_response *res;
    int rc;
    void (*on_done)(weft_fetch *f); /* loop thread, exactly once */
    /* Starts the h2o client once the upstream has a slot for the call; a
     * pointer so that upstream.c, which calls it, needs nothing of fetch.c. */
    void (*go)(weft_fetch *f, h2o_httpclient_connection_pool_t *pool, h2o_httpclient_ctx_t *ctx);
    void *data;

    /* while it runs (loop thread) */
    weft_loop *loop;
    weft_upstream *up;
    h2o_httpclient_t *client; /* NULL when h2o is not (or no longer) running it */
    h2o_mem_pool_t pool;       /* what h2o's client allocates for the call (loop thread) */
    int pool_used;
    h2o_url_t target;          /* f->url parsed into pool */
    h2o_headers_t headers;     /* what is sent, in pool */
    h2o_linklist_t queued;     /* waiting for a connection of its upstream */
    int active;                /* counted in up->active */
    int starting, finished, done_pending;
    /* A pooled keep-alive connection the upstream closed under the request
     * (before any byte of the answer): an idempotent call is sent once more. */
    int reused, retried, connecting;
    h2o_httpclient_connection_pool_t *connpool;
    h2o_httpclient_ctx_t *client_ctx;
    weft_timer connect_timer, total_timer;
    char *body;
    size_t body_len, body_cap;

    /* trace context (fetch_trace.c): a child span of the request's */
    int traced;
    uint8_t trace_id[16], span_id[8], parent_id[8], trace_flags;
    char *tracestate;  /* malloc'd; NULL: none */
    uint64_t start_ns; /* when the call started, for its span */
};

/** Copies `rq` into a new call; NULL without memory. A bad request gives a
 *  call that finishes at once with WEFT_HTTP_BAD_REQUEST. Any thread. */
weft_fetch *weft_fetch_new(const weft_http_request *rq, const char *label);
/** Starts `f` on the calling loop; f->on_done runs when it is over (maybe
 *  before this returns, never inside it). Loop thread. */
void weft_fetch_start(weft_fetch *f, weft_loop *L);
/** Ends a running call with WEFT_HTTP_CANCELLED, closing its connection
 *  (the upstream sees it go); on_done runs before this returns. Loop thread. */
void weft_fetch_cancel(weft_fetch *f);
/** Calls sent again after a stale pooled connection (any thread). */
uint64_t weft_fetch_retries(void);
/** The outcome (rc) and response, handed to the caller. */
int weft_fetch_take(weft_fetch *f, weft_http_response **res);
/** The host result code for a weft_http_error. */
int weft_http_rc(int error);
/** Frees a call that is over, or was never started. */
void weft_fetch_free(weft_fetch *f);

/** The response of a failed call: `error` and its text, status 0. NULL without memory. */
weft_http_response *weft_http_response_error(int error, const char *text);
/** A response under construction: status, headers copied from h2o. NULL without memory. */
weft_http_response *weft_http_response_new(int status, const h2o_header_t *headers, size_t n);
/** Hands `body` (malloc'd, NUL-terminated) to the response. */
void weft_http_response_set_body(weft_http_response *res, char *body, size_t len);
const char *weft_fetch_http_header(const weft_http_response *res, const char *name);
void weft_fetch_http_free(weft_http_response *res);

/* ---- trace context (fetch_trace.c) ---- */

/** Makes `f` a child span of the request's trace (any thread, before it starts). */
void weft_fetch_trace(weft_fetch *f, const weft_req *r);
/** Adds traceparent and tracestate to what is sent, unless the plugin set them (loop thread, in f->pool). */
void weft_fetch_trace_headers(weft_fetch *f);
/** The call's client span to the exporter, when sampled (loop thread, when it finished). */
void weft_fetch_trace_end(weft_fetch *f, int error, const char *text);

/* ---- upstreams (upstream.c) ---- */

/** The calling loop's upstream for f's scheme, host, port and CA file; NULL
 *  when it cannot be made (error text in *why). Loop thread. */
weft_upstream *weft_upstream_get(weft_loop *L, const weft_fetch *f, const char **why);
/** Runs `f` now if the upstream has a free connection slot, else queues it. */
void weft_upstream_submit(weft_upstream *up, weft_fetch *f);
/** `f` no longer needs its slot or its place in the queue. */
void weft_upstream_release(weft_upstream *up, weft_fetch *f);

/** Gives every loop its upstream table (control thread, before the loops start). */
void weft_outbound_attach(void);

/* ---- the host calls (http_host.c) ---- */
int weft_http_host_http_fetch(weft_req *r, const weft_http_request *rq, weft_http_response **res);
int weft_http_host_http_fetch_all(weft_req *r, size_t n, const weft_http_request *rqs, weft_http_response **res);
void weft_http_host_http_fetch_async(weft_req *r, const weft_http_request *rq, weft_http_callback cb, void *arg);

#endif
