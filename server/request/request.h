/*
 * weft_req: weft's own copy of a request and the response being built.
 *
 * Plugins never see h2o. Everything a handler reads is copied out of the
 * h2o request when it is dispatched, so a worker thread can read it while
 * the loop thread goes on, and a client that hangs up (which frees the h2o
 * request) cannot pull memory out from under a running handler. Only the
 * owning loop thread touches `link`; a handler touches the rest, and exactly
 * one thread handles a request at any time.
 */
#ifndef WEFT_REQUEST_H
#define WEFT_REQUEST_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <weft/plugin.h>

#include "config/router.h"
#include "base/timer.h"
#include "core/peers.h"
#include "request/trace.h"

struct weft_route;
struct weft_loop;
struct weft_wait;

typedef struct weft_kv {
    const char *name;
    const char *value;
} weft_kv;

typedef struct weft_arena_chunk weft_arena_chunk;
typedef struct weft_defer weft_defer;
typedef struct weft_stream weft_stream;

/* Per-request state of the layers above (h2o's request `storage`, nginx's
 * r->ctx[module.ctx_index]): each takes a slot of its own size before the
 * first request, and finds its storage at a fixed offset past the weft_req,
 * in the same allocation as the request's first arena chunk. */
#define WEFT_REQ_SLOTS 8

/* What currently drives the handler; decides how blocking primitives behave. */
typedef enum weft_exec {
    WEFT_EXEC_LOOP,      /* reactive handler or callback on the loop thread */
    WEFT_EXEC_COROUTINE, /* blocking-style handler in a coroutine on the loop thread */
    WEFT_EXEC_WORKER     /* blocking-style handler on a pool worker */
} weft_exec;

struct weft_req {
    struct weft_req_head head; /* first: weft_req_host() reads it (plugin API 2); weft_req_default_host */
    weft_arena_chunk *arena;

    /* request, immutable after dispatch */
    const char *method;
    unsigned method_bit;
    const char *path;
    const char *query; /* raw text after '?', or NULL */
    weft_kv *headers;
    size_t n_headers;
    const char *body;
    size_t body_len;
    weft_kv params[WEFT_MAX_PARAMS];
    size_t n_params;
    weft_kv *query_kv; /* parsed on first use */
    size_t n_query;
    int query_parsed;

    /* response */
    int status;
    weft_kv *res_headers;
    size_t n_res_headers, cap_res_headers;
    char *res_body;
    size_t res_len, res_cap;
    int res_failed; /* out of memory while building: answer 500 */

    /* dispatch */
    struct weft_route *route;
    struct weft_loop *loop;    /* owning loop thread */
    struct weft_req_link *link; /* loop thread only; NULL once the client is gone */
    weft_exec exec;
    const char *ran_as;    /* dispatch/: the policy that last ran the handler, named for spans */
    int rc;                /* handler result */
    int in_slice;          /* >0 while loop-thread plugin code runs for it */
    int finished;          /* the handler is done; complete when the slice ends */
    int pins;              /* loop thread: ends still on their way that touch it (weft_req_pin) */
    void (*unpinned)(weft_req *r); /* loop thread: what its completion left for the last weft_req_unpin */
    int auto_probe;        /* dispatch = auto: this request probes its demoted route on a coroutine */
    /* Its own clock reads (weft_now_ns(), never the loop's once-per-wake-up
     * one): when it was dispatched and when weft_req_complete ran, so that a
     * handler holding the loop for 16 ms counts 16 ms in the histogram, the
     * span and the Dev UI alike (weft_req_elapsed_ns). */
    uint64_t start_ns, end_ns;
    uint64_t gen_epoch;    /* http/: of its loop-local reference to its generation (reload/generation.h) */
    void (*on_complete)(weft_req *r); /* set by whoever dispatched it (http/) */
    weft_timer resume_timer; /* a resume requested from inside another coroutine */
    /* where it came from (access.c): copied raw, formatted when first asked
     * (most handlers never ask, and formatting costs more than the copy) */
    weft_sockaddr peer_sa, local_sa;
    char peer_addr[46], local_addr[46];
    int peer_port, local_port;
    int addrs_formatted;
    char id[65];
    int id_sent; /* the id is the client's X-Request-Id */
    /* streamed response (stream.c) */
    int streamed;                            /* the head went out; the body follows in flushes */
    struct weft_stream *stream;              /* lives in h2o's pool; NULL once the client left */
    void *hreq;                              /* the h2o request while it lives (set by http/) */
    void (*flush_done)(weft_req *r, int rc); /* the waiter of the flush in progress (dispatch/) */
    void *flush_arg;
    weft_defer *defers;    /* run when the handler has finished */
    weft_timer queue_timer; /* pool: the pool's queue_timeout_ms while queued (dispatch/) */
    atomic_int *slot;       /* the count of its route's requests in flight it is in (dispatch/) */
    int lent;               /* pool: its worker is lent to it (a WebSocket, a stream; dispatch/) */
    int lend_refused;       /* pool: it asked to be long-lived at max_long_lived: answer 503 */
    void (*dispatched_complete)(weft_req *r); /* on_complete, wrapped while dispatch holds something */
    uint64_t conn_id;      /* the carrying connection (per-connection budgets, http/) */
    struct weft_body *body_in; /* the body still arriving, for a route that streams it (body.c) */
    int body_read_once;        /* req_body_read handed out the whole body already (body.c) */
    struct weft_conn *conn; /* its admission record, busy while this runs (core/loop.h); may be NULL */

