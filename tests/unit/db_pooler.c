/*
 * database.pooler without a PostgreSQL (libpq is support/fakepq.h's
 * double): what db/ sends through a connection pooler, on the loops'
 * pipelined connections, the transaction sessions and the pool workers'
 * blocking connections (docs/DATABASE.md, "Through a connection pooler").
 *
 *   none         the statement timeout is a startup option; statements are
 *                named and prepared once per connection;
 *   session      no startup option (PgBouncer refuses it): each new session
 *                runs SET statement_timeout first;
 *   transaction  no startup option, no named statement (the pooler hands
 *                each transaction to any server connection): unnamed
 *                statements, still pipelined, each a transaction with the
 *                timeout's SELECT set_config(...) under its own Sync,
 *                ahead of it, or right behind BEGIN; prepared = true keeps
 *                named ones (PgBouncer >= 1.21, max_prepared_statements).
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "config/config.h"
#include "dbunit.h"
#include "dispatch/dispatch.h"
#include "fakepq.h"
#include "unitloop.h"

TestSuite(db_pooler, .fini = wt_db_stop, .timeout = 60);

enum { N = 3 };

/* N statements one after the other under `policy`, each answered with its own row. */
static void run_statements(int policy, int pool_connections)
{
    wt_db_start(policy, pool_connections, 1);
    wt_pq_auto(1);
    static const char *const params[N] = {"one", "two", "three"};
    for (int i = 0; i < N; i++) {
        wt_db_req(i + 1, params[i], 1);
        const wt_done *d = wt_wait_done(i + 1, 5000);
        wt_db_expect(&d[i], WEFT_OK, params[i]);
    }
}

Test(db_pooler, direct_connections_take_the_timeout_as_a_startup_option)
{
    run_statements(WEFT_DISPATCH_COROUTINE, 0);
    cr_assert_eq(wt_pq_count(WT_PQ_OPTIONS), 1, "the one connection was opened with `options`");
    cr_assert_eq(wt_pq_count(WT_PQ_PREPARED), 1, "named, prepared once");
    cr_assert_str_eq(wt_pq_written_sql(), "SELECT SELECT SELECT");
}

static void check_session(int policy, int pool_connections)
{
    wt_db_pooler(WEFT_POOLER_SESSION, 0);
    run_statements(policy, pool_connections);
    cr_assert_eq(wt_pq_count(WT_PQ_OPTIONS), 0, "a pooler refuses the `options` startup parameter");
    cr_assert_eq(wt_pq_count(WT_PQ_PREPARED), 1, "a session pooler keeps named statements");
    cr_assert_str_eq(wt_pq_written_sql(), "SET SELECT SELECT SELECT", "SET statement_timeout first");
    cr_assert_eq(wt_pq_count(WT_PQ_CONNECTS), 1);
}

Test(db_pooler, a_session_pooler_gets_set_statement_timeout_first_coroutine)
{
    check_session(WEFT_DISPATCH_COROUTINE, 0);
}

Test(db_pooler, a_session_pooler_gets_set_statement_timeout_first_pool_connections)
{
    check_session(WEFT_DISPATCH_POOL, 2);
}

static void check_transaction(int policy, int pool_connections)
{
    wt_db_pooler(WEFT_POOLER_TRANSACTION, 1);
    run_statements(policy, pool_connections);
    cr_assert_eq(wt_pq_count(WT_PQ_OPTIONS), 0, "a pooler refuses the `options` startup parameter");
    cr_assert_eq(wt_pq_count(WT_PQ_PREPARED), 0, "no named statement behind a transaction pooler");
    cr_assert_eq(wt_pq_count(WT_PQ_UNNAMED), 2 * N, "each statement unnamed, with its timeout's");
    /* Each statement is [set_config, the statement] under one Sync. */
    cr_assert_str_eq(wt_pq_written_sql(), "SELECT SELECT SELECT SELECT SELECT SELECT");
    cr_assert_eq(wt_pq_count(WT_PQ_CONNECTS), 1);
}

