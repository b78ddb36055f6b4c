#include "request/cancel.h"

#include <errno.h>
#include <time.h>

#include "request/request.h"

int weft_req_cancelled(const weft_req *r)
{
    return atomic_load_explicit(&r->cancelled, memory_order_acquire);
}

int weft_cancel_req_cancelled(const weft_req *r) { return weft_req_cancelled(r) != 0; }

void weft_req_wait_add(weft_req *r, weft_wait *w, void (*cancel)(weft_wait *w))
{
    w->cancel = cancel;
    w->next = r->waits;
    r->waits = w;
}

void weft_req_wait_remove(weft_req *r, weft_wait *w)
{
    for (weft_wait **p = &r->waits; *p != NULL; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            return;
        }
    }
}

/* Only a request a pool worker blocks for needs the mutex and condition
 * variable; setting them up and tearing them down for every request was a
 * visible share of a tiny request's time. The worker sets them up the first
 * time it blocks and then publishes `cancel_sync`; the loop publishes
 * `cancelled` before it reads `cancel_sync`. Both sequentially consistent:
 * either the loop sees the worker's state and wakes it under the mutex, or
 * the worker sees the flag under the mutex and does not wait. */
static void worker_sync(weft_req *r)
{
    if (atomic_load_explicit(&r->cancel_sync, memory_order_relaxed)) /* only this thread writes it */
        return;
    pthread_mutex_init(&r->cancel_mu, NULL);
    weft_cond_init_monotonic(&r->cancel_cv);
    atomic_store(&r->cancel_sync, 1);
}

int weft_req_cancel(weft_req *r, int reason)
{
    if (weft_req_cancelled(r))
        return 0; /* only the loop thread writes the flag */
    atomic_store(&r->cancelled, reason);
    if (atomic_load(&r->cancel_sync)) {
        pthread_mutex_lock(&r->cancel_mu);
        pthread_cond_broadcast(&r->cancel_cv);
        if (r->worker_wake != NULL)
            r->worker_wake(r->worker_wake_arg);
        pthread_mutex_unlock(&r->cancel_mu);
    }
    /* A cancel() may resume handler code that registers another wait; that
     * one fails at once (the flag is set), so this loop ends. */
    while (r->waits != NULL) {
        weft_wait *w = r->waits;
        r->waits = w->next;
        w->cancel(w);
    }
    return 1;
}

int weft_req_worker_block(weft_req *r, void (*wake)(void *arg), void *arg)
{
    worker_sync(r);
    pthread_mutex_lock(&r->cancel_mu);
    int cancelled = weft_req_cancelled(r) != 0;
    if (!cancelled) {
        r->worker_wake = wake;
        r->worker_wake_arg = arg;
    }
    pthread_mutex_unlock(&r->cancel_mu);
    return cancelled ? WEFT_CANCELLED : WEFT_OK;
}

void weft_req_worker_unblock(weft_req *r)
{
    worker_sync(r);
    pthread_mutex_lock(&r->cancel_mu);
    r->worker_wake = NULL;
    r->worker_wake_arg = NULL;
    pthread_mutex_unlock(&r->cancel_mu);
}

int weft_req_worker_sleep(weft_req *r, uint32_t ms)
{
    struct timespec until = weft_monotonic_after(ms);
    worker_sync(r);
    pthread_mutex_lock(&r->cancel_mu);
    int rc = 0;
    while (!weft_req_cancelled(r) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&r->cancel_cv, &r->cancel_mu, &until);
    int cancelled = weft_req_cancelled(r) != 0;
    pthread_mutex_unlock(&r->cancel_mu);
    return cancelled ? WEFT_CANCELLED : WEFT_OK;
}

void weft_req_cancel_init(weft_req *r)
{
    atomic_init(&r->cancel_sync, 0); /* set up by the first worker that blocks */
}

void weft_req_cancel_destroy(weft_req *r)
{
    /* The worker is done (its completion reached the loop): no race left. */
    if (atomic_load_explicit(&r->cancel_sync, memory_order_relaxed)) {
        pthread_cond_destroy(&r->cancel_cv);
        pthread_mutex_destroy(&r->cancel_mu);
    }
}
