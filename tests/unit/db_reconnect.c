/*
 * Tests for server/db/'s behaviour when the database goes away (db_loop.c's
 * conn_broken and reconnect with backoff, db_pool.c's mark_down), without a
 * PostgreSQL: libpq is the double of support/fakepq.h on a real loop
 * (support/dbunit.h). As docs/DATABASE.md and db.h say: the server closing
 * a connection fails the statements in flight on it with WEFT_UNAVAILABLE
 * (503), and the connection comes back by itself for later requests; a
 * database that refuses connections answers WEFT_UNAVAILABLE at once
 * (never a wait, never a blocking call on the loop) until it is back; a
 * connection whose statement gets no answer at all (not even the server's
 * statement_timeout) is reset 1 s past statement_timeout_ms: the statement
 * answers WEFT_TIMEOUT and a new connection serves the next one.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dbunit.h"
#include "dispatch/dispatch.h"
#include "fakepq.h"
#include "harness.h"
#include "unitloop.h"

TestSuite(db_reconnect, .fini = wt_db_stop, .timeout = 60);

/* After the loop's connection failed: it reconnects by itself (after its backoff) and request `id` gets its row. */
static void reconnected_serves(int id, const char *value)
{
    wt_pq_wait_count(WT_PQ_CONNECTS, 2, 5000);
    wt_pq_auto(1);
    wt_db_req(id, value, 1);
    const wt_done *d = wt_wait_done(id, 5000);
    wt_db_expect(&d[id - 1], WEFT_OK, value);
    cr_assert_eq(wt_pq_count(WT_PQ_OPEN), 1, "the broken connection was closed");
}

/* Two statements in flight on the loop's connection when the server drops it. */
static void check_dropped(int policy)
{
    wt_db_start(policy, 0, 1);
    wt_db_req(1, "a", 1);
    wt_db_req(2, "b", 1);
    wt_pq_wait_count(WT_PQ_WRITTEN, 2, 5000);
    wt_pq_drop();
    const wt_done *d = wt_wait_done(2, 5000);
    wt_db_expect(&d[0], WEFT_UNAVAILABLE, NULL);
    wt_db_expect(&d[1], WEFT_UNAVAILABLE, NULL);
    reconnected_serves(3, "c");
    wt_db_stop();
}

Test(db_reconnect, a_dropped_loop_connection_fails_its_coroutine_statements_then_comes_back)
{
    check_dropped(WEFT_DISPATCH_COROUTINE);
}

Test(db_reconnect, a_dropped_loop_connection_fails_its_reactive_statements_then_comes_back)
{
    check_dropped(WEFT_DISPATCH_REACTIVE);
}

/* The database refuses connections: 503 at once, from the loop, without blocking it; then it is back. */
static void check_down(int policy)
{
    wt_db_start(policy, 0, 1);
    wt_pq_refuse(1); /* the loop's connection opens with the first statement */
    double t0 = wt_now_ms();
    wt_db_req(1, "a", 1);
    const wt_done *d = wt_wait_done(1, 5000);
    double took = wt_now_ms() - t0;
    wt_db_expect(&d[0], WEFT_UNAVAILABLE, NULL);
    cr_assert_lt(took, 2000, "answered at once, not after a connect timeout (%.0f ms)", took);
    cr_assert_geq(wt_pq_count(WT_PQ_ATTEMPTS), 1, "a connection was tried");
    cr_assert_eq(wt_pq_count(WT_PQ_BLOCKING_ON_LOOP), 0, "without a blocking connect on the loop");
    wt_pq_refuse(0);
    wt_pq_wait_count(WT_PQ_CONNECTS, 1, 10000); /* the retry timer reconnects by itself */
    wt_pq_auto(1);
    wt_db_req(2, "b", 1);
    d = wt_wait_done(2, 5000);
    wt_db_expect(&d[1], WEFT_OK, "b");
    wt_db_stop();
}

Test(db_reconnect, database_down_answers_a_coroutine_at_once_until_it_is_back) { check_down(WEFT_DISPATCH_COROUTINE); }

