/*
 * Tests for server/dispatch/hostsync.c: the host's sleep and lock primitives
 * in each execution context. The lock is handed to the oldest waiter (FIFO)
 * whatever context it waits in, so nobody barges ahead; it excludes across
 * contexts; a reactive handler asking to block on it is refused instead of
 * deadlocking its loop; sleeps suspend only what they should. Real loops
 * (support/unitloop.h).
 */
#include "dispatch/hostsync.h"

#include <criterion/criterion.h>
#include <semaphore.h>
#include <string.h>

#include "dispatch/dispatch.h"
#include "request/cancel.h"
#include "harness.h"
#include "unitloop.h"

static wt_route rt_coro, rt_react, rt_pool;
static weft_mutex *mu;
static weft_req *outside; /* the test thread, acting as a pool worker */

static void setup(void)
{
    mu = weft_hostsync_mutex_new();
    cr_assert_not_null(mu);
    outside = weft_req_new();
    cr_assert_not_null(outside);
    outside->exec = WEFT_EXEC_WORKER;
}

static void teardown(void)
{
    wt_loops_stop();
    wt_route_fini(&rt_pool);
    weft_hostsync_mutex_free(mu);
    weft_req_free(outside);
}

TestSuite(hostsync, .init = setup, .fini = teardown, .timeout = 60);

static void noop(void *arg) { (void)arg; }

static void mark_loop_free(void *arg)
{
    (void)arg;
    wt_trace("loop-free");
}

/* ---- the lock ---- */

static int coro_takes_lock(weft_req *r, void *state)
{
    (void)state;
    cr_assert_eq(weft_hostsync_mutex_lock(r, mu), WEFT_OK);
    wt_trace("coroutine");
    weft_hostsync_mutex_unlock(r, mu);
    return WEFT_OK;
}

static void granted(weft_req *r, void *arg, int rc)
{
    (void)arg;
    cr_assert_eq(rc, WEFT_OK);
    wt_trace("callback");
    weft_hostsync_mutex_unlock(r, mu);
    weft_dispatch_done(r, WEFT_OK);
}

static int react_takes_lock(weft_req *r, void *state)
{
    (void)state;
    weft_hostsync_mutex_lock_async(r, mu, granted, NULL);
    return WEFT_AGAIN;
}

static const weft_plugin locker = {WEFT_PLUGIN_HEADER, .name = "locker", .handle = coro_takes_lock,
                                   .handle_async = react_takes_lock};

Test(hostsync, unlock_hands_the_lock_to_the_oldest_waiter_in_any_context)
{
    wt_route_init(&rt_coro, &locker, WEFT_DISPATCH_COROUTINE, 0, 0);
    wt_route_init(&rt_react, &locker, WEFT_DISPATCH_REACTIVE, 0, 0);
    wt_loops_start(1);
    outside->loop = weft_loop_at(0); /* a worker waits through its request's loop */
    cr_assert_eq(weft_hostsync_mutex_lock(outside, mu), WEFT_OK);
    wt_req_start(wt_req_new(&rt_coro, 0, 1));
    wt_on_loop(0, noop, NULL); /* the coroutine waits, first in line */
    wt_req_start(wt_req_new(&rt_react, 0, 2));
    wt_on_loop(0, noop, NULL); /* the callback waits, second */
    cr_assert_eq(wt_done_count(), 0, "both wait for the lock");
    wt_trace("unlock");
    weft_hostsync_mutex_unlock(outside, mu);
    /* Taking it again at once must queue behind both: ownership went to the
     * coroutine at unlock, so there is no free moment to barge into. */
    cr_assert_eq(weft_hostsync_mutex_lock(outside, mu), WEFT_OK);
    wt_trace("relock");
    weft_hostsync_mutex_unlock(outside, mu);
    wt_wait_done(2, 5000);
    cr_assert_str_eq(wt_trace_text(), "unlock coroutine callback relock");
    wt_loops_stop(); /* in the body: Criterion ignores assertions in .fini */
}

/* Read-modify-write with a suspension in the middle: only mutual exclusion
 * keeps every increment. */
static int counter;

static int bump(weft_req *r, void *state)
{
    (void)state;
    cr_assert_eq(weft_hostsync_mutex_lock(r, mu), WEFT_OK);
    int seen = counter;
    weft_hostsync_sleep_ms(r, 1);
    counter = seen + 1;
    weft_hostsync_mutex_unlock(r, mu);
    return WEFT_OK;
}

