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
#include "request/request.h"

static void sleep_thread(uint32_t ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void on_coro_timer(weft_timer *t)
{
    weft_dispatch_resume(H2O_STRUCT_FROM_MEMBER(weft_req, timer, t));
}

int weft_hostsync_sleep_ms(weft_req *r, uint32_t ms)
{
    switch (r->exec) {
    case WEFT_EXEC_WORKER:
        sleep_thread(ms);
        return WEFT_OK;
    case WEFT_EXEC_COROUTINE:
        if (weft_timers_add(r->loop->timers, &r->timer, ms, on_coro_timer) != 0)
            return WEFT_UNAVAILABLE; /* out of memory: the handler answers 503, the process lives */
        weft_coro_yield();
        return WEFT_OK;
    case WEFT_EXEC_LOOP:
        break;
    }
    /* A reactive handler asked to block: honour it (the blocked-loop detector
     * will name the route) rather than fail in a way that hides the mistake. */
    sleep_thread(ms);
    return WEFT_OK;
}

typedef struct async_sleep {
    weft_timer timer;
    weft_req *r;
    weft_callback cb;
    void *arg;
} async_sleep;

static void on_async_timer(weft_timer *t)
{
    async_sleep *s = H2O_STRUCT_FROM_MEMBER(async_sleep, timer, t);
    weft_dispatch_callback(s->r, s->cb, s->arg, WEFT_OK);
}

void weft_hostsync_sleep_async(weft_req *r, uint32_t ms, weft_callback cb, void *arg)
{
    async_sleep *s = weft_req_alloc(r, sizeof(*s));
    if (s == NULL) {
        cb(r, arg, WEFT_ERROR);
        return;
    }
    *s = (async_sleep){.r = r, .cb = cb, .arg = arg};
    if (weft_timers_add(r->loop->timers, &s->timer, ms, on_async_timer) != 0)
        cb(r, arg, WEFT_UNAVAILABLE);
}

/*
 * A fair lock usable from all three contexts at once. Unlock hands the lock
 * straight to the oldest waiter (FIFO), so no context can barge ahead and
 * starve the others; waiters on a loop are woken through their loop's queue,
 * waiters on a worker through their own condition variable.
 */
typedef enum { WAIT_THREAD, WAIT_CORO, WAIT_CALLBACK } wait_kind;

typedef struct waiter {
    struct waiter *next;
    wait_kind kind;
    weft_req *r;
    pthread_cond_t cv; /* WAIT_THREAD */
    int granted;
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
        while (!w->granted)
            pthread_cond_wait(&w->cv, &m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static void on_coro_granted(weft_msg *msg)
{
    weft_dispatch_resume(H2O_STRUCT_FROM_MEMBER(waiter, msg, msg)->r);
}

static void on_callback_granted(weft_msg *msg)
{
    waiter *w = H2O_STRUCT_FROM_MEMBER(waiter, msg, msg);
    weft_dispatch_callback(w->r, w->cb, w->arg, WEFT_OK);
}

int weft_hostsync_mutex_lock(weft_req *r, weft_mutex *m)
{
    waiter w = {.r = r};
    switch (r->exec) {
    case WEFT_EXEC_WORKER:
        w.kind = WAIT_THREAD;
        pthread_cond_init(&w.cv, NULL);
        acquire_or_queue(m, &w);
        pthread_cond_destroy(&w.cv);
        return WEFT_OK;
    case WEFT_EXEC_COROUTINE:
        /* `w` lives on the coroutine's stack, which stays put while it sleeps. */
        w.kind = WAIT_CORO;
        if (!acquire_or_queue(m, &w))
            weft_coro_yield();
        return WEFT_OK;
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
    *w = (waiter){.kind = WAIT_CALLBACK, .r = r, .cb = cb, .arg = arg};
    if (acquire_or_queue(m, w))
        cb(r, arg, WEFT_OK);
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
