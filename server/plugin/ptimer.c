#include "plugin/ptimer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/timer.h"
#include "core/loop.h"
#include "dispatch/blocking.h"
#include "plugin/route_init.h"

#define MAX_LOOPS 1024 /* the config's limit on threads */

struct weft_plugin_timer {
    weft_timer base; /* in its loop's heap while armed (loop thread only) */
    weft_ptimers *set;
    weft_timer_fn cb;
    void *arg;
    uint32_t delay_ms, period_ms;
    int loop;     /* index of its loop once activated, else -1 */
    int stopped;  /* no callback starts once set */
    int inflight; /* messages posted to its loop and not yet handled */
    int final_posted;
    /* One message per kind, each posted at most once, so none is reused while queued. */
    weft_msg start_msg, stop_msg, final_msg;
    struct weft_plugin_timer *next;
};

struct weft_ptimers {
    char *name;
    char label[160]; /* "plugin p timer", for the blocked-loop detector */
    atomic_uint_fast64_t blocked_last_ns;
    weft_plugin_timer *timers;
};

/* One lock for every timer: starts and stops are rare, and a single lock
 * makes "is this loop still taking messages" and "post" one atomic step. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t handled = PTHREAD_COND_INITIALIZER;
static unsigned char loop_open[MAX_LOOPS];
static unsigned next_loop;

static int on_its_loop(const weft_plugin_timer *t)
{
    return weft_loop_current != NULL && weft_loop_current->index == t->loop;
}

static void on_fire(weft_timer *bt);

static void arm(weft_loop *L, weft_plugin_timer *t, uint32_t ms)
{
    if (weft_timers_add(L->timers, &t->base, ms, on_fire) != 0)
        weft_log_error("%s cannot be scheduled (out of memory): it stops", t->set->label);
}

static void on_fire(weft_timer *bt)
{
    weft_plugin_timer *t = (weft_plugin_timer *)bt;
    weft_loop *L = weft_loop_current;
    pthread_mutex_lock(&mu);
    int run = !t->stopped && !L->stopping;
    pthread_mutex_unlock(&mu);
    if (!run)
        return;
    /* Unlocked: the callback may call timer_stop on itself. */
    uint64_t t0 = weft_now_ns();
    t->cb(t->arg);
    weft_blocking_check_slice(t->set->label, &t->set->blocked_last_ns, weft_now_ns() - t0);
    pthread_mutex_lock(&mu);
    if (!t->stopped && !L->stopping && t->period_ms > 0 && t->base.heap_index == 0)
        arm(L, t, t->period_ms);
    pthread_mutex_unlock(&mu);
}

/* Message handlers run on the timer's loop; a loop that closed (its timers
 * are gone with it) only counts the message as handled. */
static void handle(weft_plugin_timer *t, int start)
{
    weft_loop *L = weft_loop_current;
    pthread_mutex_lock(&mu);
    t->inflight--;
    if (loop_open[L->index]) {
        if (start && !t->stopped && !L->stopping)
            arm(L, t, t->delay_ms);
        else if (!start)
            weft_timers_cancel(L->timers, &t->base);
    }
    pthread_cond_broadcast(&handled);
    pthread_mutex_unlock(&mu);
}

static void on_start(weft_msg *m) { handle((weft_plugin_timer *)((char *)m - offsetof(weft_plugin_timer, start_msg)), 1); }
static void on_stop(weft_msg *m) { handle((weft_plugin_timer *)((char *)m - offsetof(weft_plugin_timer, stop_msg)), 0); }
static void on_final(weft_msg *m) { handle((weft_plugin_timer *)((char *)m - offsetof(weft_plugin_timer, final_msg)), 0); }

/* Called with mu held: stops `t` on its loop now, or by message. */
static void stop_locked(weft_plugin_timer *t, weft_msg *m, void (*fn)(weft_msg *m))
{
    t->stopped = 1;
    if (t->loop < 0)
        return;
    if (on_its_loop(t)) {
        if (loop_open[t->loop])
            weft_timers_cancel(weft_loop_current->timers, &t->base);
    } else if (loop_open[t->loop]) {
        t->inflight++;
        weft_loop_post(weft_loop_at(t->loop), m, fn);
    }
}

