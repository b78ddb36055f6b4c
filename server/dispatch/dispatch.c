#include "dispatch/dispatch.h"

#include <stdarg.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/auto.h"
#include "dispatch/blocking.h"
#include "dispatch/coro.h"
#include "request/route.h"
#include "base/log.h"
#include "core/loop.h"
#include "dispatch/workpool.h"
#include "request/cancel.h"

/* Pool-policy state, allocated in the request's arena. */
typedef struct pool_job {
    weft_work work;
    weft_msg done;
    weft_req *r;
} pool_job;

__thread weft_req *weft_dispatch_running;

/* What dispatch keeps per request, in a request slot of its own (so that
 * request/ names none of these types). */
typedef struct dispatch_req {
    weft_coro *coro;                 /* coroutine: its stack, while it runs */
    weft_work *job;                  /* pool: the queued work, until a worker takes it */
    struct done_msg *done_msg;       /* reactive: preallocated completion message */
    struct start_later *start_later; /* reactive over HTTP/2: its start, pending until h2o read all */
} dispatch_req;

WEFT_REQ_SLOT(dreq_slot, dispatch_req)

static dispatch_req *dreq(const weft_req *r) { return weft_req_ext(r, dreq_slot); }

/* A slice may end the request (done() from inside a callback chain): the
 * request is completed only when the slice returns, never under its feet.
 * While it runs, the thread's running request is the one a crash names. */
typedef struct slice {
    uint64_t t0;
    weft_req *outer;
    weft_auto_mark mark; /* auto routes: the thread's CPU time and voluntary switches at t0 */
} slice;

static void slice_begin(weft_req *r, slice *s)
{
    r->in_slice++;
    s->outer = weft_dispatch_running;
    weft_dispatch_running = r;
    if (weft_route_auto(r->route) != NULL && r->exec != WEFT_EXEC_WORKER)
        weft_auto_mark_now(&s->mark);
    s->t0 = weft_now_ns();
}

static void slice_end(weft_req *r, slice *s)
{
    uint64_t elapsed = weft_now_ns() - s->t0;
    weft_dispatch_running = s->outer;
    weft_blocking_check(r->route, elapsed);
    if (weft_route_auto(r->route) != NULL && r->exec == WEFT_EXEC_COROUTINE) {
        weft_auto_slice(r->route, r->auto_probe, elapsed, &s->mark);
        if (r->auto_probe && dreq(r)->coro == NULL) { /* the probe's coroutine returned: judged now */
            r->auto_probe = 0;
            weft_auto_probe_end(r->route, 1);
        }
    }
    if (--r->in_slice == 0 && r->finished)
        weft_req_complete(r);
}

static void finish(weft_req *r, int rc)
{
    r->rc = rc;
    r->finished = 1;
}

/* ---- reactive ---- */

typedef struct done_msg {
    weft_msg m;
    weft_req *r;
} done_msg;

static void refuse_oom(weft_req *r, const char *what)
{
    weft_log_error("%s: out of memory for %s; answering 503", r->route->label, what);
    weft_request_res_error(r, 503, "server overloaded: out of memory");
    weft_request_res_header(r, "retry-after", "1");
    weft_req_complete(r);
}

static void run_reactive(weft_req *r)
{
    slice s;
    r->exec = WEFT_EXEC_LOOP;
    r->ran_as = "reactive";
    /* done() may come from a thread of the plugin's own: the message that
     * carries it home is allocated now, so done() itself cannot fail. */
    if ((dreq(r)->done_msg = weft_req_alloc(r, sizeof(done_msg))) == NULL) {
        refuse_oom(r, "a completion message");
        return;
    }
    slice_begin(r, &s);
    int rc = r->route->desc->handle_async(r, r->route->state);
    if (rc != WEFT_AGAIN && !r->finished) {
        weft_req_run_defers(r);
        finish(r, rc);
    }
    slice_end(r, &s);
}

void weft_dispatch_run(weft_req *r, void (*fn)(void *ctx), void *ctx)
{
    slice s;
    slice_begin(r, &s);
    fn(ctx);
    slice_end(r, &s);
}

void weft_dispatch_callback(weft_req *r, weft_callback cb, void *arg, int rc)
{
    slice s;
    slice_begin(r, &s);
    cb(r, arg, rc);
    slice_end(r, &s);
}

static void on_done_msg(weft_msg *m)
{
    weft_req *r = H2O_STRUCT_FROM_MEMBER(done_msg, m, m)->r;
    slice s;
    slice_begin(r, &s);
    weft_req_run_defers(r);
    slice_end(r, &s);
}

