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

int weft_req_cancel(weft_req *r, int reason)
{
    pthread_mutex_lock(&r->cancel_mu);
    if (weft_req_cancelled(r)) {
        pthread_mutex_unlock(&r->cancel_mu);
        return 0;
    }
    atomic_store_explicit(&r->cancelled, reason, memory_order_release);
    pthread_cond_broadcast(&r->cancel_cv);
    if (r->worker_wake != NULL)
        r->worker_wake(r->worker_wake_arg);
    pthread_mutex_unlock(&r->cancel_mu);
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
    pthread_mutex_lock(&r->cancel_mu);
    r->worker_wake = NULL;
    r->worker_wake_arg = NULL;
    pthread_mutex_unlock(&r->cancel_mu);
}

int weft_req_worker_sleep(weft_req *r, uint32_t ms)
{
    struct timespec until = weft_monotonic_after(ms);
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
    pthread_mutex_init(&r->cancel_mu, NULL);
    weft_cond_init_monotonic(&r->cancel_cv);
}

void weft_req_cancel_destroy(weft_req *r)
{
    pthread_cond_destroy(&r->cancel_cv);
    pthread_mutex_destroy(&r->cancel_mu);
}