Test(db_pooler, a_transaction_pooler_gets_unnamed_timed_statements_coroutine)
{
    check_transaction(WEFT_DISPATCH_COROUTINE, 0);
}

Test(db_pooler, a_transaction_pooler_gets_unnamed_timed_statements_reactive)
{
    check_transaction(WEFT_DISPATCH_REACTIVE, 0);
}

Test(db_pooler, a_transaction_pooler_gets_unnamed_timed_statements_pool_workers)
{
    check_transaction(WEFT_DISPATCH_POOL, 0);
}

Test(db_pooler, a_transaction_pooler_gets_unnamed_timed_statements_blocking_connections)
{
    check_transaction(WEFT_DISPATCH_POOL, 2);
}

/* Still pipelined: several requests' statements are written before any answer. */
Test(db_pooler, unnamed_statements_are_still_pipelined)
{
    wt_db_pooler(WEFT_POOLER_TRANSACTION, 1);
    wt_db_start(WEFT_DISPATCH_COROUTINE, 0, 1);
    static const char *const params[N] = {"one", "two", "three"};
    weft_req *rs[N];
    for (int i = 0; i < N; i++)
        rs[i] = wt_db_req(i + 1, params[i], 0);
    wt_db_start_together(rs, N);
    wt_pq_wait_count(WT_PQ_WRITTEN, 2 * N, 5000);
    cr_assert_eq(wt_pq_count(WT_PQ_WRITES), 1, "one write for all of them (libpq 17)");
    cr_assert_eq(wt_done_count(), 0, "none answered yet");
    wt_pq_answer(2 * N);
    const wt_done *d = wt_wait_done(N, 5000);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(d[i].id, i + 1, "in order");
        wt_db_expect(&d[i], WEFT_OK, params[i]);
    }
}

/* A transaction's timeout rides behind its BEGIN (an isolation level must
 * come first); its statements and COMMIT carry none: one server connection
 * holds the whole transaction. */
static void check_transaction_block(int policy)
{
    wt_db_pooler(WEFT_POOLER_TRANSACTION, 1);
    wt_db_transactions(1);
    wt_db_start(policy, 0, 1);
    wt_pq_auto(1);
    wt_db_req(1, "x", 1);
    const wt_done *d = wt_wait_done(1, 5000);
    char want[96];
    snprintf(want, sizeof(want), "begin=0 rc=0 value=x commit=0");
    cr_assert_str_eq(d[0].body, want);
    cr_assert_str_eq(wt_pq_written_sql(), "BEGIN SELECT SELECT COMMIT");
    cr_assert_eq(wt_pq_count(WT_PQ_OPTIONS), 0);
    cr_assert_eq(wt_pq_count(WT_PQ_PREPARED), 0);
}

Test(db_pooler, a_transaction_has_its_timeout_behind_begin_coroutine)
{
    check_transaction_block(WEFT_DISPATCH_COROUTINE);
}

Test(db_pooler, a_transaction_has_its_timeout_behind_begin_reactive)
{
    check_transaction_block(WEFT_DISPATCH_REACTIVE);
}

Test(db_pooler, a_transaction_has_its_timeout_behind_begin_pool)
{
    check_transaction_block(WEFT_DISPATCH_POOL);
}

/* prepared = true behind a transaction pooler that tracks them (PgBouncer >= 1.21). */
Test(db_pooler, a_transaction_pooler_keeps_named_statements_when_told)
{
    wt_db_pooler(WEFT_POOLER_TRANSACTION, 0);
    run_statements(WEFT_DISPATCH_COROUTINE, 0);
    cr_assert_eq(wt_pq_count(WT_PQ_UNNAMED), 0);
    cr_assert_eq(wt_pq_count(WT_PQ_PREPARED), 2, "the statement and the timeout's, each prepared once");
    cr_assert_eq(wt_pq_count(WT_PQ_OPTIONS), 0);
}
