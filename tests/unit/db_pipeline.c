/*
 * Tests for server/db/db_loop.c's pipelining (with db_host.c above it),
 * without a PostgreSQL: libpq is the double of support/fakepq.h, whose
 * server answers only when the test says, on a real loop
 * (support/dbunit.h). Several requests' statements on the loop's one
 * connection are all written before the first answer; each request gets
 * its own row, in order; a failing statement fails only its own request
 * (each has its own Sync). With libpq 17 the statements a loop pass queues
 * leave in one write (PQsendPipelineSync); with libpq 15 each is its own
 * write (PQpipelineSync flushes), still pipelined. Under coroutine and
 * reactive the statements are queued by the loop itself; pool workers
 * (pool_connections = 0) send theirs over the same pipeline.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "dbunit.h"
#include "dispatch/dispatch.h"
#include "fakepq.h"
#include "unitloop.h"

TestSuite(db_pipeline, .fini = wt_db_stop, .timeout = 60);

enum { N = 4 };

static const char *const params[N] = {"one", "two", "three", "four"};

/* N requests started in one loop pass: all written before any answer, then each gets its own row, in order. */
static void check_one_pass(int policy, int libpq17, int writes)
{
    wt_db_start(policy, 0, libpq17);
    weft_req *rs[N];
    for (int i = 0; i < N; i++)
        rs[i] = wt_db_req(i + 1, params[i], 0);
    wt_db_start_together(rs, N);
    wt_pq_wait_count(WT_PQ_WRITTEN, N, 5000);
    cr_assert_eq(wt_pq_count(WT_PQ_WRITES), writes, "%d writes for %d statements", wt_pq_count(WT_PQ_WRITES), N);
    cr_assert_eq(wt_pq_count(WT_PQ_CONNECTS), 1, "one connection carries them all");
    cr_assert_eq(wt_done_count(), 0, "no request completes before the server answers");
    wt_pq_answer(N);
    const wt_done *d = wt_wait_done(N, 5000);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(d[i].id, i + 1, "completed in statement order");
        wt_db_expect(&d[i], WEFT_OK, params[i]);
    }
    wt_db_stop();
}

Test(db_pipeline, coroutine_statements_of_one_pass_leave_in_one_write_with_libpq17)
{
    check_one_pass(WEFT_DISPATCH_COROUTINE, 1, 1);
}

Test(db_pipeline, reactive_statements_of_one_pass_leave_in_one_write_with_libpq17)
{
    check_one_pass(WEFT_DISPATCH_REACTIVE, 1, 1);
}

Test(db_pipeline, with_libpq15_each_statement_is_its_own_write_still_pipelined)
{
    check_one_pass(WEFT_DISPATCH_COROUTINE, 0, N);
}

/* Pool workers send from their own threads: the order of the statements is theirs, the rows still their own. */
Test(db_pipeline, pool_workers_share_the_loop_pipeline)
{
    wt_db_start(WEFT_DISPATCH_POOL, 0, 1);
    for (int i = 0; i < N; i++)
        wt_db_req(i + 1, params[i], 1);
    wt_pq_wait_count(WT_PQ_WRITTEN, N, 5000);
    cr_assert_eq(wt_pq_count(WT_PQ_CONNECTS), 1, "one connection carries them all");
    cr_assert_eq(wt_done_count(), 0, "no request completes before the server answers");
    wt_pq_answer(N);
    const wt_done *d = wt_wait_done(N, 5000);
    for (int i = 0; i < N; i++) {
        cr_assert(d[i].id >= 1 && d[i].id <= N);
        wt_db_expect(&d[i], WEFT_OK, params[d[i].id - 1]);
    }
    cr_assert_eq(wt_pq_count(WT_PQ_BLOCKING_ON_LOOP), 0);
    wt_db_stop();
}

/* The second statement fails: its neighbours, before and after it in the same pipeline, do not. */
static void check_failure_isolated(int policy)
{
    wt_db_start(policy, 0, 1);
    const char *ps[3] = {"before", "fail", "after"};
    weft_req *rs[3];
    for (int i = 0; i < 3; i++)
        rs[i] = wt_db_req(i + 1, ps[i], 0);
    wt_db_start_together(rs, 3);
    wt_pq_wait_count(WT_PQ_WRITTEN, 3, 5000);
    wt_pq_answer(3);
    const wt_done *d = wt_wait_done(3, 5000);
    wt_db_expect(&d[0], WEFT_OK, "before");
    wt_db_expect(&d[1], WEFT_ERROR, NULL);
    wt_db_expect(&d[2], WEFT_OK, "after");
    wt_db_stop();
}

Test(db_pipeline, a_failing_statement_fails_only_its_own_request_coroutine)
{
    check_failure_isolated(WEFT_DISPATCH_COROUTINE);
}

Test(db_pipeline, a_failing_statement_fails_only_its_own_request_reactive)
{
    check_failure_isolated(WEFT_DISPATCH_REACTIVE);
}

/* A later statement with the same SQL is not prepared again: the pipeline runs on after its first answers. */
Test(db_pipeline, the_connection_serves_request_after_request)
{
    wt_db_start(WEFT_DISPATCH_COROUTINE, 0, 1);
    wt_pq_auto(1);
    for (int i = 0; i < N; i++) {
        wt_db_req(i + 1, params[i], 1);
        const wt_done *d = wt_wait_done(i + 1, 5000);
        wt_db_expect(&d[i], WEFT_OK, params[i]);
    }
    cr_assert_eq(wt_pq_count(WT_PQ_CONNECTS), 1);
    cr_assert_eq(wt_pq_count(WT_PQ_ANSWERED), N);
    cr_assert_eq(wt_pq_count(WT_PQ_PREPARED), 1, "prepared once, by SQL text, then reused");
    wt_db_stop();
}

/* A reactive handler querying in a loop (each statement from the last one's
 * callback) reuses one wait record: its arena does not grow after the first. */
Test(db_pipeline, a_reactive_handler_querying_in_a_loop_keeps_its_arena_flat)
{
    wt_db_rounds(1000);
    wt_db_start(WEFT_DISPATCH_REACTIVE, 0, 1);
    wt_pq_auto(1);
    wt_db_req(1, "x", 1);
    const wt_done *d = wt_wait_done(1, 30000);
    cr_assert_str_eq(d[0].body, "rc=0 value=x grew=0", "1,000 statements: %s", d[0].body);
    cr_assert_eq(wt_pq_count(WT_PQ_ANSWERED), 1000);
    wt_db_stop();
}
