/*
 * Tests for server/timer.c: the per-loop min-heap of deadlines driven by a
 * timerfd on a real h2o event loop. Delays differ by at least 10 ms so the
 * expected order never depends on scheduling luck; waits are generous.
 */
#include "base/timer.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "base/h2o_glue.h"

typedef struct probe {
    weft_timer t; /* first member: the callback gets &probe->t */
    int id;
    int fired;
    uint64_t fired_deadline;
} probe;

#define MAX_FIRED 1024
static int fired_ids[MAX_FIRED];
static size_t n_fired;

static h2o_evloop_t *loop;
static weft_timers *timers;

static void on_fire(weft_timer *t)
{
    probe *p = (probe *)t;
    p->fired++;
    p->fired_deadline = t->deadline_ns;
    if (n_fired < MAX_FIRED)
        fired_ids[n_fired] = p->id;
    n_fired++;
}

static void timer_setup(void)
{
    loop = h2o_evloop_create();
    cr_assert_not_null(loop);
    timers = weft_timers_new(loop);
    cr_assert_not_null(timers);
    n_fired = 0;
}

static void timer_teardown(void)
{
    weft_timers_free(timers);
    h2o_evloop_run(loop, 0); /* lets h2o dispose of the closed timerfd socket */
    h2o_evloop_destroy(loop);
}

TestSuite(timer, .init = timer_setup, .fini = timer_teardown, .timeout = 60);

/* Runs the loop until `count` callbacks ran or `max_ms` passed. */
static void run_until(size_t count, uint64_t max_ms)
{
    uint64_t end = weft_now_ns() + max_ms * 1000000u;
    while (n_fired < count && weft_now_ns() < end)
        h2o_evloop_run(loop, 10);
}

/* Runs the loop for at least `ms`. */
static void run_for(uint64_t ms)
{
    uint64_t end = weft_now_ns() + ms * 1000000u;
    while (weft_now_ns() < end)
        h2o_evloop_run(loop, 5);
}

Test(timer, now_is_monotonic)
{
    uint64_t a = weft_now_ns(), b = weft_now_ns();
    cr_assert_gt(a, 0);
    cr_assert_geq(b, a);
}

Test(timer, fire_in_deadline_order)
{
    static const uint64_t delays[] = {30, 10, 50, 0, 20, 40};
    probe p[6];
    memset(p, 0, sizeof(p));
    uint64_t before = weft_now_ns();
    for (int i = 0; i < 6; i++) {
        p[i].id = i;
        weft_timers_add(timers, &p[i].t, delays[i], on_fire);
        cr_assert_neq(p[i].t.heap_index, 0, "an added timer is scheduled");
    }
    cr_assert_eq(weft_timers_pending(timers), 6);
    run_until(6, 5000);
    cr_assert_eq(n_fired, 6, "only %zu of 6 timers fired", n_fired);
    static const int want[] = {3, 1, 4, 0, 5, 2};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(fired_ids[i], want[i], "position %d: timer %d fired, want %d", i, fired_ids[i], want[i]);
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(p[i].fired, 1, "timer %d fired %d times", i, p[i].fired);
        cr_assert_eq(p[i].t.heap_index, 0, "a fired timer is unscheduled");
    }
    cr_assert_eq(weft_timers_pending(timers), 0);
    /* Nothing fires early: the last timer was due 50 ms after it was added. */
    cr_assert_geq(weft_now_ns() - before, 50 * 1000000u);
}

Test(timer, cancel)
{
    probe p[5];
    memset(p, 0, sizeof(p));
    for (int i = 0; i < 5; i++) {
        p[i].id = i;
        weft_timers_add(timers, &p[i].t, 10 + 10 * (uint64_t)i, on_fire);
    }
    weft_timers_cancel(timers, &p[0].t); /* the head */
    weft_timers_cancel(timers, &p[2].t); /* from the middle */
    cr_assert_eq(p[0].t.heap_index, 0);
    cr_assert_eq(p[2].t.heap_index, 0);
    cr_assert_eq(weft_timers_pending(timers), 3);
    weft_timers_cancel(timers, &p[2].t); /* twice: no-op */
    probe never = {0};
    weft_timers_cancel(timers, &never.t); /* never scheduled: no-op */
    cr_assert_eq(weft_timers_pending(timers), 3);
    run_until(3, 5000);
    run_for(30); /* well past every deadline, cancelled ones included */
    cr_assert_eq(n_fired, 3);
    cr_assert_eq(p[0].fired, 0, "a cancelled timer fired");
    cr_assert_eq(p[2].fired, 0, "a cancelled timer fired");
    cr_assert_eq(fired_ids[0], 1);
    cr_assert_eq(fired_ids[1], 3);
    cr_assert_eq(fired_ids[2], 4);
    cr_assert_eq(never.fired, 0);
}

