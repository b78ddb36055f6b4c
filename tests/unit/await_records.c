/*
 * Tests for the records of reactive waits (server/dispatch/await.c,
 * weft_await_rec_new/free) through the host calls that use them
 * (hostsync.c's sleep and lock, flush.c, bodyread.c) on real loops
 * (support/unitloop.h): a reactive handler that waits in a loop -- each wait
 * started from the last one's callback, as a stream's flush and sleep per
 * event or a body read per part -- keeps its request's arena as it was after
 * the first rounds (issue 44: each wait took a new record from it until the
 * request ended), also when the wait ends inside the call that started it;
 * and when the request is withdrawn (client gone, deadline) the pending
 * wait's record goes back before its callback, whose later waits end
 * WEFT_CANCELLED at once, and a lock granted as its waiter is withdrawn is
 * held, then given back. The streamed body's h2o side is played by the
 * test (a request without a connection; its write_req callback called on
 * the loop). Under ASan (build-asan) a record touched after it went back
 * is reported: the records are poisoned while free.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/await.h"
#include "dispatch/dispatch.h"
#include "dispatch/hostsync.h"
#include "harness.h"
#include "request/body.h"
#include "request/cancel.h"
#include "unitloop.h"

static wt_route rt;
static weft_req *victim;

static void teardown(void)
{
    wt_loops_stop();
    wt_route_fini(&rt);
}

TestSuite(await_records, .fini = teardown, .timeout = 60);

/* ---- a reactive handler that waits in a loop reuses its wait records ---- */

/* Each round is one wait (a sleep, a flush, a body read) or a lock held over
 * a sleep, started from the last round's callback. After the first rounds
 * the request's arena must not grow: every record went back before its
 * callback ran, and the callback's next wait took it again. */
enum { K_SLEEP, K_FLUSH, K_BODY, K_LOCK };
enum { WARM = 10 }; /* rounds before the arena is measured: both lockers contend by then */
static int kind, rounds, round_rc; /* round_rc: what every round ends with */
static weft_mutex *mu;

typedef struct looper {
    int left;
    size_t arena_warm;
} looper;

static void next_round(weft_req *r, looper *l);

static void round_done(weft_req *r, void *arg, int rc)
{
    looper *l = arg;
    if (l->left == rounds - WARM)
        l->arena_warm = weft_req_arena_bytes(r);
    if (l->left > 0 && rc == round_rc) {
        next_round(r, l);
        return;
    }
    weft_request_res_printf(r, "rc=%d left=%d grew=%zu", rc, l->left, weft_req_arena_bytes(r) - l->arena_warm);
    weft_dispatch_done(r, WEFT_OK);
}

static void body_round_done(weft_req *r, void *arg, int rc, const void *data, size_t len)
{
    (void)data;
    (void)len;
    round_done(r, arg, rc);
}

static void slept_holding(weft_req *r, void *arg, int rc)
{
    weft_hostsync_mutex_unlock(r, mu);
    round_done(r, arg, rc);
}

static void locked(weft_req *r, void *arg, int rc)
{
    if (rc != WEFT_OK)
        round_done(r, arg, rc);
    else
        weft_hostsync_sleep_async(r, 0, slept_holding, arg);
}

static void next_round(weft_req *r, looper *l)
{
    l->left--;
    switch (kind) {
    case K_SLEEP: weft_hostsync_sleep_async(r, 0, round_done, l); break;
    case K_FLUSH: weft_flush_res_flush_async(r, round_done, l); break;
    case K_BODY: weft_bodyread_req_body_read_async(r, body_round_done, l); break;
    case K_LOCK: weft_hostsync_mutex_lock_async(r, mu, locked, l); break;
    }
}

static int loop_handler(weft_req *r, void *state)
{
    (void)state;
    looper *l = weft_req_alloc(r, sizeof(*l));
    cr_assert_not_null(l);
    *l = (looper){.left = rounds};
    next_round(r, l);
    return WEFT_AGAIN;
}

static const weft_plugin looping = {WEFT_PLUGIN_HEADER, .name = "looping", .handle_async = loop_handler};

static weft_req *reqs[2];
static void start_both(void *arg)
{
    for (int i = 0; i < *(int *)arg; i++)
        weft_dispatch_start(reqs[i]);
}

