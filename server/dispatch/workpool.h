/*
 * A named pool of worker threads for the `pool` dispatch policy: handlers
 * that may block run here, off the event loops. The wait queue is a bounded
 * FIFO: first come, first served (a LIFO starves unlucky clients), and a
 * full queue refuses new work at once instead of growing memory.
 */
#ifndef WEFT_WORKPOOL_H
#define WEFT_WORKPOOL_H

#include <stddef.h>

typedef struct weft_work {
    struct weft_work *next, *prev;
    void (*run)(struct weft_work *w); /* on a worker thread; touches no loop state */
} weft_work;

typedef struct weft_workpool weft_workpool;

/**
 * A pool of up to `size` threads, started as work needs them; `queue` bounds
 * the work waiting for a free thread. NULL when out of memory.
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
const char *weft_workpool_name(const weft_workpool *p);

typedef struct weft_workpool_stats {
    int size;
    int started; /* threads started so far (on demand, up to size) */
    int busy;
    size_t queued;
    size_t queue_max;
    unsigned long long rejected;
    unsigned long long completed;
    unsigned long long withdrawn; /* taken back from the queue before they ran */
} weft_workpool_stats;
void weft_workpool_stats_get(weft_workpool *p, weft_workpool_stats *s);

#endif