Test(timer, cancel_last_timer_then_reuse)
{
    probe p = {.id = 7};
    weft_timers_add(timers, &p.t, 10, on_fire);
    weft_timers_cancel(timers, &p.t);
    cr_assert_eq(weft_timers_pending(timers), 0);
    run_for(30);
    cr_assert_eq(n_fired, 0, "the only timer was cancelled");
    /* A cancelled timer may be scheduled again. */
    weft_timers_add(timers, &p.t, 5, on_fire);
    run_until(1, 5000);
    cr_assert_eq(p.fired, 1);
}

/* Many timers, pseudo-random delays, every third cancelled: the rest fire
 * exactly once, in non-decreasing deadline order (exercises heap growth and
 * removal from arbitrary positions). */
Test(timer, many_timers_heap_order)
{
    enum { N = 300 };
    static probe p[N];
    memset(p, 0, sizeof(p));
    uint32_t seed = 12345;
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i].id = i;
        weft_timers_add(timers, &p[i].t, (seed >> 16) % 60, on_fire);
    }
    cr_assert_eq(weft_timers_pending(timers), N);
    size_t live = 0;
    for (int i = 0; i < N; i++) {
        if (i % 3 == 0)
            weft_timers_cancel(timers, &p[i].t);
        else
            live++;
    }
    cr_assert_eq(weft_timers_pending(timers), live);
    run_until(live, 10000);
    run_for(20);
    cr_assert_eq(n_fired, live);
    uint64_t last = 0;
    for (size_t k = 0; k < n_fired; k++) {
        const probe *q = &p[fired_ids[k]];
        cr_assert_neq(q->id % 3, 0, "cancelled timer %d fired", q->id);
        cr_assert_eq(q->fired, 1, "timer %d fired %d times", q->id, q->fired);
        cr_assert_geq(q->fired_deadline, last, "timer %d fired out of deadline order", q->id);
        last = q->fired_deadline;
    }
}

/* ---- callbacks that schedule and cancel ---- */

static probe chain_first, chain_second, victim;

static void on_first(weft_timer *t)
{
    on_fire(t);
    weft_timers_add(timers, &chain_second.t, 5, on_fire); /* schedule from a callback */
    weft_timers_cancel(timers, &victim.t);                /* cancel from a callback */
}

Test(timer, callbacks_may_add_and_cancel)
{
    chain_first = (probe){.id = 1};
    chain_second = (probe){.id = 2};
    victim = (probe){.id = 3};
    weft_timers_add(timers, &chain_first.t, 5, on_first);
    weft_timers_add(timers, &victim.t, 40, on_fire);
    run_until(2, 5000);
    run_for(60);
    cr_assert_eq(chain_first.fired, 1);
    cr_assert_eq(chain_second.fired, 1, "a timer added by a callback must fire");
    cr_assert_eq(victim.fired, 0, "a timer cancelled by a callback must not fire");
    cr_assert_eq(weft_timers_pending(timers), 0);
}

Test(timer, free_drops_pending_timers)
{
    probe p[3];
    memset(p, 0, sizeof(p));
    for (int i = 0; i < 3; i++)
        weft_timers_add(timers, &p[i].t, 5 + 5 * (uint64_t)i, on_fire);
    weft_timers_free(timers);
    timers = NULL; /* teardown must not free twice (weft_timers_free(NULL) is a no-op) */
    for (int i = 0; i < 3; i++)
        cr_assert_eq(p[i].t.heap_index, 0, "free must unschedule timer %d", i);
    run_for(40);
    cr_assert_eq(n_fired, 0, "free must drop pending timers without running them");
}