static const weft_plugin bumper = {WEFT_PLUGIN_HEADER, .name = "bumper", .handle = bump};

Test(hostsync, the_lock_excludes_across_coroutines_and_workers)
{
    wt_route_init(&rt_coro, &bumper, WEFT_DISPATCH_COROUTINE, 0, 0);
    wt_route_init(&rt_pool, &bumper, WEFT_DISPATCH_POOL, 4, 100);
    wt_loops_start(2);
    outside->loop = weft_loop_at(0); /* a worker waits through its request's loop */
    enum { EACH = 12 };
    for (int i = 0; i < EACH; i++) {
        wt_req_start(wt_req_new(&rt_coro, i % 2, i));
        wt_req_start(wt_req_new(&rt_pool, i % 2, 100 + i));
    }
    wt_wait_done(2 * EACH, 20000);
    cr_assert_eq(counter, 2 * EACH, "lost updates: the lock let two holders in");
    wt_loops_stop(); /* in the body: Criterion ignores assertions in .fini */
}

static int lock_on_loop(weft_req *r, void *state)
{
    (void)state;
    int rc = weft_hostsync_mutex_lock(r, mu); /* would block the loop: refused */
    wt_trace(rc == WEFT_ERROR ? "refused" : "took-it");
    weft_hostsync_mutex_lock_async(r, mu, granted, NULL); /* the lock is still free */
    return WEFT_AGAIN;
}

static const weft_plugin wrong_locker = {WEFT_PLUGIN_HEADER, .name = "wrong", .handle_async = lock_on_loop};

Test(hostsync, blocking_lock_from_a_reactive_handler_is_refused_and_takes_nothing)
{
    wt_route_init(&rt_react, &wrong_locker, WEFT_DISPATCH_REACTIVE, 0, 0);
    wt_loops_start(1);
    outside->loop = weft_loop_at(0); /* a worker waits through its request's loop */
    wt_req_start(wt_req_new(&rt_react, 0, 1));
    wt_wait_done(1, 5000);
    cr_assert_str_eq(wt_trace_text(), "refused callback");
    cr_assert_eq(weft_hostsync_mutex_lock(outside, mu), WEFT_OK, "released by the callback");
    weft_hostsync_mutex_unlock(outside, mu);
    wt_loops_stop(); /* in the body: Criterion ignores assertions in .fini */
}

/* A waiter whose request is cancelled leaves the queue and gets
 * WEFT_CANCELLED, under each policy; the lock stays its holder's. */
static weft_req *victim;

static void cancel_victim(void *arg)
{
    (void)arg;
    weft_dispatch_cancel(victim, WEFT_CANCEL_CLIENT);
}

static int lock_and_say(weft_req *r, void *state)
{
    (void)state;
    int rc = weft_hostsync_mutex_lock(r, mu);
    if (rc == WEFT_OK)
        weft_hostsync_mutex_unlock(r, mu);
    weft_request_res_printf(r, "rc=%d", rc);
    return WEFT_OK;
}

static void said(weft_req *r, void *arg, int rc)
{
    (void)arg;
    if (rc == WEFT_OK)
        weft_hostsync_mutex_unlock(r, mu);
    weft_request_res_printf(r, "rc=%d", rc);
    weft_dispatch_done(r, WEFT_OK);
}

static int lock_and_say_async(weft_req *r, void *state)
{
    (void)state;
    weft_hostsync_mutex_lock_async(r, mu, said, NULL);
    return WEFT_AGAIN;
}

static const weft_plugin canceller = {WEFT_PLUGIN_HEADER, .name = "canceller", .handle = lock_and_say,
                                      .handle_async = lock_and_say_async};

