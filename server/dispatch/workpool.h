/*
 * A named pool of worker threads for the `pool` dispatch policy: handlers
 * that may block run here, off the event loops. The wait queue is a bounded
 * FIFO: first come, first served (a LIFO starves unlucky clients), and a
 * full queue refuses new work at once instead of growing memory.
 */
#ifndef WEFT_WORKPOOL_H
#define WEFT_WORKPOOL_H

#include <stddef.h>

#include "request/route.h"

typedef struct weft_work {
    struct weft_work *next, *prev;
    void (*run)(struct weft_work *w); /* on a worker thread; touches no loop state */
} weft_work;

typedef struct weft_workpool weft_workpool;

/* The pool that runs a route (dispatch == pool, or auto with a blocking-style handle); NULL for none. */
extern int weft_workpool_route_slot;
static inline weft_workpool *weft_route_pool(const weft_route *rt) { return weft_route_get(rt, weft_workpool_route_slot); }
static inline void weft_route_set_pool(weft_route *rt, weft_workpool *p) { weft_route_set(rt, weft_workpool_route_slot, p); }

/**
 * A pool of up to `size` threads, started as work needs them (plus those
 * lent to long-lived work, weft_workpool_lend); `queue` bounds the work
 * waiting for a free thread. NULL when out of memory.
 */
weft_workpool *weft_workpool_new(const char *name, int size, int queue);
/** Runs the queued work, then joins every thread. */
void weft_workpool_free(weft_workpool *p);
/**
 * Queues `w`; returns -1 (and does not take `w`) when the queue is full, or
 * when no worker thread could be started at all.
 */
int weft_workpool_submit(weft_workpool *p, weft_work *w);
/**
 * Takes back `w` if it is still queued (returns 0; it will never run), or
 * returns -1 when a worker already has it. Lets a withdrawn request free its
 * queue slot at once instead of waiting its turn to be skipped.
 */
int weft_workpool_cancel(weft_workpool *p, weft_work *w);
/** weft_workpool_cancel for work that waited past the pool's queue timeout (counted apart). */
int weft_workpool_expire(weft_workpool *p, weft_work *w);
/**
 * The longest a request may wait in the queue (the config's queue_timeout_ms;
 * 0: no bound). The pool only keeps it: dispatch arms a timer on the
 * request's loop and expires the work when it fires. Set before serving.
 */
void weft_workpool_set_queue_timeout(weft_workpool *p, int ms);
/** The most threads lent at once (the config's max_long_lived; default: size). Set before serving. */
void weft_workpool_set_max_lent(weft_workpool *p, int n);
/** The nice value (0-19) each worker thread sets on itself as it starts; before the first submit. */
void weft_workpool_set_nice(weft_workpool *p, int nice);
/**
 * From the worker thread running work of `p`: that work is long-lived (it
 * accepted a WebSocket, or started streaming an answer). The thread is lent
 * until the work returns: it no longer counts against the pool's size, and
 * queued work gets another thread, so long-lived requests cannot hold every
 * worker short ones need (the thread that is surplus once the work returns
 * ends). Returns 0 (also when already lent), or -1 when max_lent threads
 * are lent already: the caller refuses the long-lived part (503).
 */
int weft_workpool_lend(weft_workpool *p);
int weft_workpool_queue_timeout(const weft_workpool *p);
const char *weft_workpool_name(const weft_workpool *p);

typedef struct weft_workpool_stats {
    int size;
    int started; /* threads alive (started on demand, up to size + lent) */
    int busy;
    size_t queued;
    size_t queue_max;
    unsigned long long rejected;
    unsigned long long completed;
    unsigned long long withdrawn; /* taken back from the queue before they ran */
    unsigned long long expired;   /* taken back after waiting past the queue timeout */
    int lent, max_lent;           /* threads lent to long-lived work, and the most at once */
    unsigned long long lend_refused; /* long-lived work refused at max_lent */
} weft_workpool_stats;
void weft_workpool_stats_get(weft_workpool *p, weft_workpool_stats *s);

#endif
