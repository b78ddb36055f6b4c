#include "dispatch/hostsync.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "dispatch/coro.h"
#include "dispatch/dispatch.h"
#include "request/route.h"
#include "base/log.h"
#include "core/loop.h"
#include "request/cancel.h"
#include "request/request.h"

static void sleep_thread(uint32_t ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A coroutine's one wait at a time: what it waits for and how it ended. */
typedef struct coro_wait {
    weft_wait super;
    weft_req *r;
    int rc;
} coro_wait;

static void on_coro_timer(weft_timer *t)
{
    weft_req *r = H2O_STRUCT_FROM_MEMBER(weft_req, timer, t);
    weft_dispatch_resume(r);
}

static void cancel_coro_sleep(weft_wait *w)
{
    coro_wait *cw = (coro_wait *)w;
    weft_timers_cancel(cw->r->loop->timers, &cw->r->timer);
    cw->rc = WEFT_CANCELLED;
    weft_dispatch_resume(cw->r);
}

int weft_hostsync_sleep_ms(weft_req *r, uint32_t ms)
{
    if (weft_req_cancelled(r))
        return WEFT_CANCELLED;
    switch (r->exec) {
    case WEFT_EXEC_WORKER:
        return weft_req_worker_sleep(r, ms);
    case WEFT_EXEC_COROUTINE: {
        if (weft_timers_add(r->loop->timers, &r->timer, ms, on_coro_timer) != 0)
            return WEFT_UNAVAILABLE; /* out of memory: the handler answers 503, the process lives */
        /* `w` lives on the coroutine's stack, which stays put while it sleeps. */
        coro_wait w = {.r = r, .rc = WEFT_OK};
        weft_req_wait_add(r, &w.super, cancel_coro_sleep);
        weft_coro_yield();
        weft_req_wait_remove(r, &w.super);
        return w.rc;
    }
    case WEFT_EXEC_LOOP:
        break;
    }
    /* A reactive handler asked to block: honour it (the blocked-loop detector
     * will name the route) rather than fail in a way that hides the mistake. */
    sleep_thread(ms);
    return WEFT_OK;
}

typedef struct async_sleep {
    weft_wait wait;
    weft_timer timer;
    weft_req *r;
    weft_callback cb;
    void *arg;
} async_sleep;

static void on_async_timer(weft_timer *t)
{
    async_sleep *s = H2O_STRUCT_FROM_MEMBER(async_sleep, timer, t);
    weft_req_wait_remove(s->r, &s->wait);
    weft_dispatch_callback(s->r, s->cb, s->arg, WEFT_OK);
}

static void cancel_async_sleep(weft_wait *w)
{
    async_sleep *s = H2O_STRUCT_FROM_MEMBER(async_sleep, wait, w);
    weft_timers_cancel(s->r->loop->timers, &s->timer);
    weft_dispatch_callback(s->r, s->cb, s->arg, WEFT_CANCELLED);
}

void weft_hostsync_sleep_async(weft_req *r, uint32_t ms, weft_callback cb, void *arg)
{
    if (weft_req_cancelled(r)) {
        cb(r, arg, WEFT_CANCELLED);
        return;
    }
    async_sleep *s = weft_req_alloc(r, sizeof(*s));
    if (s == NULL) {
        cb(r, arg, WEFT_ERROR);
        return;
    }
    *s = (async_sleep){.r = r, .cb = cb, .arg = arg};
    if (weft_timers_add(r->loop->timers, &s->timer, ms, on_async_timer) != 0)
        cb(r, arg, WEFT_UNAVAILABLE);
    else
        weft_req_wait_add(r, &s->wait, cancel_async_sleep);
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
    weft_log_error("%s: mutex_lock() called from a reactive handler; use mutex_lock_async()", r->route->label);
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