/* `count` requests (started in one loop pass) of `n` rounds of kind `k`, each round ending with `rc`. */
static void check_rounds(int k, int n, int count, int rc, const char *outcome)
{
    kind = k;
    rounds = n;
    round_rc = rc;
    mu = weft_hostsync_mutex_new();
    wt_route_init(&rt, &looping, WEFT_DISPATCH_REACTIVE, 0, 0);
    wt_loops_start(1);
    for (int i = 0; i < count; i++)
        reqs[i] = wt_req_new(&rt, 0, i + 1);
    wt_on_loop(0, start_both, &count);
    const wt_done *d = wt_wait_done(count, 30000);
    char want[64];
    snprintf(want, sizeof(want), "rc=%d left=0 grew=0", rc);
    for (int i = 0; i < count; i++)
        cr_assert_str_eq(d[i].body, want, "%s: request %d answered \"%s\"", outcome, d[i].id, d[i].body);
    wt_loops_stop();
    weft_hostsync_mutex_free(mu);
}

Test(await_records, a_reactive_sleep_loop_reuses_one_record)
{
    check_rounds(K_SLEEP, 2000, 1, WEFT_OK, "2,000 sleeps, each from the last one's callback");
}

/* No h2o request behind it: each flush ends inside its call (WEFT_CANCELLED: no client), and its callback flushes
 * again from there -- the record must be back before the callback runs. The streamed path: integration/events.c. */
Test(await_records, a_flush_ended_inside_its_call_gives_its_record_to_the_next)
{
    check_rounds(K_FLUSH, 200, 1, WEFT_CANCELLED, "200 flushes, each from the last one's callback");
}

Test(await_records, reads_of_a_body_that_came_whole_reuse_one_record)
{
    check_rounds(K_BODY, 200, 1, WEFT_OK, "200 reads of a request without a streamed body, each inside its call");
}

Test(await_records, two_handlers_taking_a_lock_in_turn_reuse_their_records)
{
    check_rounds(K_LOCK, 1000, 2, WEFT_OK, "1,000 rounds of lock, sleep, unlock against the other request");
}

/* ---- cancellation: what becomes of a reactive wait's record ---- */

/* The withdrawn request's pending sleep ends WEFT_CANCELLED; its callback
 * (with the sleep's record given back) starts a wait of each other kind,
 * each ending WEFT_CANCELLED at once in a record of its own, and the last
 * one's callback sleeps again. ASan (build-asan) sees any record touched
 * after it went back. */
static void chain_end(weft_req *r, void *arg, int rc)
{
    (void)arg;
    weft_request_res_printf(r, " sleep=%d", rc);
    weft_dispatch_done(r, WEFT_OK);
}

static void chain_read(weft_req *r, void *arg, int rc, const void *data, size_t len)
{
    (void)data;
    weft_request_res_printf(r, " read=%d len=%zu", rc, len);
    weft_hostsync_sleep_async(r, 0, chain_end, arg);
}

static void chain_flush(weft_req *r, void *arg, int rc)
{
    weft_request_res_printf(r, " flush=%d", rc);
    weft_bodyread_req_body_read_async(r, chain_read, arg);
}

static void long_sleep_over(weft_req *r, void *arg, int rc)
{
    weft_request_res_printf(r, "sleep=%d", rc);
    weft_flush_res_flush_async(r, chain_flush, arg);
}

static int long_sleeper(weft_req *r, void *state)
{
    (void)state;
    weft_hostsync_sleep_async(r, 60000, long_sleep_over, NULL);
    return WEFT_AGAIN;
}

static const weft_plugin sleeper = {WEFT_PLUGIN_HEADER, .name = "sleeper", .handle_async = long_sleeper};

static void noop_on_loop(void *arg) { (void)arg; }

static int cancel_reason;
static void cancel_victim_for(void *arg)
{
    (void)arg;
    weft_dispatch_cancel(victim, cancel_reason);
}

static void check_withdrawn_sleep(int reason)
{
    wt_route_init(&rt, &sleeper, WEFT_DISPATCH_REACTIVE, 0, 0);
    wt_loops_start(1);
    victim = wt_req_new(&rt, 0, 1);
    wt_req_start(victim);
    wt_on_loop(0, noop_on_loop, NULL); /* the start message ran: the sleep is pending */
    cr_assert_eq(wt_done_count(), 0, "the sleep is pending");
    cancel_reason = reason;
    wt_on_loop(0, cancel_victim_for, NULL);
    const wt_done *d = wt_wait_done(1, 5000);
    char want[96];
    snprintf(want, sizeof(want), "sleep=%d flush=%d read=%d len=0 sleep=%d", WEFT_CANCELLED, WEFT_CANCELLED,
             WEFT_CANCELLED, WEFT_CANCELLED);
    cr_assert_str_eq(d[0].body, want);
    wt_loops_stop();
}

