/*
 * One way for a host call to wait for an operation that runs on the
 * request's loop (a sleep, a taken lock, a flush, a parked descriptor,
 * outbound calls, a statement), under every policy, and to end that wait when the request is
 * cancelled.
 *
 * The caller fills a weft_await and calls weft_await_block() (blocking style) or
 * weft_await_async() (reactive). `start` runs on the request's loop thread:
 *   coroutine  inline; the coroutine is then suspended until done;
 *   pool       posted to the loop; the worker sleeps on a futex word;
 *   reactive   weft_await_block() refuses (the loop would wait for itself):
 *              weft_await_async() starts it and runs `complete` once done.
 * The operation ends with exactly one weft_await_done(), on the loop thread,
 * maybe from inside `start`; it must not touch the weft_await afterwards (a
 * coroutine's or worker's stack frame holds it).
 *
 * This file alone decides by the request's policy how a host call waits
 * (weft_req.exec): park the worker, yield the coroutine, or call back the
 * reactive handler. The host calls of db/, ws/ and outbound/ ask it through
 * the three questions below rather than read the policy themselves.
 *
 * Cancellation: with `cancel` set, the wait is registered with the request
 * on the loop thread (the only thread weft_req_wait_add may run on), just
 * before `start`. Cancelling the request calls cancel(a), which stops the
 * operation and ends it with weft_await_done(a, WEFT_CANCELLED), now or
 * later. A request that is already cancelled never starts the operation:
 * WEFT_CANCELLED at once. Without `cancel` the operation ends by itself.
 *
 * A reactive wait's record (the weft_await inside the caller's own struct)
 * cannot live on a stack: it comes from weft_await_rec_new and goes back
 * with weft_await_rec_free once the operation is done, before the
 * handler's callback runs, so a handler that waits in a loop (a stream's
 * flush and sleep per event, a body read per part) reuses one record per
 * kind for as long as it runs instead of growing its request's arena by
 * one per round. The record's last reader copies what the callback needs
 * first: the callback may start the next wait in the same record.
 *
 * A reactive handler may finish (done(), or a return that is not
 * WEFT_AGAIN) while a wait it started is still on its way: a plugin bug,
 * but not one that may cost the process. The request's first
 * weft_await_async registers a defer (request.h) that, once the handler
 * has finished, stops each such wait with its `cancel` and never calls its
 * `complete`:
 * the handler's callback would run on a request that is gone. What the
 * operation owns outside the request's memory is freed by its `abandon`,
 * and an end that cannot be stopped (a lock already granted, its message
 * on the way) holds the request with weft_req_pin until it arrives.
 */
#ifndef WEFT_AWAIT_H
#define WEFT_AWAIT_H

#include <stdatomic.h>

#include "core/loop.h"
#include "request/cancel.h"
#include "request/request.h"

typedef struct weft_await weft_await;
typedef void (*weft_await_fn)(weft_await *a);

struct weft_await {
    weft_req *r;
    weft_await_fn start;    /* loop thread: begins the operation */
    weft_await_fn cancel;   /* loop thread, or NULL: stops it (then done with WEFT_CANCELLED) */
    weft_await_fn complete; /* weft_await_async only: loop thread, once, after done */
    weft_await_fn abandon;  /* weft_await_async only, or NULL: instead of complete once the handler finished */
    int rc;                 /* the outcome, from weft_await_done */
    /* private */
    weft_wait wait;
    weft_msg msg;
    struct weft_await *next_async; /* the request's reactive waits on their way (await.c) */
    int mode, done, suspended, registered, abandoned;
    atomic_int word; /* a worker's wait (await.c) */
};

/**
 * Starts `a` on r's loop and waits under r's policy until it is done;
 * returns its rc. Coroutine or worker; WEFT_ERROR on a reactive handler
 * (the caller logs what to use instead).
 */
int weft_await_block(weft_await *a);
/**
 * The one outcome of a blocking-style call (`call`, e.g. "db_query()") from a
 * reactive handler, where the loop would wait for itself: returns 1 when `r`
 * runs reactive, after logging route, call and `instead` once per
 * blocking.interval_s per route; the caller then returns WEFT_ERROR (and
 * does nothing else). 0 for a pool or coroutine handler.
 */
int weft_await_refused(weft_req *r, const char *call, const char *instead);
/**
 * 1 when the caller is a pool worker, which may block its own thread on a
 * blocking connection it holds (db/'s pool_connections, a transaction's
 * connection); everywhere else the wait goes through weft_await_block.
 */
int weft_await_in_place(const weft_req *r);
/** 1 when `r`'s handler (or callback) runs reactive on the loop: the _async forms are for it. */
int weft_await_reactive(const weft_req *r);

/** Starts `a` from the loop thread; a->complete(a) runs once it is done (maybe before this returns). */
void weft_await_async(weft_await *a);
/** The operation is over (loop thread): wakes whoever waits. */
void weft_await_done(weft_await *a, int rc);

/**
 * A record of `size` bytes (16-aligned, not zeroed) for one reactive wait of
 * `r`, on r's loop thread: one that an earlier wait of the same size gave
 * back, else a new one from r's arena. NULL out of memory. Records are
 * request memory: a wait left pending when its request ends (a handler that
 * called done() under it) is freed with the request, like the rest.
 */
void *weft_await_rec_new(weft_req *r, size_t size);
/** Gives `rec` (from weft_await_rec_new for `r`) back for r's next wait of its size. */
void weft_await_rec_free(weft_req *r, void *rec);

#endif