static int hook_setup(weft_loop *L)
{
    if (L->index >= MAX_LOOPS)
        return -1;
    pthread_mutex_lock(&mu);
    loop_open[L->index] = 1;
    pthread_mutex_unlock(&mu);
    return 0;
}

/* Before the loop frees its timer heap and queue: nothing is posted to it
 * from now on, and messages already queued are handled as no-ops. */
static void hook_teardown(weft_loop *L)
{
    pthread_mutex_lock(&mu);
    loop_open[L->index] = 0;
    pthread_mutex_unlock(&mu);
}

void weft_ptimers_attach(void)
{
    static const weft_loop_hook hook = {.setup = hook_setup, .teardown = hook_teardown};
    weft_loop_add_hook(&hook);
}

weft_ptimers *weft_ptimers_new(const char *name)
{
    weft_ptimers *set = calloc(1, sizeof(*set));
    if (set == NULL || (set->name = strdup(name)) == NULL) {
        free(set);
        return NULL;
    }
    snprintf(set->label, sizeof(set->label), "a timer of plugin '%s'", name);
    return set;
}

weft_plugin_timer *weft_ptimer_timer_start(weft_init *ctx, uint32_t delay_ms, uint32_t period_ms, weft_timer_fn cb,
                                           void *arg)
{
    if (cb == NULL || ctx->timers == NULL) {
        weft_route_init_init_error(ctx, "timer_start: %s", cb == NULL ? "no callback" : "not available here");
        return NULL;
    }
    weft_plugin_timer *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        weft_route_init_init_error(ctx, "timer_start: out of memory");
        return NULL;
    }
    *t = (weft_plugin_timer){
        .set = ctx->timers, .cb = cb, .arg = arg, .delay_ms = delay_ms, .period_ms = period_ms, .loop = -1};
    pthread_mutex_lock(&mu);
    t->next = ctx->timers->timers;
    ctx->timers->timers = t;
    pthread_mutex_unlock(&mu);
    return t;
}

int weft_ptimer_timer_stop(weft_plugin_timer *t)
{
    if (t == NULL)
        return WEFT_ERROR;
    pthread_mutex_lock(&mu);
    int was = t->stopped;
    if (!was)
        stop_locked(t, &t->stop_msg, on_stop);
    pthread_mutex_unlock(&mu);
    return was ? WEFT_CANCELLED : WEFT_OK;
}

void weft_ptimers_activate(weft_ptimers *set)
{
    int n = weft_loop_count();
    pthread_mutex_lock(&mu);
    for (weft_plugin_timer *t = set->timers; t != NULL && n > 0; t = t->next) {
        if (t->stopped || t->loop >= 0)
            continue;
        t->loop = (int)(next_loop++ % (unsigned)n); /* spread over the loops */
        if (loop_open[t->loop]) {
            t->inflight++;
            weft_loop_post(weft_loop_at(t->loop), &t->start_msg, on_start);
        }
    }
    pthread_mutex_unlock(&mu);
}

void weft_ptimers_stop_all(weft_ptimers *set)
{
    if (set == NULL)
        return;
    pthread_mutex_lock(&mu);
    int busy = 0;
    for (weft_plugin_timer *t = set->timers; t != NULL; t = t->next) {
        /* Even a stopped timer gets one: a callback that stopped itself may
         * still be running, and only a message behind it on its loop says
         * it returned. */
        t->stopped = 1;
        if (t->loop >= 0 && loop_open[t->loop] && !on_its_loop(t) && !t->final_posted) {
            t->final_posted = 1;
            t->inflight++;
            weft_loop_post(weft_loop_at(t->loop), &t->final_msg, on_final);
        }
        busy |= t->inflight > 0;
    }
    /* A handled message means the loop ran everything before it, so a
     * callback that was running has returned. */
    while (busy) {
        pthread_cond_wait(&handled, &mu);
        busy = 0;
        for (weft_plugin_timer *t = set->timers; t != NULL; t = t->next)
            busy |= t->inflight > 0;
    }
    pthread_mutex_unlock(&mu);
}

void weft_ptimers_free(weft_ptimers *set)
{
    if (set == NULL)
        return;
    for (weft_plugin_timer *t = set->timers, *next; t != NULL; t = next) {
        next = t->next;
        free(t);
    }
    free(set->name);
    free(set);
}
