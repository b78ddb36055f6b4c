/*
 * Tests for server/dispatch/await.c, the one wait of host calls, with a fake
 * operation (a gate the test opens or the request's cancellation closes) on
 * real loops (support/unitloop.h): under each policy the operation starts on
 * the request's loop thread, the loop stays free while the handler waits,
 * the handler gets the operation's rc; cancellation ends the wait with
 * WEFT_CANCELLED through the operation's cancel; a request already withdrawn
 * never starts it; and a blocking-style wait from a reactive handler is
 * refused with one outcome (WEFT_ERROR, one log line per interval).
 */
#include "dispatch/await.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dispatch/blocking.h"
#include "dispatch/dispatch.h"
#include "dispatch/hostsync.h"
#include "harness.h"
#include "unitloop.h"

static wt_route rt;

static void teardown(void)
{
    wt_loops_stop();
    wt_route_fini(&rt);
}

TestSuite(await, .fini = teardown, .timeout = 60);

/* ---- the fake operation: pending until the test opens the gate ---- */

static weft_await *pending; /* loop thread only (set by start, read by the test's loop calls) */
static int started_on_loop, cancels;

static void gate_start(weft_await *a)
{
    started_on_loop = weft_loop_current == a->r->loop;
    pending = a;
    wt_trace("started");
}

static void gate_cancel(weft_await *a)
{
    cancels++;
    pending = NULL;
    weft_await_done(a, WEFT_CANCELLED);
}

static void open_gate(void *arg)
{
    weft_await *a = pending;
    pending = NULL;
    cr_assert_not_null(a, "no operation pending");
    weft_await_done(a, *(int *)arg);
}

static void is_pending(void *arg) { *(int *)arg = pending != NULL; }

static void mark_loop_free(void *arg)
{
    (void)arg;
    wt_trace("loop-free");
}

static weft_req *victim;
static void cancel_victim(void *arg)
{
    (void)arg;
    weft_dispatch_cancel(victim, WEFT_CANCEL_CLIENT);
}

/* Waits (on the loop's own signals: the operation registered) until the gate is pending. */
static void wait_pending(void)
{
    double limit = wt_now_ms() + 5000;
    int p = 0;
    while (!p && wt_now_ms() < limit) {
        wt_on_loop(0, is_pending, &p);
        if (!p)
            usleep(1000);
    }
    cr_assert(p, "the operation never started");
}

static int blocking_handler(weft_req *r, void *state)
{
    (void)state;
    weft_await a = {.r = r, .start = gate_start, .cancel = gate_cancel};
    int rc = weft_await_block(&a);
    weft_request_res_printf(r, "rc=%d %s", rc, weft_loop_current == r->loop ? "on-loop" : "off-loop");
    return WEFT_OK;
}

static void async_complete(weft_await *a)
{
    weft_request_res_printf(a->r, "rc=%d on-loop", a->rc);
    weft_dispatch_done(a->r, WEFT_OK);
}

static int async_handler(weft_req *r, void *state)
{
    (void)state;
    weft_await *a = weft_req_alloc(r, sizeof(*a));
    cr_assert_not_null(a);
    *a = (weft_await){.r = r, .start = gate_start, .cancel = gate_cancel, .complete = async_complete};
    weft_await_async(a);
    return WEFT_AGAIN;
}

static const weft_plugin waiter = {WEFT_PLUGIN_HEADER, .name = "waiter", .handle = blocking_handler,
                                   .handle_async = async_handler};

/* The operation ends with `rc` when the test opens the gate (or the request is cancelled). */
static void check_wait(weft_dispatch policy, int cancel, const char *where)
{
    char want[64];
    snprintf(want, sizeof(want), "rc=%d %s", cancel ? WEFT_CANCELLED : WEFT_TIMEOUT, where);
    wt_route_init(&rt, &waiter, policy, 2, 10);
    wt_loops_start(1);
    victim = wt_req_new(&rt, 0, 1);
    wt_req_start(victim);
    wait_pending();
    cr_assert(started_on_loop, "the operation starts on the request's loop thread");
    wt_on_loop(0, mark_loop_free, NULL);
    if (cancel) {
        wt_on_loop(0, cancel_victim, NULL);
    } else {
        int rc = WEFT_TIMEOUT;
        wt_on_loop(0, open_gate, &rc);
    }
    const wt_done *d = wt_wait_done(1, 5000);
    cr_assert_str_eq(wt_trace_text(), "started loop-free", "the loop ran other work during the wait");
    cr_assert_str_eq(d[0].body, want);
    cr_assert_eq(cancels, cancel, "the operation's cancel runs exactly when the request is cancelled");
    wt_loops_stop(); /* in the body: Criterion ignores assertions in .fini */
}

