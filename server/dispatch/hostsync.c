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

/* The record goes back first: the callback's next sleep takes it again. */
static void sleep_complete(weft_await *a)
{
    sleep_op s = *(sleep_op *)a;
    weft_await_rec_free(s.a.r, a);
    weft_dispatch_callback(s.a.r, s.cb, s.arg, s.a.rc);
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

/* The callback forms are the reactive handler's: a worker would start a
 * loop's timer from its own thread, and a coroutine's handler could
 * return before its callback came. */
static int async_refused(weft_req *r, const char *call, const char *instead)
{
    if (weft_await_reactive(r))
        return 0;
    weft_log_error("%s: %s with a callback outside a reactive handler returns WEFT_ERROR; use %s", r->route->label,
                   call, instead);
    return 1;
}

void weft_hostsync_sleep_async(weft_req *r, uint32_t ms, weft_callback cb, void *arg)
{
    if (async_refused(r, "sleep()", "sleep() without one")) {
        cb(r, arg, WEFT_ERROR);
        return;
    }
    if (weft_req_cancelled(r)) {
        cb(r, arg, WEFT_CANCELLED);
        return;
    }
    sleep_op *s = weft_await_rec_new(r, sizeof(*s));
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
 * starve the others. Taking a free lock needs no wait at all; a taken one
 * is waited for like any other host operation, by dispatch/await.c: the
 * waiter is queued on its request's loop and the grant, from whichever
 * thread unlocks, travels to that loop through its queue and ends the
 * wait there (the worker is woken, the coroutine resumed, the callback
 * called). A cancelled request leaves the queue, unless the lock was
 * already handed to it: then it gets the lock (WEFT_OK) and the caller
 * unlocks as usual.
 */
typedef struct lock_op {
    weft_await a; /* first: the await's callbacks get it back as a lock_op */
    struct lock_op *next;
    weft_mutex *m;
    weft_msg granted; /* unlock → the waiter's loop */
    int pinned;       /* cancelled with the grant on its way: the request waits for it */
    weft_callback cb; /* mutex_lock_async */
    void *arg;
} lock_op;

struct weft_mutex {
    pthread_mutex_t mu;
    int locked;
    lock_op *head, *tail;
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

static int try_acquire(weft_mutex *m)
{
    pthread_mutex_lock(&m->mu);
    int took = !m->locked;
    m->locked = 1;
    pthread_mutex_unlock(&m->mu);
    return took;
}

/* Unlinks `op` if it is still queued (m->mu held); 0 if it is not (already
 * granted: the lock is its holder's and the grant is on its way). */
static int unlink_op(weft_mutex *m, lock_op *op)
{
    lock_op *prev = NULL, *it = m->head;
    while (it != NULL && it != op) {
        prev = it;
        it = it->next;
    }
    if (it == NULL)
        return 0;
    if (prev != NULL)
        prev->next = op->next;
    else
        m->head = op->next;
    if (m->tail == op)
        m->tail = prev;
    return 1;
}

static void on_granted(weft_msg *msg)
{
    lock_op *op = H2O_STRUCT_FROM_MEMBER(lock_op, granted, msg);
    weft_req *r = op->a.r;
    int pinned = op->pinned; /* read first: the callback may reuse the record */
    weft_await_done(&op->a, WEFT_OK);
    if (pinned)
        weft_req_unpin(r);
}

/* Loop thread: takes the lock if it came free since the caller looked, else queues. */
static void start_lock(weft_await *a)
{
    lock_op *op = (lock_op *)a;
    weft_mutex *m = op->m;
    pthread_mutex_lock(&m->mu);
    if (!m->locked) {
        m->locked = 1;
        pthread_mutex_unlock(&m->mu);
        weft_await_done(a, WEFT_OK);
        return;
    }
    op->next = NULL;
    if (m->tail != NULL)
        m->tail->next = op;
    else
        m->head = op;
    m->tail = op;
    pthread_mutex_unlock(&m->mu);
}

static void cancel_lock(weft_await *a)
{
    lock_op *op = (lock_op *)a;
    pthread_mutex_lock(&op->m->mu);
    int left = unlink_op(op->m, op);
    pthread_mutex_unlock(&op->m->mu);
    if (left) {
        weft_await_done(a, WEFT_CANCELLED);
        return;
    }
    /* Granted: the grant's message ends the wait, with the lock. It points
     * into the request, which must outlive it even if its handler finishes
     * first (then the lock is handed on: lock_abandon). */
    op->pinned = 1;
    weft_req_pin(a->r);
}

/* The handler finished while it waited: nobody will unlock a lock it got. */
static void lock_abandon(weft_await *a)
{
    if (a->rc == WEFT_OK)
        weft_hostsync_mutex_unlock(a->r, ((lock_op *)a)->m);
}

/* The record goes back first (a granted lock_op left the queue, and its
 * grant message was its last use): the callback may wait for a lock again. */
static void lock_complete(weft_await *a)
{
    lock_op op = *(lock_op *)a;
    weft_await_rec_free(op.a.r, a);
    weft_dispatch_callback(op.a.r, op.cb, op.arg, op.a.rc);
}

int weft_hostsync_mutex_lock(weft_req *r, weft_mutex *m)
{
    if (weft_req_cancelled(r))
        return WEFT_CANCELLED;
    /* Blocking the loop here could deadlock: the holder may need this very
     * loop to run before it can unlock. */
    if (weft_await_refused(r, "mutex_lock()", "mutex_lock_async()"))
        return WEFT_ERROR;
    if (try_acquire(m))
        return WEFT_OK;
    /* `op` lives on the waiter's stack, which stays put while it waits. */
    lock_op op = {.a = {.r = r, .start = start_lock, .cancel = cancel_lock}, .m = m};
    return weft_await_block(&op.a);
}

void weft_hostsync_mutex_lock_async(weft_req *r, weft_mutex *m, weft_callback cb, void *arg)
{
    if (async_refused(r, "lock()", "lock() without one")) {
        cb(r, arg, WEFT_ERROR);
        return;
    }
    if (weft_req_cancelled(r)) {
        cb(r, arg, WEFT_CANCELLED);
        return;
    }
    if (try_acquire(m)) {
        cb(r, arg, WEFT_OK);
        return;
    }
    lock_op *op = weft_await_rec_new(r, sizeof(*op));
    if (op == NULL) {
        cb(r, arg, WEFT_ERROR);
        return;
    }
    *op = (lock_op){.a = {.r = r, .start = start_lock, .cancel = cancel_lock, .complete = lock_complete, .abandon = lock_abandon},
                    .m = m,
                    .cb = cb,
                    .arg = arg};
    weft_await_async(&op->a);
}

void weft_hostsync_mutex_unlock(weft_req *r, weft_mutex *m)
{
    (void)r;
    pthread_mutex_lock(&m->mu);
    lock_op *op = m->head;
    if (op == NULL) {
        m->locked = 0;
        pthread_mutex_unlock(&m->mu);
        return;
    }
    /* Ownership passes directly; `locked` stays set. */
    m->head = op->next;
    if (m->head == NULL)
        m->tail = NULL;
    pthread_mutex_unlock(&m->mu);
    weft_loop_post(op->a.r->loop, &op->granted, on_granted);
}

int weft_hostsync_mutex_waiters(weft_mutex *m)
{
    pthread_mutex_lock(&m->mu);
    int n = 0;
    for (lock_op *op = m->head; op != NULL; op = op->next)
        n++;
    pthread_mutex_unlock(&m->mu);
    return n;
}
