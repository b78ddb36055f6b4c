/*
 * Cancellation: a request whose client has gone (HTTP/1 close, HTTP/2
 * RST_STREAM or GOAWAY) or whose deadline passed stops costing anything.
 *
 * The state lives on the weft_req. Whatever a handler is waiting for
 * registers itself here, so the owning loop can end that wait with
 * WEFT_CANCELLED:
 *   - on the loop (coroutine or reactive callbacks): a weft_wait in the
 *     request's list, whose cancel() unschedules the timer / leaves the lock
 *     queue / abandons the statement and resumes the waiter;
 *   - on a pool worker: the worker blocks through weft_req_worker_block(),
 *     whose wake function the loop calls under the request's cancel mutex.
 * A wait entered after cancellation fails at once, so a handler that ignores
 * one WEFT_CANCELLED still cannot start a new long wait.
 */
#ifndef WEFT_CANCEL_H
#define WEFT_CANCEL_H

#include <stdint.h>
#include <weft/plugin.h>

/** Why a request was cancelled (0: it was not). */
enum {
    WEFT_CANCEL_NONE = 0,
    WEFT_CANCEL_CLIENT = 1,   /* the client went away: logged as 499 */
    WEFT_CANCEL_DEADLINE = 2  /* the route's timeout_ms passed: the client gets 504 */
};

/** A loop-side wait that cancellation can end. Embed it in the waiter's state. */
typedef struct weft_wait {
    struct weft_wait *next;
    /* Loop thread. The wait is already unlinked; end it with WEFT_CANCELLED. */
    void (*cancel)(struct weft_wait *w);
} weft_wait;

/** WEFT_CANCEL_* reason, 0 while the request is wanted. Any thread. */
int weft_req_cancelled(const weft_req *r);
/** The host table's req_cancelled: non-zero once withdrawn. */
int weft_cancel_req_cancelled(const weft_req *r);

/** Registers a loop-side wait (loop thread). */
void weft_req_wait_add(weft_req *r, weft_wait *w, void (*cancel)(weft_wait *w));
/** Unregisters `w` if registered (its wait ended normally). Loop thread. */
void weft_req_wait_remove(weft_req *r, weft_wait *w);

/**
 * Marks `r` cancelled for `reason`, wakes a blocked worker and ends every
 * registered loop-side wait. Returns 0 if it was already cancelled. Loop
 * thread; the caller keeps the request alive meanwhile (cancel() callbacks
 * may resume handler code that finishes it).
 */
int weft_req_cancel(weft_req *r, int reason);

/**
 * Worker side: about to block in something `wake(arg)` can interrupt (called
 * on the loop thread, under the request's cancel mutex). Returns
 * WEFT_CANCELLED (and registers nothing) if the request is already
 * cancelled, else WEFT_OK; then weft_req_worker_unblock() after the wait.
 */
int weft_req_worker_block(weft_req *r, void (*wake)(void *arg), void *arg);
void weft_req_worker_unblock(weft_req *r);
/** Worker side: sleeps `ms`, or less when cancelled (then WEFT_CANCELLED). */
int weft_req_worker_sleep(weft_req *r, uint32_t ms);

/** Sets up / tears down the cancellation state of a new / freed request (the worker-side mutex and
 *  condition variable are set up only when a worker first blocks). */
void weft_req_cancel_init(weft_req *r);
void weft_req_cancel_destroy(weft_req *r);

#endif
