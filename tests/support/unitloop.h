/*
 * Real event loops for unit tests (core/loop.c with no listeners), so that
 * dispatch, the host's sleep/lock primitives and reload run exactly as they
 * do in the server: on loop threads, woken by loop messages and timers.
 * A test's requests are weft_reqs on a hand-made route; their completions
 * (weft_req_complete) are recorded here, on the loop thread that made them.
 */
#ifndef WEFT_TEST_UNITLOOP_H
#define WEFT_TEST_UNITLOOP_H

#include <pthread.h>

#include "config/config.h"
#include "core/loop.h"
#include "request/request.h"
#include "request/route.h"

/** Registers `hook` to run on every loop (before wt_loops_start). */
void wt_loops_hook(const weft_loop_hook *hook);
/** Starts `n` loops, each with a coroutine stack pool. */
void wt_loops_start(int n);
/** Stops (waiting for in-flight requests), joins and frees the loops; asserts none abandoned work. */
void wt_loops_stop(void);
/**
 * Serves `on_req` (an h2o handler, loop thread; it may take streamed bodies)
 * on every path of the loops' h2o host, for tests that speak HTTP to a loop
 * through wt_h1_connect (before wt_loops_start).
 */
void wt_loops_handler(int (*on_req)(h2o_handler_t *self, h2o_req_t *req));
/** Lets `reg` install the handlers of every path instead (e.g. http/'s weft_http_register; before wt_loops_start). */
void wt_loops_register(void (*reg)(h2o_pathconf_t *pathconf));
/**
 * A loopback TCP port where loop i's h2o accepts HTTP/1 connections (one
 * listener per process, on the first loop asked; closed by wt_loops_stop).
 */
int wt_h1_listen(int i);
/** A connection to wt_h1_listen(i): the test's end, a blocking socket. */
int wt_h1_connect(int i);
/**
 * Makes every loop serve `g` (the test's, e.g. with a config and a router;
 * NULL: none), as reload/ would; wt_loops_stop takes it away again. After
 * wt_loops_start.
 */
struct weft_generation;
void wt_loops_generation(struct weft_generation *g);
/** Runs fn(arg) on loop i's thread and waits until it returned. */
void wt_on_loop(int i, void (*fn)(void *arg), void *arg);

/** A route with its own config for `desc` under `dispatch` (pool: a pool of `pool_size` workers, queue `queue`). */
typedef struct wt_route {
    weft_route route;
    weft_route_cfg cfg;
} wt_route;
void wt_route_init(wt_route *rt, const weft_plugin *desc, weft_dispatch dispatch, int pool_size, int queue);
void wt_route_fini(wt_route *rt);

/** What a completed request left behind. */
typedef struct wt_done {
    int id;           /* wt_req_new's id */
    int rc;           /* the handler's result */
    int status;       /* the response status (0: none set) */
    int loop;         /* index of the loop thread that completed it, -1 if not a loop thread */
    char body[256];   /* the response body, truncated */
    char retry[16];   /* its retry-after header, if any */
    uint64_t elapsed_ns; /* its latency as the request layer measured it (weft_req_elapsed_ns) */
} wt_done;

/** A request for `rt` owned by loop `loop`, numbered `id`. */
weft_req *wt_req_new(wt_route *rt, int loop, int id);
/** Starts `r` on its loop (posts weft_dispatch_start there). */
void wt_req_start(weft_req *r);
/** Waits until `n` requests completed in all (fails the test after limit_ms); returns the records (static). */
const wt_done *wt_wait_done(int n, double limit_ms);
/** Completions so far. */
int wt_done_count(void);

/** Ordered event log for assertions on interleavings: appends `what` (thread-safe). */
void wt_trace(const char *what);
/** The events so far, joined with ' ' (a static copy, valid until the next call). */
const char *wt_trace_text(void);

#endif
