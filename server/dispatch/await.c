#include "dispatch/await.h"

#include "dispatch/coro.h"
#include "dispatch/dispatch.h"

enum { MODE_COROUTINE = 1, MODE_WORKER, MODE_ASYNC };

static void on_cancel(weft_wait *w)
{
    weft_await *a = H2O_STRUCT_FROM_MEMBER(weft_await, wait, w);
    a->registered = 0; /* weft_req_cancel unlinked it */
    a->cancel(a);
}

/* Loop thread. The cancellation flag is set and the waits are run on this
 * same thread, so a request cancelled before this point is seen here and
 * one cancelled later finds the wait registered. */
static void begin(weft_await *a)
{
    if (weft_req_cancelled(a->r)) {
        weft_await_done(a, WEFT_CANCELLED);
        return;
    }
    if (a->cancel != NULL) {
        weft_req_wait_add(a->r, &a->wait, on_cancel);
        a->registered = 1;
    }
    a->start(a);
}

static void on_begin_msg(weft_msg *m) { begin(H2O_STRUCT_FROM_MEMBER(weft_await, msg, m)); }

void weft_await_done(weft_await *a, int rc)
{
    if (a->registered) {
        weft_req_wait_remove(a->r, &a->wait);
        a->registered = 0;
    }
    a->rc = rc;
    switch (a->mode) {
    case MODE_WORKER:
        pthread_mutex_lock(&a->mu);
        a->done = 1;
        pthread_cond_signal(&a->cv);
        pthread_mutex_unlock(&a->mu); /* the worker may return, dropping `a`, from here on */
        return;
    case MODE_COROUTINE:
        a->done = 1;
        if (a->suspended) {
            a->suspended = 0;
            weft_dispatch_resume(a->r);
        }
        return;
    default:
        a->done = 1;
        a->complete(a);
        return;
    }
}

int weft_await_block(weft_await *a)
{
    weft_req *r = a->r;
    a->done = a->suspended = a->registered = 0;
    switch (r->exec) {
    case WEFT_EXEC_COROUTINE:
        /* `a` is on the coroutine's stack, which stays put while it sleeps. */
        a->mode = MODE_COROUTINE;
        begin(a);
        while (!a->done) {
            a->suspended = 1;
            weft_coro_yield();
        }
        return a->rc;
    case WEFT_EXEC_WORKER:
        if (weft_req_cancelled(r))
            return WEFT_CANCELLED;
        a->mode = MODE_WORKER;
        pthread_mutex_init(&a->mu, NULL);
        pthread_cond_init(&a->cv, NULL);
        weft_loop_post(r->loop, &a->msg, on_begin_msg);
        pthread_mutex_lock(&a->mu);
        while (!a->done)
            pthread_cond_wait(&a->cv, &a->mu);
        pthread_mutex_unlock(&a->mu);
        pthread_cond_destroy(&a->cv);
        pthread_mutex_destroy(&a->mu);
        return a->rc;
    case WEFT_EXEC_LOOP:
        break;
    }
    return WEFT_ERROR;
}

void weft_await_async(weft_await *a)
{
    a->done = a->suspended = a->registered = 0;
    a->mode = MODE_ASYNC;
    begin(a);
}