Test(await, a_coroutine_yields_until_done) { check_wait(WEFT_DISPATCH_COROUTINE, 0, "on-loop"); }
Test(await, a_worker_parks_until_done) { check_wait(WEFT_DISPATCH_POOL, 0, "off-loop"); }
Test(await, a_reactive_handler_is_called_back) { check_wait(WEFT_DISPATCH_REACTIVE, 0, "on-loop"); }
Test(await, cancelling_ends_a_coroutine_wait) { check_wait(WEFT_DISPATCH_COROUTINE, 1, "on-loop"); }
Test(await, cancelling_ends_a_worker_wait) { check_wait(WEFT_DISPATCH_POOL, 1, "off-loop"); }
Test(await, cancelling_ends_a_reactive_wait) { check_wait(WEFT_DISPATCH_REACTIVE, 1, "on-loop"); }

/* ---- a request withdrawn before it waits never starts the operation ---- */

static int cancelled_first(weft_req *r, void *state)
{
    (void)state;
    weft_req_cancel(r, WEFT_CANCEL_DEADLINE);
    weft_await a = {.r = r, .start = gate_start, .cancel = gate_cancel};
    weft_request_res_printf(r, "rc=%d", weft_await_block(&a) == WEFT_CANCELLED ? 1 : 0);
    return WEFT_OK;
}

static const weft_plugin withdrawn = {WEFT_PLUGIN_HEADER, .name = "withdrawn", .handle = cancelled_first};

Test(await, a_withdrawn_request_never_starts_the_operation)
{
    wt_route_init(&rt, &withdrawn, WEFT_DISPATCH_COROUTINE, 0, 0);
    wt_loops_start(1);
    wt_req_start(wt_req_new(&rt, 0, 1));
    const wt_done *d = wt_wait_done(1, 5000);
    cr_assert_str_eq(d[0].body, "rc=1", "WEFT_CANCELLED at once");
    cr_assert_str_eq(wt_trace_text(), "", "started anyway");
    wt_loops_stop();
}

/* ---- misuse: one outcome for every blocking-style call from a reactive handler ---- */

static int misuse_async(weft_req *r, void *state)
{
    (void)state;
    weft_await a = {.r = r, .start = gate_start, .cancel = gate_cancel};
    int rc_await = weft_await_block(&a);
    /* sleep_ms used to block the loop here; now it is refused like the rest. */
    int rc_sleep = weft_hostsync_sleep_ms(r, 60000);
    int rc_again = weft_hostsync_sleep_ms(r, 60000);
    weft_request_res_printf(r, "%d %d %d", rc_await == WEFT_ERROR, rc_sleep == WEFT_ERROR, rc_again == WEFT_ERROR);
    return WEFT_OK;
}

static const weft_plugin misuser = {WEFT_PLUGIN_HEADER, .name = "misuser", .handle_async = misuse_async};

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

Test(await, a_blocking_wait_from_a_reactive_handler_is_refused_and_logged_once)
{
    char path[] = "/tmp/weft-await-log-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    weft_blocking_configure(0, 3600); /* one line per route per hour */
    wt_route_init(&rt, &misuser, WEFT_DISPATCH_REACTIVE, 0, 0);
    wt_loops_start(1);
    wt_req_start(wt_req_new(&rt, 0, 1));
    const wt_done *d = wt_wait_done(1, 5000);
    wt_loops_stop();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char log[8192] = "";
    ssize_t n = pread(fd, log, sizeof(log) - 1, 0);
    close(fd);
    unlink(path);
    log[n > 0 ? n : 0] = '\0';
    cr_assert_str_eq(d[0].body, "1 1 1", "every blocking-style wait answers WEFT_ERROR");
    cr_assert_str_eq(wt_trace_text(), "", "the refused operation never started");
    cr_assert_eq(count(log, "sleep_ms() called from a reactive handler returns WEFT_ERROR"), 1,
                 "once per interval, not per call:\n%s", log);
    cr_assert_not_null(strstr(log, "route /t (plugin misuser)"), "the line names the route:\n%s", log);
    cr_assert_not_null(strstr(log, "use sleep_async()"), "and what to call instead:\n%s", log);
}