void weft_dispatch_done(weft_req *r, int rc)
{
    if (r->finished) {
        weft_log_error("%s: done() called twice for one request; ignored", r->route->label);
        return;
    }
    if (weft_loop_current == r->loop)
        weft_req_run_defers(r);
    finish(r, rc);
    if (weft_loop_current == r->loop) {
        if (r->in_slice == 0)
            weft_req_complete(r);
        return;
    }
    /* done() from a foreign thread: completing must happen on the owner. */
    done_msg *msg = dreq(r)->done_msg;
    msg->r = r;
    weft_loop_post(r->loop, &msg->m, on_done_msg);
}

/* ---- coroutine ---- */

WEFT_LOOP_SLOT(coros_slot) /* the loop's weft_coro_pool */

static weft_coro_pool *coros_of(const weft_loop *L) { return weft_loop_get(L, coros_slot); }

static void coro_gauges(weft_loop *L)
{
    atomic_store_explicit(&L->stats->coros_live, (int_fast64_t)weft_coro_pool_live(coros_of(L)), memory_order_relaxed);
    atomic_store_explicit(&L->stats->coro_bytes, (int_fast64_t)weft_coro_pool_mapped_bytes(coros_of(L)),
                          memory_order_relaxed);
}

static void coro_main(void *arg)
{
    weft_req *r = arg;
    int rc = r->route->desc->handle(r, r->route->state);
    weft_req_run_defers(r);
    finish(r, rc);
}

static void on_deferred_resume(weft_timer *t)
{
    weft_dispatch_resume(H2O_STRUCT_FROM_MEMBER(weft_req, resume_timer, t));
}

void weft_dispatch_resume(weft_req *r)
{
    if (weft_coro_current() != NULL) {
        /* A completion reached from inside another coroutine (e.g. a broken
         * database connection fails everything queued on it): coroutines
         * never resume each other, so the loop does it next. */
        weft_timers_add(r->loop->timers, &r->resume_timer, 0, on_deferred_resume);
        return;
    }
    slice s;
    slice_begin(r, &s);
    r->exec = WEFT_EXEC_COROUTINE;
    r->ran_as = "coroutine";
    if (weft_coro_resume(dreq(r)->coro)) {
        weft_coro_free(dreq(r)->coro);
        dreq(r)->coro = NULL;
        coro_gauges(r->loop);
    }
    slice_end(r, &s);
}

static void run_coroutine(weft_req *r)
{
    dreq(r)->coro = weft_coro_new(coros_of(r->loop), coro_main, r, r->route->cfg->path);
    coro_gauges(r->loop);
    if (dreq(r)->coro == NULL) {
        if (r->auto_probe) {
            r->auto_probe = 0;
            weft_auto_probe_end(r->route, 0);
        }
        refuse_oom(r, "a coroutine stack");
        return;
    }
    weft_dispatch_resume(r);
}

/* ---- what dispatch holds for a request until it completes ---- */

/* A slot of the route's max_concurrent and the pool's queue timer are given
 * back on every way a request can end (answered, refused, cancelled, timed
 * out), so on_complete is wrapped while either is held. */
static void release(weft_req *r)
{
    if (r->slot != NULL) {
        atomic_fetch_sub_explicit(r->slot, 1, memory_order_relaxed);
        r->slot = NULL;
    }
    weft_timers_cancel(r->loop->timers, &r->queue_timer);
    r->on_complete = r->dispatched_complete;
    r->on_complete(r);
}

static void hold(weft_req *r)
{
    if (r->on_complete != release) {
        r->dispatched_complete = r->on_complete;
        r->on_complete = release;
    }
}

