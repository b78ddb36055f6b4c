#include "dispatch/hostsync.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "dispatch/await.h"
#include "dispatch/coro.h"
#include "dispatch/dispatch.h"
#include "request/route.h"
#include "base/log.h"
#include "core/loop.h"
#include "request/cancel.h"
#include "request/request.h"

/* A sleep is a timer on the request's loop, waited for under every policy
 * by dispatch/await.c; a cancellation stops the timer and ends the wait. */
typedef struct sleep_op {
    weft_await a; /* first: the await's callbacks get it back as a sleep_op */
    weft_timer timer;
    uint32_t ms;
    weft_callback cb; /* sleep_async */
    void *arg;
} sleep_op;

static void on_sleep_timer(weft_timer *t) { weft_await_done(&H2O_STRUCT_FROM_MEMBER(sleep_op, timer, t)->a, WEFT_OK); }

static void start_sleep(weft_await *a)
{
    sleep_op *s = (sleep_op *)a;
    if (weft_timers_add(a->r->loop->timers, &s->timer, s->ms, on_sleep_timer) != 0)
        weft_await_done(a, WEFT_UNAVAILABLE); /* out of memory: the handler answers 503, the process lives */
}

static void cancel_sleep(weft_await *a)
{
    sleep_op *s = (sleep_op *)a;
    weft_timers_cancel(a->r->loop->timers, &s->timer);
    weft_await_done(a, WEFT_CANCELLED);
}

static void sleep_complete(weft_await *a)
{
    sleep_op *s = (sleep_op *)a;
    weft_dispatch_callback(a->r, s->cb, s->arg, a->rc);
}

int weft_hostsync_sleep_ms(weft_req *r, uint32_t ms)
{
    if (weft_req_cancelled(r))
        return WEFT_CANCELLED;
    if (weft_await_refused(r, "sleep_ms()", "sleep_async()"))
        return WEFT_ERROR;
    /* `s` lives on the waiter's stack, which stays put while it sleeps. */
    sleep_op s = {.a = {.r = r, .start = start_sleep, .cancel = cancel_sleep}, .ms = ms};
    return weft_await_block(&s.a);
}

void weft_hostsync_sleep_async(weft_req *r, uint32_t ms, weft_callback cb, void *arg)
{
    if (weft_req_cancelled(r)) {
        cb(r, arg, WEFT_CANCELLED);
        return;
    }
    sleep_op *s = weft_req_alloc(r, sizeof(*s));
    if (s == NULL) {
        cb(r, arg, WEFT_ERROR);
        return;
    }
    *s = (sleep_op){.a = {.r = r, .start = start_sleep, .cancel = cancel_sleep, .complete = sleep_complete},
                    .ms = ms,
                    .cb = cb,
                    .arg = arg};
    weft_await_async(&s->a);
}

/*
 * A fair lock usable from all three contexts at once. Unlock hands the lock
 * straight to the oldest waiter (FIFO), so no context can barge ahead and
 * starve the others; waiters on a loop are woken through their loop's queue,
 * waiters on a worker through their own condition variable.
 */
typedef enum { WAIT_THREAD, WAIT_CORO, WAIT_CALLBACK } wait_kind;

typedef struct waiter {
    weft_wait wait; /* WAIT_CORO, WAIT_CALLBACK: cancellation leaves the queue */
    struct waiter *next;
    wait_kind kind;
    weft_req *r;
    weft_mutex *m;
    pthread_cond_t cv; /* WAIT_THREAD */
    int granted, cancelled, rc;
    weft_msg msg; /* WAIT_CORO, WAIT_CALLBACK */
    weft_callback cb;
    void *arg;
} waiter;

struct weft_mutex {
    pthread_mutex_t mu;
    int locked;
    waiter *head, *tail;
};

weft_mutex *weft_hostsync_mutex_new(void)
{
    weft_mutex *m = calloc(1, sizeof(*m));
    if (m != NULL)
        pthread_mutex_init(&m->mu, NULL);
    return m;
}

