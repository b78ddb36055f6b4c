/*
 * Tests for cancelling a request's database statement in server/db/
 * (db_host.c, db_loop.c's abandon, db_pool.c's busy hook, db_cancel.c),
 * without a PostgreSQL: libpq is the double of support/fakepq.h on a real
 * loop (support/dbunit.h), and the server holds the statement until the
 * test answers. As docs/DATABASE.md ("Cancellation") says:
 *   - a pipelined statement (coroutine, reactive, pool with
 *     pool_connections = 0) of a request whose client left or whose
 *     deadline passed answers WEFT_CANCELLED at once; nothing is sent to
 *     the server (its result, when it comes, is read and dropped) and the
 *     pipeline runs on: the next request gets its own row on the same
 *     connection;
 *   - a pool worker's statement on a blocking connection (pool_connections
 *     > 0) is cancelled on the server, from the loop with libpq 17
 *     (PQcancelStart/Poll) and from a thread of its own with libpq 15
 *     (PQcancel, never on a loop); the worker gets WEFT_CANCELLED and the
 *     connection goes back to the pool for the next request;
 *   - a worker waiting for a pool connection (every one busy) is woken at
 *     once and never gets one (weft_db_connection_waiters back to 0).
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "dbunit.h"
#include "dispatch/dispatch.h"
#include "fakepq.h"
#include "request/cancel.h"
#include "unitloop.h"

TestSuite(db_cancel, .fini = wt_db_stop, .timeout = 60);

/* Request 1's statement reaches the server, then the request is withdrawn: it answers WEFT_CANCELLED. */
static void withdraw_running(int policy, int pool_connections, int libpq17, int reason)
{
    wt_db_start(policy, pool_connections, libpq17);
    weft_req *victim = wt_db_req(1, "victim", 1);
    wt_pq_wait_count(WT_PQ_WRITTEN, 1, 5000);
    wt_db_cancel(victim, reason);
    const wt_done *d = wt_wait_done(1, 5000);
    wt_db_expect(&d[0], WEFT_CANCELLED, NULL);
}

/* The victim's statement runs; it is withdrawn; the next request on the connection is answered. */
static void check_pipelined(int policy, int reason)
{
    withdraw_running(policy, 0, 1, reason);
    cr_assert_eq(wt_pq_count(WT_PQ_ANSWERED), 0, "answered before the server did");
    cr_assert_eq(wt_pq_count(WT_PQ_CANCELS), 0, "a pipelined statement is not cancelled on the server");

    wt_db_req(2, "next", 1);
    wt_pq_wait_count(WT_PQ_WRITTEN, 2, 5000);
    wt_pq_answer(2); /* the victim's row first, then the next one's */
    const wt_done *d = wt_wait_done(2, 5000);
    wt_db_expect(&d[1], WEFT_OK, "next");
    cr_assert_eq(wt_pq_count(WT_PQ_CONNECTS), 1, "the same connection, still in step");
    wt_db_stop();
}

Test(db_cancel, a_coroutine_statement_of_a_client_gone_answers_at_once)
{
    check_pipelined(WEFT_DISPATCH_COROUTINE, WEFT_CANCEL_CLIENT);
}

Test(db_cancel, a_reactive_statement_of_a_client_gone_answers_at_once)
{
    check_pipelined(WEFT_DISPATCH_REACTIVE, WEFT_CANCEL_CLIENT);
}

Test(db_cancel, a_pool_statement_on_the_pipeline_past_its_deadline_answers_at_once)
{
    check_pipelined(WEFT_DISPATCH_POOL, WEFT_CANCEL_DEADLINE);
}

/* A worker's statement on a blocking connection is cancelled on the server; the connection is reused. */
static void check_blocking(int libpq17)
{
    withdraw_running(WEFT_DISPATCH_POOL, 1, libpq17, WEFT_CANCEL_CLIENT);
    cr_assert_eq(wt_pq_count(WT_PQ_CANCELS), 1, "the running statement was cancelled on the server");
    cr_assert_eq(wt_pq_count(WT_PQ_CANCELS_ON_LOOP), libpq17, "%s",
                 libpq17 ? "libpq 17: from the loop, without blocking" : "libpq 15: from a thread of its own");
    cr_assert_eq(wt_pq_count(WT_PQ_BLOCKING_ON_LOOP), 0, "no blocking libpq call on the loop");

    wt_pq_auto(1);
    wt_db_req(2, "next", 1);
    const wt_done *d = wt_wait_done(2, 5000);
    wt_db_expect(&d[1], WEFT_OK, "next");
    cr_assert_eq(wt_pq_count(WT_PQ_CONNECTS), 1, "the cancelled statement's connection serves the next one");
    wt_db_stop();
}

/* Every pool connection busy: a worker waiting for one is woken at once by its cancellation and never gets one. */
Test(db_cancel, a_worker_waiting_for_a_pool_connection_leaves_at_once)
{
    wt_db_start(WEFT_DISPATCH_POOL, 1, 1);
    weft_req *holder = wt_db_req(1, "hang", 1);
    wt_pq_wait_count(WT_PQ_WRITTEN, 1, 5000);
    weft_req *waiter = wt_db_req(2, "waiter", 1);
    wt_db_wait_gauge("weft_db_connection_waiters", 1, 5000);
    wt_db_cancel(waiter, WEFT_CANCEL_DEADLINE);
    const wt_done *d = wt_wait_done(1, 5000);
    cr_assert_eq(d[0].id, 2, "the waiter answers first, the holder still runs");
    wt_db_expect(&d[0], WEFT_CANCELLED, NULL);
    cr_assert_eq(wt_db_gauge("weft_db_connection_waiters"), 0);
    cr_assert_eq(wt_pq_count(WT_PQ_WRITTEN), 1, "the waiter never got a connection to send on");

    wt_db_cancel(holder, WEFT_CANCEL_CLIENT);
    d = wt_wait_done(2, 5000);
    wt_db_expect(&d[1], WEFT_CANCELLED, NULL);
    wt_pq_auto(1);
    wt_db_req(3, "next", 1);
    d = wt_wait_done(3, 5000);
    wt_db_expect(&d[2], WEFT_OK, "next");
    cr_assert_eq(wt_pq_count(WT_PQ_CONNECTS), 1);
    wt_db_stop();
}

Test(db_cancel, a_worker_statement_is_cancelled_on_the_server_from_the_loop_with_libpq17) { check_blocking(1); }

Test(db_cancel, a_worker_statement_is_cancelled_on_the_server_from_a_thread_with_libpq15) { check_blocking(0); }

/* A reactive loop of statements withdrawn while one runs: that one and
 * every later one (sent from the callbacks) answer WEFT_CANCELLED, the
 * cancelled wait's record going back before its callback. */
Test(db_cancel, a_reactive_loop_of_statements_withdrawn_ends_each_at_once_in_the_same_record)
{
    wt_db_rounds(50);
    wt_db_start(WEFT_DISPATCH_REACTIVE, 0, 1);
    weft_req *victim = wt_db_req(1, "victim", 1);
    wt_pq_wait_count(WT_PQ_WRITTEN, 1, 5000);
    wt_db_cancel(victim, WEFT_CANCEL_CLIENT);
    const wt_done *d = wt_wait_done(1, 5000);
    char want[64];
    snprintf(want, sizeof(want), "rc=%d value=- grew=0", WEFT_CANCELLED);
    cr_assert_str_eq(d[0].body, want);
    cr_assert_eq(wt_pq_count(WT_PQ_WRITTEN), 1, "nothing sent after the cancellation");
    wt_db_stop();
}