static void refuse_busy(weft_req *r, int why, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void refuse_busy(weft_req *r, int why, const char *fmt, ...)
{
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    weft_stats_refused(r->loop->stats, r->route->stat_slot, why);
    weft_request_res_error(r, 503, msg);
    weft_request_res_header(r, "retry-after", "1");
    weft_req_complete(r);
}

/* Requests in flight per route series (path, policy: base/stats.h), so
 * that a reload does not start the count afresh while the old generation's
 * WebSockets and streams are still open. */
static atomic_int in_flight[WEFT_STAT_SLOTS];

/* The route's max_concurrent: long-lived requests (WebSockets, streams,
 * slow upstreams) of one route cannot take every worker, coroutine or
 * connection slot the others need. Counted across loops and generations. */
static int admit(weft_req *r)
{
    weft_route *rt = r->route;
    int max = rt->cfg->max_concurrent;
    if (max <= 0)
        return 1;
    atomic_int *n = rt->stat_slot >= 0 && rt->stat_slot < WEFT_STAT_SLOTS ? &in_flight[rt->stat_slot] : &rt->concurrent;
    if (atomic_fetch_add_explicit(n, 1, memory_order_relaxed) >= max) {
        atomic_fetch_sub_explicit(n, 1, memory_order_relaxed);
        refuse_busy(r, WEFT_REFUSED_MAX_CONCURRENT,
                    "server busy: route %s has its max_concurrent (%d) requests in flight", rt->cfg->path, max);
        return 0;
    }
    r->slot = n;
    hold(r);
    return 1;
}

/* ---- pool ---- */

static void on_pool_done(weft_msg *m)
{
    pool_job *job = H2O_STRUCT_FROM_MEMBER(pool_job, done, m);
    weft_req_complete(job->r);
}

static void pool_run(weft_work *w)
{
    pool_job *job = H2O_STRUCT_FROM_MEMBER(pool_job, work, w);
    weft_req *r = job->r;
    weft_dispatch_running = r;
    /* Withdrawn between the loop's cancel and this worker taking the job. */
    r->rc = weft_req_cancelled(r) ? WEFT_CANCELLED : r->route->desc->handle(r, r->route->state);
    weft_req_run_defers(r);
    if (r->lend_refused && !r->streamed) {
        /* Whatever the handler answered to its refused WebSocket or stream. */
        char msg[200];
        snprintf(msg, sizeof(msg), "server busy: pool '%s' has lent its max_long_lived workers to WebSockets and "
                 "streams", weft_workpool_name(weft_route_pool(r->route)));
        weft_request_res_error(r, 503, msg);
        weft_request_res_header(r, "retry-after", "1");
        r->rc = WEFT_OK;
    }
    weft_dispatch_running = NULL;
    weft_loop_post(r->loop, &job->done, on_pool_done);
}

/* Still queued after the pool's queue_timeout_ms: every worker is held
 * (by long-lived requests, often), and waiting longer only ties up the
 * client and the queue. A worker that took it meanwhile runs it. */
static void on_queue_timeout(weft_timer *t)
{
    weft_req *r = H2O_STRUCT_FROM_MEMBER(weft_req, queue_timer, t);
    if (dreq(r)->job == NULL || weft_workpool_expire(weft_route_pool(r->route), dreq(r)->job) != 0)
        return;
    dreq(r)->job = NULL;
    refuse_busy(r, WEFT_REFUSED_QUEUE_TIMEOUT,
                "server busy: no worker of pool '%s' was free within its queue_timeout_ms (%d ms)",
                weft_workpool_name(weft_route_pool(r->route)), weft_workpool_queue_timeout(weft_route_pool(r->route)));
}

int weft_dispatch_long_lived(weft_req *r)
{
    if (r->exec != WEFT_EXEC_WORKER || r->lent)
        return 0;
    if (weft_workpool_lend(weft_route_pool(r->route)) == 0) {
        r->lent = 1;
        return 0;
    }
    r->lend_refused = 1;
    return -1;
}

static void run_pool(weft_req *r)
{
    pool_job *job = weft_req_alloc(r, sizeof(*job));
    r->exec = WEFT_EXEC_WORKER;
    r->ran_as = "pool";
    if (job != NULL) {
        job->r = r;
        job->work.run = pool_run;
        int qt = weft_workpool_queue_timeout(weft_route_pool(r->route));
        /* Armed before submitting: the job may finish at once, and its
         * completion (on this loop, later) must find the timer to cancel.
         * Without memory for the timer the request waits unbounded. */
        if (qt > 0 && weft_timers_add(r->loop->timers, &r->queue_timer, (uint64_t)qt, on_queue_timeout) == 0)
            hold(r);
        if (weft_workpool_submit(weft_route_pool(r->route), &job->work) == 0) {
            dreq(r)->job = &job->work;
            return;
        }
        weft_timers_cancel(r->loop->timers, &r->queue_timer);
    }
    /* Refuse at once rather than queue without bound: the client may retry
     * elsewhere, and the server's memory stays flat under overload. */
    weft_request_res_error(r, 503, "server busy: worker pool queue is full");
    weft_request_res_header(r, "retry-after", "1");
    weft_req_complete(r);
}

/* ---- auto: coroutine or pool, per request, by what the route did (auto.c) ---- */

/* The policy a request of `route` starts on, auto resolved. A plugin with
 * only handle_async has nothing to move: auto runs it reactive. */
static weft_dispatch policy_of(const weft_route *route)
{
    weft_dispatch d = route->cfg->dispatch;
    if (d == WEFT_DISPATCH_AUTO && weft_route_auto(route) == NULL)
        return WEFT_DISPATCH_REACTIVE;
    return d;
}

static void run_auto(weft_req *r)
{
    /* Decided once, here: a request never changes policy while it runs. */
    if (weft_auto_choose(r->route, &r->auto_probe) == WEFT_DISPATCH_POOL)
        run_pool(r);
    else
        run_coroutine(r);
}

/* ---- a reactive start after h2o's read (weft_dispatch_start_multiplexed) ---- */

typedef struct start_later {
    h2o_timer_t entry;
    weft_req *r;
} start_later;

static void on_start_later(h2o_timer_t *e)
{
    weft_req *r = H2O_STRUCT_FROM_MEMBER(start_later, entry, e)->r;
    if (r->hreq == NULL) {
        /* Reset while it waited: http/ freed the h2o request and scheduled
         * the cancellation for later; it is done now, before any work. */
        weft_dispatch_cancel(r, WEFT_CANCEL_CLIENT);
        return;
    }
    dreq(r)->start_later = NULL;
    weft_dispatch_start(r);
}

/* 1 when `r` had not started yet: it never will. */
static int drop_start_later(weft_req *r)
{
    start_later *sl = dreq(r)->start_later;
    if (sl == NULL)
        return 0;
    if (h2o_timer_is_linked(&sl->entry))
        h2o_timer_unlink(&sl->entry);
    dreq(r)->start_later = NULL;
    return 1;
}

void weft_dispatch_start_multiplexed(weft_req *r)
{
    start_later *sl;
    if (policy_of(r->route) != WEFT_DISPATCH_REACTIVE || (sl = weft_req_alloc(r, sizeof(*sl))) == NULL) {
        weft_dispatch_start(r);
        return;
    }
    /* A 0 ms timer runs after the loop has handled every socket it polled,
     * reads included: by then h2o has parsed the resets. */
    *sl = (start_later){.r = r};
    h2o_timer_init(&sl->entry, on_start_later);
    dreq(r)->start_later = sl;
    h2o_timer_link(r->loop->ctx.loop, 0, &sl->entry);
}

void weft_dispatch_cancel(weft_req *r, int reason)
{
    slice s;
    /* In a slice: a wait's cancel() may resume handler code that finishes
     * the request, which must then complete only once this returns. */
    slice_begin(r, &s);
    if (weft_req_cancel(r, reason) &&
        (drop_start_later(r) || (dreq(r)->job != NULL && weft_workpool_cancel(weft_route_pool(r->route), dreq(r)->job) == 0)))
        finish(r, WEFT_CANCELLED); /* never ran: nothing else will finish it */
    slice_end(r, &s);
}

void weft_dispatch_start(weft_req *r)
{
    if (r->start_ns == 0) /* unless the caller read the clock already */
        r->start_ns = weft_now_ns();
    if (r->route->quarantined) {
        /* Its plugin build crashed the server: the rest serves, this waits
         * for the operator (weft quarantine clear, or another build). */
        weft_request_res_status(r, 503);
        weft_request_res_header(r, "content-type", "text/plain; charset=utf-8");
        weft_request_res_printf(r,
                                "plugin %s is quarantined: this build of it crashed the server; the operator lifts "
                                "this with `weft quarantine clear %s` or by installing another build\n",
                                r->route->desc->name, r->route->desc->name);
        weft_request_res_header(r, "retry-after", "300");
        weft_req_complete(r);
        return;
    }
    if (!admit(r))
        return;
    switch (policy_of(r->route)) {
    case WEFT_DISPATCH_REACTIVE: run_reactive(r); break;
    case WEFT_DISPATCH_COROUTINE: run_coroutine(r); break;
    case WEFT_DISPATCH_POOL: run_pool(r); break;
    case WEFT_DISPATCH_AUTO: run_auto(r); break;
    }
}

/* ---- per-loop state: the coroutine stacks ---- */

static size_t coro_stack_size;

static int coro_setup(weft_loop *L)
{
    /* Without the overflow reporter a coroutine still runs; only the
     * report of a stack overflow is lost. */
    if (weft_coro_thread_init() != 0)
        weft_log_warn("loop %d: no coroutine overflow reporter: %s", L->index, strerror(errno));
    weft_coro_pool *p = weft_coro_pool_new(coro_stack_size, 256); /* and up to the recent peak: coro.h */
    weft_loop_set(L, coros_slot, p);
    return p != NULL ? 0 : -1;
}

static void coro_teardown(weft_loop *L)
{
    weft_coro_pool_free(coros_of(L));
    weft_loop_set(L, coros_slot, NULL);
    weft_coro_thread_cleanup();
}

/* A few hundred munmaps per tick at most (~1 ms): a burst's stacks go back
 * over a few seconds without a pause in serving. */
static void coro_tick(weft_loop *L)
{
    if (weft_coro_pool_trim(coros_of(L), 256) > 0)
        coro_gauges(L);
}

static const weft_loop_hook coro_hook = {.setup = coro_setup, .teardown = coro_teardown, .tick = coro_tick};

void weft_dispatch_attach(size_t stack_size)
{
    coro_stack_size = stack_size;
    weft_loop_add_hook(&coro_hook);
}
