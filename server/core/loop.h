/*
 * One event-loop thread: its h2o loop and context, its listening sockets, the
 * queue other threads use to hand it work, its timers and coroutine stacks.
 * Everything in here belongs to that thread; other threads reach it only
 * through weft_loop_post().
 */
#ifndef WEFT_LOOP_H
#define WEFT_LOOP_H

#include <pthread.h>
#include <stdatomic.h>

#include "dispatch/coro.h"
#include "reload/generation.h"
#include "base/h2o_glue.h"
#include "ops/metrics.h"
#include "base/timer.h"

/** A cross-thread message; embed it, set nothing, post it. */
typedef struct weft_msg {
    h2o_multithread_message_t super;
    void (*fn)(struct weft_msg *m);
} weft_msg;

typedef struct weft_loop {
    int index;
    pthread_t thread;
    h2o_evloop_t *evloop;
    h2o_context_t ctx;
    h2o_accept_ctx_t *accept_ctxs;     /* one per main listener (its TLS context differs) */
    h2o_accept_ctx_t admin_accept_ctx; /* loop 0 only */
    int *listen_fds; /* this thread's own SO_REUSEPORT sockets */
    h2o_socket_t **listeners; /* main listeners first, then the admin one (loop 0) */
    size_t n_listeners;
    size_t n_main_listeners;
    h2o_multithread_queue_t *queue;
    h2o_multithread_receiver_t receiver;
    weft_timers *timers;
    weft_coro_pool *coros;
    weft_generation *gen; /* this loop's reference to the serving generation */
    struct weft_dbloop *db;      /* this loop's database connections (lazy) */
    struct weft_dbloop *db_retired; /* older sets still finishing statements */
    size_t inflight;      /* requests dispatched and not yet completed */
    int stopping;
    uint64_t stop_deadline_ns;
    weft_msg stop_msg;
    /* start-up arguments, consumed by the loop thread */
    const int *setup_fds;
    size_t setup_n_fds;
    weft_generation *setup_gen;
    atomic_uint_fast64_t heartbeat_ns; /* last loop iteration, read by the watchdog */
    weft_loop_stats *stats;            /* written by this loop only; summed by scrapes */
    weft_timer tick;                   /* 100 ms: event-loop lag */
    size_t max_connections;            /* this loop's share of limits.max_connections */
    int accept_paused;
    weft_timer accept_retry;
} weft_loop;

/** The loop running on this thread, or NULL off the loops. */
extern _Thread_local weft_loop *weft_loop_current;

/** Runs m->fn(m) on `loop`'s thread. Any thread. */
void weft_loop_post(weft_loop *loop, weft_msg *m, void (*fn)(weft_msg *m));

#endif