Test(db_reconnect, database_down_answers_a_reactive_handler_at_once_until_it_is_back)
{
    check_down(WEFT_DISPATCH_REACTIVE);
}

/* A worker's blocking connection dropped mid-statement: 503, the connection is closed, a later one is opened. */
Test(db_reconnect, a_dropped_pool_connection_fails_its_statement_and_a_new_one_is_opened)
{
    wt_db_start(WEFT_DISPATCH_POOL, 1, 1);
    wt_db_req(1, "a", 1);
    wt_pq_wait_count(WT_PQ_WRITTEN, 1, 5000);
    wt_pq_drop();
    const wt_done *d = wt_wait_done(1, 5000);
    wt_db_expect(&d[0], WEFT_UNAVAILABLE, NULL);
    cr_assert_eq(wt_pq_count(WT_PQ_OPEN), 0, "the broken connection is closed, never lent again");
    wt_pq_auto(1);
    /* The pool fails fast for its backoff (100 ms) after the failure: ask until it has reconnected. */
    char unavailable[96];
    wt_db_format(unavailable, sizeof(unavailable), WEFT_UNAVAILABLE, NULL);
    int id = 2;
    double deadline = wt_now_ms() + 10000;
    for (;; id++) {
        wt_db_req(id, "b", 1);
        d = wt_wait_done(id, 5000);
        if (strcmp(d[id - 1].body, unavailable) != 0 || wt_now_ms() > deadline || id == 60)
            break;
        wt_db_expect(&d[id - 1], WEFT_UNAVAILABLE, NULL); /* failing fast meanwhile */
        usleep(20 * 1000); /* not a wait for the server: paces the asking within the 64 records */
    }
    wt_db_expect(&d[id - 1], WEFT_OK, "b");
    cr_assert_eq(wt_pq_count(WT_PQ_CONNECTS), 2, "a new connection");
    cr_assert_eq(wt_pq_count(WT_PQ_BLOCKING_ON_LOOP), 0, "connects happen on the worker, never on the loop");
    wt_db_stop();
}

/* The server never answers (a hung connection): the client-side backstop ends it and resets the connection. */
static void check_hung(int policy)
{
    wt_db_statement_timeout(200); /* the backstop: 1.2 s */
    wt_db_start(policy, 0, 1);
    wt_pq_auto(1);
    double t0 = wt_now_ms();
    wt_db_req(1, "hang", 1);
    const wt_done *d = wt_wait_done(1, 10000);
    double took = wt_now_ms() - t0;
    wt_db_expect(&d[0], WEFT_TIMEOUT, NULL);
    cr_assert_geq(took, 1200, "not before statement_timeout + 1 s (%.0f ms)", took);
    reconnected_serves(2, "b"); /* the hung one was closed and replaced */
    wt_db_stop();
}

Test(db_reconnect, a_hung_connection_times_out_a_coroutine_statement_and_is_reset) { check_hung(WEFT_DISPATCH_COROUTINE); }
Test(db_reconnect, a_hung_connection_times_out_a_reactive_statement_and_is_reset) { check_hung(WEFT_DISPATCH_REACTIVE); }

/* With the database down every statement fails inside the call that sends
 * it, whose callback sends the next: each record goes back to the call
 * still on the stack, and the arena stays flat. */
Test(db_reconnect, a_reactive_handler_querying_a_database_down_in_a_loop_keeps_its_arena_flat)
{
    wt_db_rounds(200);
    wt_db_start(WEFT_DISPATCH_REACTIVE, 0, 1);
    wt_pq_refuse(1);
    wt_db_req(1, "a", 1);
    const wt_done *d = wt_wait_done(1, 10000);
    char want[64];
    snprintf(want, sizeof(want), "rc=%d value=- grew=0", WEFT_UNAVAILABLE);
    cr_assert_str_eq(d[0].body, want, "200 statements refused: %s", d[0].body);
    wt_db_stop();
}