Test(await_records, a_withdrawn_sleep_gives_back_its_record_and_every_later_wait_ends_at_once)
{
    check_withdrawn_sleep(WEFT_CANCEL_CLIENT);
}

Test(await_records, a_sleep_past_its_deadline_gives_back_its_record_and_every_later_wait_ends_at_once)
{
    check_withdrawn_sleep(WEFT_CANCEL_DEADLINE);
}

/* The lock is handed over (its grant on the way to the waiter's loop) just
 * as the waiting request is withdrawn: the wait ends with the lock when the
 * grant arrives, in the record the grant names, and the callback gives the
 * lock back. */
static void granted_late(weft_req *r, void *arg, int rc)
{
    (void)arg;
    weft_request_res_printf(r, "lock=%d cancelled=%d", rc, weft_req_cancelled(r) != 0);
    if (rc == WEFT_OK)
        weft_hostsync_mutex_unlock(r, mu);
    weft_dispatch_done(r, WEFT_OK);
}

static int waits_for_lock(weft_req *r, void *state)
{
    (void)state;
    weft_hostsync_mutex_lock_async(r, mu, granted_late, NULL);
    return WEFT_AGAIN;
}

static const weft_plugin late_locker = {WEFT_PLUGIN_HEADER, .name = "late_locker", .handle_async = waits_for_lock};

static weft_req *holder;
static void hand_over_and_withdraw(void *arg)
{
    (void)arg;
    weft_hostsync_mutex_unlock(holder, mu); /* the grant: a message this loop reads once this returns */
    weft_dispatch_cancel(victim, WEFT_CANCEL_CLIENT);
}

Test(await_records, a_lock_granted_as_its_waiter_is_withdrawn_is_held_then_given_back)
{
    mu = weft_hostsync_mutex_new();
    holder = weft_req_new();
    cr_assert_not_null(holder);
    wt_route_init(&rt, &late_locker, WEFT_DISPATCH_REACTIVE, 0, 0);
    wt_loops_start(1);
    holder->exec = WEFT_EXEC_WORKER; /* the test thread, as a pool worker */
    holder->loop = weft_loop_at(0);
    cr_assert_eq(weft_hostsync_mutex_lock(holder, mu), WEFT_OK);
    victim = wt_req_new(&rt, 0, 1);
    wt_req_start(victim);
    wt_on_loop(0, noop_on_loop, NULL);
    cr_assert_eq(weft_hostsync_mutex_waiters(mu), 1, "the reactive handler waits for the lock");
    wt_on_loop(0, hand_over_and_withdraw, NULL);
    const wt_done *d = wt_wait_done(1, 5000);
    cr_assert_str_eq(d[0].body, "lock=0 cancelled=1", "the grant won: the wait ends with the lock");
    cr_assert_eq(weft_hostsync_mutex_lock(holder, mu), WEFT_OK, "and the callback gave it back");
    weft_hostsync_mutex_unlock(holder, mu);
    wt_loops_stop();
    weft_hostsync_mutex_free(mu);
    weft_req_free(holder);
}

/* ---- a streamed body, part by part: the test plays h2o's side ---- */

/* A request on a connection that is only its loop's context: its parts are
 * what the test hands write_req.cb, and its pool holds what weft leaves h2o
 * when a withdrawn request abandons its body (request/body.c's sink). */
static h2o_req_t *fake;
static weft_h2o_tcp_conn fake_conn;
static int asks;        /* proceed_req calls: the handler asked for the next part */

static void fake_proceed(h2o_req_t *req, const char *errstr)
{
    (void)req;
    (void)errstr;
    asks++;
}

typedef struct reader {
    size_t parts, arena_warm;
} reader;

static void on_part(weft_req *r, void *arg, int rc, const void *data, size_t len)
{
    reader *t = arg;
    if (rc == WEFT_OK && len > 0) {
        cr_assert_eq(*(const char *)data, 'x');
        if (++t->parts == WARM)
            t->arena_warm = weft_req_arena_bytes(r);
        weft_bodyread_req_body_read_async(r, on_part, t);
        return;
    }
    weft_request_res_printf(r, "rc=%d parts=%zu grew=%zu", rc, t->parts,
                            t->parts >= WARM ? weft_req_arena_bytes(r) - t->arena_warm : 0);
    weft_dispatch_done(r, WEFT_OK);
}

