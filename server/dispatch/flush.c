/*
 * res_flush in each execution context: the part is handed to h2o on the
 * loop thread (request/stream.c); a worker waits for a condition variable,
 * a coroutine suspends, a reactive handler gets its callback, until the
 * connection took the part or the client left.
 */
#include <pthread.h>

#include "base/log.h"
#include "core/loop.h"
#include "dispatch/coro.h"
#include "dispatch/dispatch.h"
#include "request/route.h"
#include "request/stream.h"

typedef struct co_flush {
    weft_req *r;
    int rc, done, suspended;
} co_flush;

static void co_flushed(weft_req *r, int rc)
{
    co_flush *w = r->flush_arg;
    w->rc = rc;
    w->done = 1;
    if (w->suspended)
        weft_dispatch_resume(r);
}

/* A worker's flush: its stack frame holds the wait while the loop sends. */
typedef struct worker_flush {
    weft_msg msg;
    weft_req *r;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int rc, done;
} worker_flush;

static void worker_flushed(weft_req *r, int rc)
{
    worker_flush *w = r->flush_arg;
    pthread_mutex_lock(&w->mu);
    w->rc = rc;
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void worker_send(weft_msg *m)
{
    worker_flush *w = H2O_STRUCT_FROM_MEMBER(worker_flush, msg, m);
    weft_req *r = w->r;
    r->flush_done = worker_flushed;
    r->flush_arg = w;
    int rc = weft_stream_send(r);
    if (rc != WEFT_OK) {
        r->flush_done = NULL;
        worker_flushed(r, rc);
    }
}

int weft_flush_res_flush(weft_req *r)
{
    switch (r->exec) {
    case WEFT_EXEC_COROUTINE: {
        co_flush w = {.r = r};
        r->flush_done = co_flushed;
        r->flush_arg = &w;
        int rc = weft_stream_send(r);
        if (rc != WEFT_OK) {
            r->flush_done = NULL;
            return rc;
        }
        if (!w.done) {
            w.suspended = 1;
            weft_coro_yield();
        }
        return w.rc;
    }
    case WEFT_EXEC_WORKER: {
        worker_flush w = {.r = r};
        pthread_mutex_init(&w.mu, NULL);
        pthread_cond_init(&w.cv, NULL);
        weft_loop_post(r->loop, &w.msg, worker_send);
        pthread_mutex_lock(&w.mu);
        while (!w.done)
            pthread_cond_wait(&w.cv, &w.mu);
        pthread_mutex_unlock(&w.mu);
        pthread_mutex_destroy(&w.mu);
        pthread_cond_destroy(&w.cv);
        return w.rc;
    }
    case WEFT_EXEC_LOOP:
        break;
    }
    weft_log_error("%s: res_flush() called from a reactive handler; use res_flush_async()", r->route->label);
    return WEFT_ERROR;
}

typedef struct async_flush {
    weft_callback cb;
    void *arg;
} async_flush;

static void async_flushed(weft_req *r, int rc)
{
    async_flush *a = r->flush_arg;
    weft_dispatch_callback(r, a->cb, a->arg, rc);
}

void weft_flush_res_flush_async(weft_req *r, weft_callback cb, void *arg)
{
    async_flush *a = r->exec == WEFT_EXEC_LOOP ? weft_req_alloc(r, sizeof(*a)) : NULL;
    if (a == NULL) {
        if (r->exec != WEFT_EXEC_LOOP)
            weft_log_error("%s: res_flush_async() outside a reactive handler; use res_flush()", r->route->label);
        cb(r, arg, WEFT_ERROR);
        return;
    }
    *a = (async_flush){cb, arg};
    r->flush_done = async_flushed;
    r->flush_arg = a;
    int rc = weft_stream_send(r);
    if (rc != WEFT_OK) {
        r->flush_done = NULL;
        weft_dispatch_callback(r, cb, arg, rc);
    }
}