    /* cancellation (request/cancel.h) */
    atomic_int cancelled;        /* WEFT_CANCEL_*; read by any thread */
    struct weft_wait *waits;     /* loop-side waits cancellation can end; loop thread */
    atomic_int cancel_sync;      /* cancel_mu and cancel_cv are set up (a worker blocked) */
    pthread_mutex_t cancel_mu;   /* guards worker_wake against the loop's cancel */
    pthread_cond_t cancel_cv;    /* a worker's cancellable sleep */
    void (*worker_wake)(void *arg);
    void *worker_wake_arg;
    weft_timer cancel_timer;     /* runs the cancellation outside h2o's dispose */
    weft_timer deadline;         /* the route's timeout_ms */
    /* Set by a host facility that outlives the handler's own work (a
     * WebSocket): runs on the loop thread when the request completes. */
    void (*on_finish)(weft_req *r, void *data);
    void *on_finish_data;
    weft_req_trace trace; /* W3C trace context and weft's span (request/trace.h) */
};

/** Ties a weft_req to the h2o request carrying it (http/ owns it; a facility
 *  that takes the connection over, like a WebSocket upgrade, cuts it). */
typedef struct weft_req_link {
    struct st_h2o_req_t *req;
    weft_req *wr;
    /* HTTP/1 only: h2o stops reading while a request is handled, so it would
     * not see the client leave; http/ watches the socket meanwhile. */
    struct st_h2o_socket_t *h1_sock;
    struct weft_req_link *h1_prev, *h1_next;
    /* Set by http/: ends its own use of the connection (that watch) before a
     * facility takes the connection over. */
    void (*detach)(struct weft_req_link *link);
} weft_req_link;

/**
 * A new per-request slot of `size` bytes (16-aligned, zeroed in every new
 * request). Before the first weft_req_new (WEFT_REQ_SLOT takes it in a
 * constructor); the process aborts past WEFT_REQ_SLOTS or once requests exist.
 */
int weft_req_slot_new(size_t size);
/** Where each slot's storage starts, from the weft_req (request.c fills it in). */
extern size_t weft_req_ext_at[WEFT_REQ_SLOTS];
/** The storage of `slot` in `r`: never NULL, lives exactly as long as `r`. The thread handling `r`. */
static inline void *weft_req_ext(const weft_req *r, int slot) { return (char *)r + weft_req_ext_at[slot]; }
/** Defines `static int NAME`, a per-request slot holding a TYPE, taken before main() runs. */
#define WEFT_REQ_SLOT(name, type)                                                                                   \
    static int name = -1;                                                                                           \
    __attribute__((constructor)) static void name##_take(void) { name = weft_req_slot_new(sizeof(type)); }

/** Allocates from the request's arena; freed with the request. NULL on OOM. */
void *weft_req_alloc(weft_req *r, size_t size);
/** The bytes r's arena has taken so far (its chunks' sizes): what a request's memory grew to. */
size_t weft_req_arena_bytes(const weft_req *r);
char *weft_req_strndup(weft_req *r, const char *s, size_t len);
/** Percent-decodes `len` bytes into the arena; '+' becomes ' ' when `plus` is set. */
char *weft_req_decode(weft_req *r, const char *s, size_t len, int plus);

/**
 * Registers fn(r, arg) to run once the handler has finished (returned, or
 * called done()), on the thread that ran it and before the response goes
 * out; last registered runs first. Returns 0, or -1 out of memory.
 */