static void check_cancelled_waiter(wt_route *rt, weft_dispatch policy)
{
    wt_route_init(rt, &canceller, policy, 2, 10);
    wt_loops_start(1);
    outside->loop = weft_loop_at(0);
    cr_assert_eq(weft_hostsync_mutex_lock(outside, mu), WEFT_OK);
    victim = wt_req_new(rt, 0, 1);
    wt_req_start(victim);
    /* Queued: a worker gets there through the loop, so look until it is. */
    for (double t0 = wt_now_ms(); weft_hostsync_mutex_waiters(mu) == 0 && wt_now_ms() - t0 < 5000;)
        wt_on_loop(0, noop, NULL);
    cr_assert_eq(weft_hostsync_mutex_waiters(mu), 1, "the request waits for the lock");
    wt_on_loop(0, cancel_victim, NULL);
    const wt_done *d = wt_wait_done(1, 5000);
    char want[16];
    snprintf(want, sizeof(want), "rc=%d", WEFT_CANCELLED);
    cr_assert_str_eq(d[0].body, want);
    cr_assert_eq(weft_hostsync_mutex_waiters(mu), 0, "the cancelled request left the queue");
    weft_hostsync_mutex_unlock(outside, mu);
    /* Free again, not handed to the request that left. */
    cr_assert_eq(weft_hostsync_mutex_lock(outside, mu), WEFT_OK);
    cr_assert_eq(weft_hostsync_mutex_waiters(mu), 0);
    weft_hostsync_mutex_unlock(outside, mu);
    wt_loops_stop(); /* in the body: Criterion ignores assertions in .fini */
}

Test(hostsync, a_cancelled_coroutine_leaves_the_lock_queue) { check_cancelled_waiter(&rt_coro, WEFT_DISPATCH_COROUTINE); }
Test(hostsync, a_cancelled_worker_leaves_the_lock_queue) { check_cancelled_waiter(&rt_pool, WEFT_DISPATCH_POOL); }
Test(hostsync, a_cancelled_callback_leaves_the_lock_queue) { check_cancelled_waiter(&rt_react, WEFT_DISPATCH_REACTIVE); }

/* ---- sleeping ---- */

static double t_start;

static void woke(weft_req *r, void *arg, int rc)
{
    (void)arg;
    cr_assert_eq(rc, WEFT_OK);
    weft_request_res_printf(r, "%s after %.0f", weft_loop_current == r->loop ? "on-loop" : "off-loop",
                    wt_now_ms() - t_start);
    weft_dispatch_done(r, WEFT_OK);
}

static int sleep_async(weft_req *r, void *state)
{
    (void)state;
    wt_trace("asleep");
    weft_hostsync_sleep_async(r, 30, woke, NULL);
    return WEFT_AGAIN;
}

static int sleep_blocking(weft_req *r, void *state)
{
    (void)state;
    wt_trace("asleep");
    int rc = weft_hostsync_sleep_ms(r, 30);
    weft_request_res_printf(r, "%s after %.0f", weft_loop_current == r->loop ? "on-loop" : "off-loop",
                    wt_now_ms() - t_start);
    return rc;
}

static const weft_plugin sleeper = {WEFT_PLUGIN_HEADER, .name = "sleeper", .handle = sleep_blocking,
                                    .handle_async = sleep_async};

/* Each context: the loop is free while the handler sleeps, and the sleep lasts. */
static void check_sleep(wt_route *rt, weft_dispatch policy, const char *where)
{
    wt_route_init(rt, &sleeper, policy, 2, 10);
    wt_loops_start(1);
    outside->loop = weft_loop_at(0); /* a worker waits through its request's loop */
    t_start = wt_now_ms();
    wt_req_start(wt_req_new(rt, 0, 1));
    if (policy == WEFT_DISPATCH_POOL) /* the worker may not have started yet */
        while (strcmp(wt_trace_text(), "asleep") != 0 && wt_now_ms() - t_start < 5000)
            wt_on_loop(0, noop, NULL);
    wt_on_loop(0, mark_loop_free, NULL);
    const wt_done *d = wt_wait_done(1, 5000);
    cr_assert_str_eq(wt_trace_text(), "asleep loop-free", "the loop ran other work during the sleep");
    char want[32];
    snprintf(want, sizeof(want), "%s after ", where);
    cr_assert(strncmp(d[0].body, want, strlen(want)) == 0, "%s", d[0].body);
    cr_assert_geq(atoi(d[0].body + strlen(want)), 29, "a 30 ms sleep: %s", d[0].body);
    wt_loops_stop(); /* in the body: Criterion ignores assertions in .fini */
}

Test(hostsync, sleep_async_calls_back_on_the_loop) { check_sleep(&rt_react, WEFT_DISPATCH_REACTIVE, "on-loop"); }
Test(hostsync, sleep_suspends_a_coroutine) { check_sleep(&rt_coro, WEFT_DISPATCH_COROUTINE, "on-loop"); }
Test(hostsync, sleep_blocks_only_a_worker) { check_sleep(&rt_pool, WEFT_DISPATCH_POOL, "off-loop"); }
