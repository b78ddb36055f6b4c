/*
 * Tests for server/db/db_tx.c (with db_txset.c's loop sessions, db_pool.c's
 * held connections and db_cancel.c) without a PostgreSQL: libpq is the
 * double of support/fakepq.h, which answers BEGIN, COMMIT and ROLLBACK with
 * their tags and holds a statement whose parameter is "hang" until it is
 * cancelled; the route (support/dbunit.h, wt_db_transactions) runs its
 * statement between db_begin and db_commit. As docs/DATABASE.md
 * ("Cancellation") says: a transaction commits on one session under every
 * policy; a request withdrawn while its statement runs inside a
 * transaction has that statement cancelled on the server (from the loop
 * with libpq 17, from a thread with libpq 15) and the transaction rolled
 * back (ROLLBACK queued behind it on a loop session, sent by the worker on
 * a pool connection); the statement and the commit answer WEFT_CANCELLED;
 * and the session serves the next transaction. A transaction waiting in
 * db_begin for the one transaction connection leaves the queue at once
 * when cancelled, and never begins.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "dbunit.h"
#include "dispatch/dispatch.h"
#include "fakepq.h"
#include "request/cancel.h"
#include "unitloop.h"

TestSuite(db_tx, .fini = wt_db_stop, .timeout = 60);

static void expect_tx(const wt_done *d, int begin, int rc, const char *value, int commit)
{
    char stmt[96], want[128];
    wt_db_format(stmt, sizeof(stmt), rc, value);
    snprintf(want, sizeof(want), "begin=%d %s commit=%d", begin, stmt, commit);
    cr_assert_str_eq(d->body, want, "request %d answered \"%s\", not \"%s\"", d->id, d->body, want);
}

static void check_commit(int policy)
{
    wt_db_transactions(1);
    wt_db_start(policy, 0, 1);
    wt_pq_auto(1);
    wt_db_req(1, "x", 1);
    const wt_done *d = wt_wait_done(1, 5000);
    expect_tx(&d[0], WEFT_OK, WEFT_OK, "x", WEFT_OK);
    cr_assert_str_eq(wt_pq_written_sql(), "BEGIN SELECT COMMIT");
    cr_assert_eq(wt_pq_count(WT_PQ_CONNECTS), 1, "one session for the whole transaction");
    cr_assert_eq(wt_pq_count(WT_PQ_BLOCKING_ON_LOOP), 0);
    wt_db_stop();
}

Test(db_tx, a_coroutine_transaction_commits_on_its_session) { check_commit(WEFT_DISPATCH_COROUTINE); }
Test(db_tx, a_reactive_transaction_commits_on_its_session) { check_commit(WEFT_DISPATCH_REACTIVE); }
Test(db_tx, a_worker_transaction_commits_on_its_connection) { check_commit(WEFT_DISPATCH_POOL); }

/* The victim's statement hangs inside its transaction; the request is withdrawn. */
static void check_cancel(int policy, int libpq17)
{
    wt_db_transactions(1);
    wt_db_start(policy, 0, libpq17);
    wt_pq_auto(1);
    weft_req *victim = wt_db_req(1, "hang", 1);
    wt_pq_wait_count(WT_PQ_WRITTEN, 2, 5000); /* BEGIN, then the statement, running */
    wt_db_cancel(victim, WEFT_CANCEL_CLIENT);
    const wt_done *d = wt_wait_done(1, 5000);
    expect_tx(&d[0], WEFT_OK, WEFT_CANCELLED, NULL, WEFT_CANCELLED);
    wt_pq_wait_count(WT_PQ_WRITTEN, 3, 5000);
    cr_assert_str_eq(wt_pq_written_sql(), "BEGIN SELECT ROLLBACK", "rolled back, never committed");
    cr_assert_eq(wt_pq_count(WT_PQ_CANCELS), 1, "the running statement was cancelled on the server");
    cr_assert_eq(wt_pq_count(WT_PQ_CANCELS_ON_LOOP), libpq17, "libpq 17 cancels from the loop, libpq 15 from a thread");
    cr_assert_eq(wt_pq_count(WT_PQ_BLOCKING_ON_LOOP), 0, "no blocking libpq call on the loop");

    wt_db_req(2, "next", 1);
    d = wt_wait_done(2, 5000);
    expect_tx(&d[1], WEFT_OK, WEFT_OK, "next", WEFT_OK);
    cr_assert_eq(wt_pq_count(WT_PQ_CONNECTS), 1, "the rolled-back session serves the next transaction");
    wt_db_stop();
}