void weft_hostsync_mutex_free(weft_mutex *m)
{
    if (m == NULL)
        return;
    if (m->locked || m->head != NULL)
        weft_log_error("a plugin freed a host mutex that is still held or waited for");
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* Unlinks `w` if it is still queued (caller holds m->mu); 0 if it is not
 * (already granted: the lock is its holder's and the grant is on its way). */
static int unlink_waiter(weft_mutex *m, waiter *w)
{
    waiter *prev = NULL, *it = m->head;
    while (it != NULL && it != w) {
        prev = it;
        it = it->next;
    }
    if (it == NULL)
        return 0;
    if (prev != NULL)
        prev->next = w->next;
    else
        m->head = w->next;
    if (m->tail == w)
        m->tail = prev;
    w->cancelled = 1;
    return 1;
}

/* Returns 1 if the lock was free and is now ours; else queues `w` (0). */
static int acquire_or_queue(weft_mutex *m, waiter *w)
{
    pthread_mutex_lock(&m->mu);
    if (!m->locked) {
        m->locked = 1;
        pthread_mutex_unlock(&m->mu);
        return 1;
    }
    w->next = NULL;
    if (m->tail != NULL)
        m->tail->next = w;
    else
        m->head = w;
    m->tail = w;
    if (w->kind == WAIT_THREAD) {
        /* The request may have been cancelled before this worker queued
         * (its wake found nothing to take out): look once, under m->mu. */
        if (weft_req_cancelled(w->r))
            unlink_waiter(m, w);
        while (!w->granted && !w->cancelled)
            pthread_cond_wait(&w->cv, &m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static int leave_queue(waiter *w)
{
    pthread_mutex_lock(&w->m->mu);
    int left = unlink_waiter(w->m, w);
    if (left && w->kind == WAIT_THREAD)
        pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->m->mu);
    return left;
}

static void wake_thread_waiter(void *arg) { leave_queue(arg); }

static void cancel_coro_waiter(weft_wait *wt)
{
    waiter *w = H2O_STRUCT_FROM_MEMBER(waiter, wait, wt);
    if (!leave_queue(w))
        return; /* granted: the grant message resumes it with the lock */
    w->rc = WEFT_CANCELLED;
    weft_dispatch_resume(w->r);
}

static void cancel_callback_waiter(weft_wait *wt)
{
    waiter *w = H2O_STRUCT_FROM_MEMBER(waiter, wait, wt);
    if (leave_queue(w))
        weft_dispatch_callback(w->r, w->cb, w->arg, WEFT_CANCELLED);
}

static void on_coro_granted(weft_msg *msg)
{
    waiter *w = H2O_STRUCT_FROM_MEMBER(waiter, msg, msg);
    weft_req_wait_remove(w->r, &w->wait);
    weft_dispatch_resume(w->r);
}

static void on_callback_granted(weft_msg *msg)
{
    waiter *w = H2O_STRUCT_FROM_MEMBER(waiter, msg, msg);
    weft_req_wait_remove(w->r, &w->wait);
    weft_dispatch_callback(w->r, w->cb, w->arg, WEFT_OK);
}

int weft_hostsync_mutex_lock(weft_req *r, weft_mutex *m)
{
    waiter w = {.r = r, .m = m, .rc = WEFT_OK};
    if (weft_req_cancelled(r))
        return WEFT_CANCELLED;
    switch (r->exec) {
    case WEFT_EXEC_WORKER:
        w.kind = WAIT_THREAD;
        pthread_cond_init(&w.cv, NULL);
        if (weft_req_worker_block(r, wake_thread_waiter, &w) != WEFT_OK) {
            pthread_cond_destroy(&w.cv);
            return WEFT_CANCELLED;
        }
        acquire_or_queue(m, &w);
        weft_req_worker_unblock(r);
        pthread_cond_destroy(&w.cv);
        return w.cancelled ? WEFT_CANCELLED : WEFT_OK;
    case WEFT_EXEC_COROUTINE:
        /* `w` lives on the coroutine's stack, which stays put while it sleeps. */
        w.kind = WAIT_CORO;
        if (!acquire_or_queue(m, &w)) {
            weft_req_wait_add(r, &w.wait, cancel_coro_waiter);
            weft_coro_yield();
            weft_req_wait_remove(r, &w.wait);
        }
        return w.rc;
    case WEFT_EXEC_LOOP:
        break;
    }
    /* Blocking the loop here could deadlock: the holder may need this very
     * loop to run before it can unlock. */
    weft_await_refused(r, "mutex_lock()", "mutex_lock_async()");
    return WEFT_ERROR;
}

void weft_hostsync_mutex_lock_async(weft_req *r, weft_mutex *m, weft_callback cb, void *arg)
{
    waiter *w = weft_req_alloc(r, sizeof(*w));
    if (w == NULL) {
        cb(r, arg, WEFT_ERROR);
        return;
    }
    if (weft_req_cancelled(r)) {
        cb(r, arg, WEFT_CANCELLED);
        return;
    }
    *w = (waiter){.kind = WAIT_CALLBACK, .r = r, .m = m, .cb = cb, .arg = arg};
    if (acquire_or_queue(m, w))
        cb(r, arg, WEFT_OK);
    else
        weft_req_wait_add(r, &w->wait, cancel_callback_waiter);
}

void weft_hostsync_mutex_unlock(weft_req *r, weft_mutex *m)
{
    (void)r;
    pthread_mutex_lock(&m->mu);
    waiter *w = m->head;
    if (w == NULL) {
        m->locked = 0;
        pthread_mutex_unlock(&m->mu);
        return;
    }
    /* Ownership passes directly; `locked` stays set. */
    m->head = w->next;
    if (m->head == NULL)
        m->tail = NULL;
    if (w->kind == WAIT_THREAD) {
        w->granted = 1;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&m->mu);
        return;
    }
    pthread_mutex_unlock(&m->mu);
    weft_loop_post(w->r->loop, &w->msg, w->kind == WAIT_CORO ? on_coro_granted : on_callback_granted);
}