static int read_parts(weft_req *r, void *state)
{
    (void)state;
    reader *t = weft_req_alloc(r, sizeof(*t));
    cr_assert_not_null(t);
    *t = (reader){0};
    weft_bodyread_req_body_read_async(r, on_part, t);
    return WEFT_AGAIN;
}

static const weft_plugin part_reader = {WEFT_PLUGIN_HEADER, .name = "part_reader", .handle_async = read_parts};

static void release_body(weft_req *r, void *data)
{
    (void)data;
    weft_body_release(r);
}

/* As http/ does for a stream_body route: the body (nothing of it yet) is attached, then the handler starts. */
static void attach_and_start(void *arg)
{
    (void)arg;
    fake_conn = (weft_h2o_tcp_conn){.super = {.ctx = &weft_loop_current->ctx}};
    fake->conn = &fake_conn.super;
    h2o_mem_init_pool(&fake->pool);
    fake->proceed_req = fake_proceed;
    fake->entity = h2o_iovec_init("", 0);
    cr_assert_eq(weft_body_attach(victim, fake, 1 << 20, 0), 0);
    victim->on_finish = release_body;
    weft_dispatch_start(victim);
}

typedef struct parts {
    int n, end; /* end: the last one ends the body */
} parts;

/* h2o read `n` one-byte parts, each after the handler asked for it. */
static void deliver(void *arg)
{
    const parts *p = arg;
    for (int i = 1; i <= p->n; i++) {
        fake->entity = h2o_iovec_init("x", 1);
        fake->write_req.cb(fake->write_req.ctx, p->end && i == p->n);
    }
}

/* As h2o frees a request: its pool, the sink's stop timer with it. */
static void free_fake(void *arg)
{
    (void)arg;
    h2o_mem_clear_pool(&fake->pool);
}

static void stop_reader(void)
{
    wt_on_loop(0, free_fake, NULL);
    wt_loops_stop();
    free(fake);
}

static void start_reader(void)
{
    fake = calloc(1, sizeof(*fake));
    cr_assert_not_null(fake);
    wt_route_init(&rt, &part_reader, WEFT_DISPATCH_REACTIVE, 0, 0);
    wt_loops_start(1);
    victim = wt_req_new(&rt, 0, 1);
    wt_on_loop(0, attach_and_start, NULL);
}

Test(await_records, reads_of_a_streamed_body_part_by_part_reuse_one_record)
{
    enum { PARTS = 5000 };
    start_reader();
    parts p = {PARTS, 1};
    wt_on_loop(0, deliver, &p);
    const wt_done *d = wt_wait_done(1, 10000);
    char want[64];
    snprintf(want, sizeof(want), "rc=0 parts=%d grew=0", PARTS);
    cr_assert_str_eq(d[0].body, want, "%d parts, each read from the last one's callback: %s", PARTS, d[0].body);
    cr_assert_eq(asks, PARTS - 1, "the handler asked for each part after the first");
    stop_reader();
}

static void withdraw(void *arg)
{
    weft_dispatch_cancel(victim, *(int *)arg);
}

/* A read waiting for the next part is withdrawn: it ends WEFT_CANCELLED, h2o no longer names its record. */
static void check_withdrawn_read(int reason)
{
    start_reader();
    parts p = {3, 0};
    wt_on_loop(0, deliver, &p); /* three parts read; the fourth read waits */
    cr_assert_eq(wt_done_count(), 0, "the handler waits for a part");
    wt_on_loop(0, withdraw, &reason);
    const wt_done *d = wt_wait_done(1, 5000);
    char want[64];
    snprintf(want, sizeof(want), "rc=%d parts=3 grew=0", WEFT_CANCELLED);
    cr_assert_str_eq(d[0].body, want);
    stop_reader();
}

Test(await_records, a_withdrawn_body_read_gives_back_its_record) { check_withdrawn_read(WEFT_CANCEL_CLIENT); }
Test(await_records, a_body_read_past_its_deadline_gives_back_its_record) { check_withdrawn_read(WEFT_CANCEL_DEADLINE); }