Test(db_tx, a_coroutine_transaction_withdrawn_mid_statement_is_cancelled_and_rolled_back)
{
    check_cancel(WEFT_DISPATCH_COROUTINE, 1);
}

Test(db_tx, a_reactive_transaction_withdrawn_mid_statement_is_cancelled_and_rolled_back)
{
    check_cancel(WEFT_DISPATCH_REACTIVE, 1);
}

Test(db_tx, with_libpq15_the_loop_transaction_is_cancelled_from_a_thread) { check_cancel(WEFT_DISPATCH_COROUTINE, 0); }

Test(db_tx, a_worker_transaction_withdrawn_mid_statement_is_cancelled_and_rolled_back)
{
    check_cancel(WEFT_DISPATCH_POOL, 1);
}

/* The loop's (or the pool's) one transaction connection is held: a second
 * transaction waits in db_begin, and its cancellation takes it out of the
 * queue at once; it never begins. */
static void check_waiting_begin(int policy)
{
    wt_db_transactions(1);
    wt_db_start(policy, 0, 1);
    wt_pq_auto(1);
    weft_req *holder = wt_db_req(1, "hang", 1);
    wt_pq_wait_count(WT_PQ_WRITTEN, 2, 5000);
    weft_req *waiter = wt_db_req(2, "waiter", 1);
    wt_db_wait_gauge("weft_db_connection_waiters", 1, 5000);
    wt_db_cancel(waiter, WEFT_CANCEL_DEADLINE);
    const wt_done *d = wt_wait_done(1, 5000);
    cr_assert_eq(d[0].id, 2, "the waiter answers first");
    expect_tx(&d[0], WEFT_CANCELLED, WEFT_CANCELLED, NULL, WEFT_CANCELLED);
    cr_assert_eq(wt_db_gauge("weft_db_connection_waiters"), 0);
    cr_assert_str_eq(wt_pq_written_sql(), "BEGIN SELECT", "the waiter never began");

    wt_db_cancel(holder, WEFT_CANCEL_CLIENT);
    d = wt_wait_done(2, 5000);
    expect_tx(&d[1], WEFT_OK, WEFT_CANCELLED, NULL, WEFT_CANCELLED);
    wt_db_stop();
}

Test(db_tx, a_coroutine_waiting_for_a_session_leaves_the_queue_at_once) { check_waiting_begin(WEFT_DISPATCH_COROUTINE); }
Test(db_tx, a_reactive_begin_waiting_for_a_session_leaves_the_queue_at_once)
{
    check_waiting_begin(WEFT_DISPATCH_REACTIVE);
}
Test(db_tx, a_worker_waiting_for_a_transaction_connection_leaves_at_once) { check_waiting_begin(WEFT_DISPATCH_POOL); }

/* A reactive handler running transactions in a loop (begin, statement,
 * commit, each from the last one's callback) reuses its records. */
Test(db_tx, a_reactive_handler_running_transactions_in_a_loop_keeps_its_arena_flat)
{
    wt_db_transactions(1);
    wt_db_rounds(300);
    wt_db_start(WEFT_DISPATCH_REACTIVE, 0, 1);
    wt_pq_auto(1);
    wt_db_req(1, "x", 1);
    const wt_done *d = wt_wait_done(1, 30000);
    cr_assert_str_eq(d[0].body, "begin=0 rc=0 value=x commit=0 grew=0", "300 transactions: %s", d[0].body);
    cr_assert_eq(wt_pq_count(WT_PQ_CONNECTS), 1, "on one session");
    wt_db_stop();
}