int weft_req_defer(weft_req *r, void (*fn)(weft_req *r, void *arg), void *arg);
/** Runs and forgets the registered defers (dispatch). */
void weft_req_run_defers(weft_req *r);

/** A response header already set, or NULL (name case-insensitive). */
const char *weft_req_res_header(const weft_req *r, const char *name);
/** Parses the query string into query_kv once (the thread running the handler). */
void weft_req_parse_query(weft_req *r);
/** Takes the client's X-Request-Id when it has a sane shape, else makes one up (access.c). */
void weft_req_set_id(weft_req *r, const char *incoming, size_t len);
/** Keeps the peer/local socket addresses (either may be NULL) for the accessors below. */
void weft_req_set_addrs(weft_req *r, const void *peer_sa, const void *local_sa);
/** `sa` (IPv4 or IPv6; NULL or another family: "") as text into `out`; returns its port, 0 without one. */
int weft_sockaddr_format(const struct sockaddr *sa, char *out, size_t size);

/* The ABI 1.1 request access and response helpers (access.c). */
const char *weft_access_req_peer_addr(const weft_req *r, int *port);
const char *weft_access_req_local_addr(const weft_req *r, int *port);
int weft_access_req_header_at(const weft_req *r, size_t i, const char **name, const char **value, size_t *value_len);
int weft_access_req_query_at(const weft_req *r, size_t i, const char **name, const char **value, size_t *value_len);
const char *weft_access_req_query_string(const weft_req *r);
const char *weft_access_req_param_len(const weft_req *r, const char *name, size_t *len);
const char *weft_access_req_query_len(const weft_req *r, const char *name, size_t *len);
const char *weft_access_req_header_len(const weft_req *r, const char *name, size_t *len);
const char *weft_access_req_cookie(const weft_req *r, const char *name, size_t *len);
const char *weft_access_req_id(const weft_req *r);
int weft_access_res_error_json(weft_req *r, int status, const char *message);
int weft_access_res_cookie(weft_req *r, const char *name, const char *value, long long max_age, const char *path,
                    const char *domain, unsigned flags);
int weft_access_res_redirect(weft_req *r, int status, const char *location);

weft_req *weft_req_new(void);
/**
 * What weft_req_host() of every new request returns (plugin API 2's table).
 * plugin/ sets it before the first route's init, so before any handler.
 */
extern const struct weft_host *weft_req_default_host;
void weft_req_free(weft_req *r);
/**
 * The handler is done (loop thread): reads the clock for its end_ns, then
 * hands `r` back to whoever dispatched it, which answers the client if it
 * is still there and frees `r`.
 */
void weft_req_complete(weft_req *r);
/**
 * Holds `r`'s memory past its completion (loop thread): an operation whose
 * end cannot be stopped (a lock granted on another thread, its message on
 * the way to r's loop) pins r until it arrives. weft_req_free of a pinned
 * request frees it at the last unpin; whoever has more to let go of with
 * it (http/: its generation) asks weft_req_free_later first.
 */
void weft_req_pin(weft_req *r);
void weft_req_unpin(weft_req *r);
/** 1 when `r` is pinned: `release(r)` then runs at its last unpin instead of now; else 0. */
int weft_req_free_later(weft_req *r, void (*release)(weft_req *r));
/** How long `r` took, dispatch to completion (0 before weft_req_complete). */
static inline uint64_t weft_req_elapsed_ns(const weft_req *r)
{
    return r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
}

/* The request and response halves of the host table (host.c assembles it). */
const char *weft_request_req_method(const weft_req *r);
const char *weft_request_req_path(const weft_req *r);
const char *weft_request_req_param(const weft_req *r, const char *name);
const char *weft_request_req_query(const weft_req *r, const char *name);
const char *weft_request_req_header(const weft_req *r, const char *name);
const char *weft_request_req_body(const weft_req *r, size_t *len);
void weft_request_res_status(weft_req *r, int status);
int weft_request_res_header(weft_req *r, const char *name, const char *value);
int weft_request_res_write(weft_req *r, const void *data, size_t len);
int weft_request_res_printf(weft_req *r, const char *fmt, ...) WEFT_PRINTF(2, 3);
/** The same with a va_list (the plugin API's res_writef formats through it). */
int weft_request_res_vprintf(weft_req *r, const char *fmt, va_list ap) WEFT_PRINTF(2, 0);
int weft_request_res_error(weft_req *r, int status, const char *message);

#endif
