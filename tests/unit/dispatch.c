/*
 * Tests for server/dispatch/dispatch.c: the three policies start a request
 * and complete it on the loop thread that owns it, whatever thread ran the
 * handler; a full pool answers 503 at once; a handler that blocks its loop
 * is counted against its route. Real loops (support/unitloop.h).
 */
#include "dispatch/dispatch.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <time.h>

#include "dispatch/blocking.h"
#include "dispatch/hostsync.h"
#include "harness.h"
#include "unitloop.h"

static wt_route rt;

static void teardown(void)
{
    wt_loops_stop();
    wt_route_fini(&rt);
}

TestSuite(dispatch, .fini = teardown, .timeout = 60);

static void noop(void *arg) { (void)arg; }

static pthread_t loop_thread;

static void note_loop_thread(void *arg)
{
    (void)arg;
    loop_thread = pthread_self();
}

/* ---- reactive ---- */

static int answer_at_once(weft_req *r, void *state)
{
    (void)state;
    weft_request_res_status(r, 201);
    weft_request_res_printf(r, "reactive on %d", weft_loop_current->index);
    return WEFT_OK;
}

static const weft_plugin reactive_now = {WEFT_PLUGIN_HEADER, .name = "now", .handle_async = answer_at_once};

Test(dispatch, reactive_answer_completes_on_its_loop)
{
    wt_route_init(&rt, &reactive_now, WEFT_DISPATCH_REACTIVE, 0, 0);
    wt_loops_start(2);
    wt_req_start(wt_req_new(&rt, 1, 7));
    const wt_done *d = wt_wait_done(1, 5000);
    cr_assert_eq(d[0].id, 7);
    cr_assert_eq(d[0].rc, WEFT_OK);
    cr_assert_eq(d[0].status, 201);
    cr_assert_str_eq(d[0].body, "reactive on 1", "the handler ran on the request's loop");
    cr_assert_eq(d[0].loop, 1, "completed on the owning loop");
    wt_loops_stop(); /* in the body: Criterion ignores assertions in .fini */
}

static sem_t go;
static weft_req *pending;

static void *finish_elsewhere(void *arg)
{
    (void)arg;
    sem_wait(&go);
    weft_request_res_printf(pending, "done by a thread of the plugin's own");
    weft_dispatch_done(pending, WEFT_OK);
    return NULL;
}

static int answer_later(weft_req *r, void *state)
{
    (void)state;
    pending = r;
    return WEFT_AGAIN;
}

static const weft_plugin reactive_later = {WEFT_PLUGIN_HEADER, .name = "later", .handle_async = answer_later};

Test(dispatch, done_from_a_foreign_thread_completes_on_the_owning_loop)
{
    sem_init(&go, 0, 0);
    wt_route_init(&rt, &reactive_later, WEFT_DISPATCH_REACTIVE, 0, 0);
    wt_loops_start(2);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, finish_elsewhere, NULL), 0);
    wt_req_start(wt_req_new(&rt, 1, 1));
    wt_on_loop(1, noop, NULL); /* the start message has run */
    cr_assert_eq(wt_done_count(), 0, "WEFT_AGAIN leaves the request open until done()");
    sem_post(&go);
    pthread_join(t, NULL);
    const wt_done *d = wt_wait_done(1, 5000);
    cr_assert_eq(d[0].loop, 1, "done() on another thread is carried home to loop 1");
    cr_assert_str_eq(d[0].body, "done by a thread of the plugin's own");
    sem_destroy(&go);
    wt_loops_stop(); /* in the body: Criterion ignores assertions in .fini */
}

static int done_twice(weft_req *r, void *state)
{
    (void)state;
    weft_dispatch_done(r, WEFT_OK);
    weft_dispatch_done(r, WEFT_ERROR); /* ignored, logged */
    return WEFT_AGAIN;
}

static const weft_plugin reactive_twice = {WEFT_PLUGIN_HEADER, .name = "twice", .handle_async = done_twice};

Test(dispatch, done_twice_completes_once_with_the_first_result)
{
    wt_route_init(&rt, &reactive_twice, WEFT_DISPATCH_REACTIVE, 0, 0);
    wt_loops_start(1);
    wt_req_start(wt_req_new(&rt, 0, 1));
    const wt_done *d = wt_wait_done(1, 5000);
    wt_on_loop(0, noop, NULL);
    cr_assert_eq(wt_done_count(), 1, "one request, one completion");
    cr_assert_eq(d[0].rc, WEFT_OK);
    wt_loops_stop(); /* in the body: Criterion ignores assertions in .fini */
}

/* ---- coroutine ---- */

static int sleepy(weft_req *r, void *state)
{
    (void)state;
    wt_trace("handler-start");
    cr_assert_eq(r->exec, WEFT_EXEC_COROUTINE);
    int rc = weft_hostsync_sleep_ms(r, 30);
    wt_trace(pthread_equal(pthread_self(), loop_thread) ? "handler-resumed-on-loop" : "handler-resumed-elsewhere");
    weft_request_res_printf(r, "slept");
    return rc;
}

static const weft_plugin coro_sleepy = {WEFT_PLUGIN_HEADER, .name = "sleepy", .handle = sleepy};

static void mark_loop_free(void *arg)
{
    (void)arg;
    wt_trace("loop-free");
}

Test(dispatch, coroutine_sleeps_without_holding_its_loop)
{
    wt_route_init(&rt, &coro_sleepy, WEFT_DISPATCH_COROUTINE, 0, 0);
    wt_loops_start(1);
    wt_on_loop(0, note_loop_thread, NULL);
    double t0 = wt_now_ms();
    wt_req_start(wt_req_new(&rt, 0, 1));
    wt_on_loop(0, mark_loop_free, NULL); /* runs while the coroutine sleeps */
    const wt_done *d = wt_wait_done(1, 5000);
    double took = wt_now_ms() - t0;
    cr_assert_str_eq(wt_trace_text(), "handler-start loop-free handler-resumed-on-loop");
    cr_assert_eq(d[0].rc, WEFT_OK);
    cr_assert_str_eq(d[0].body, "slept");
    cr_assert_eq(d[0].loop, 0);
    cr_assert_geq(took, 29, "a 30 ms sleep ended after %.1f ms", took);
    wt_loops_stop(); /* in the body: Criterion ignores assertions in .fini */
}

/* ---- pool ---- */

static sem_t running, release;
static pthread_t worker_thread;

static int on_worker(weft_req *r, void *state)
{
    (void)state;
    worker_thread = pthread_self();
    cr_assert_eq(r->exec, WEFT_EXEC_WORKER);
    sem_post(&running);
    sem_wait(&release);
    weft_request_res_printf(r, "pooled");
    return WEFT_OK;
}

static const weft_plugin pooled = {WEFT_PLUGIN_HEADER, .name = "pooled", .handle = on_worker};

Test(dispatch, pool_handler_runs_on_a_worker_and_completes_on_the_loop)
{
    sem_init(&running, 0, 0);
    sem_init(&release, 0, 1);
    wt_route_init(&rt, &pooled, WEFT_DISPATCH_POOL, 2, 10);
    wt_loops_start(1);
    wt_on_loop(0, note_loop_thread, NULL);
    wt_req_start(wt_req_new(&rt, 0, 1));
    const wt_done *d = wt_wait_done(1, 5000);
    cr_assert(!pthread_equal(worker_thread, loop_thread), "the handler ran off the loop");
    cr_assert_eq(d[0].loop, 0, "and the answer came back to its loop");
    cr_assert_str_eq(d[0].body, "pooled");
    wt_loops_stop(); /* in the body: Criterion ignores assertions in .fini */
}

Test(dispatch, full_pool_queue_answers_503_at_once)
{
    sem_init(&running, 0, 0);
    sem_init(&release, 0, 0);
    wt_route_init(&rt, &pooled, WEFT_DISPATCH_POOL, 1, 1); /* one worker, one waiting place */
    wt_loops_start(1);
    wt_req_start(wt_req_new(&rt, 0, 1));
    sem_wait(&running); /* request 1 holds the only worker */
    wt_req_start(wt_req_new(&rt, 0, 2)); /* waits */
    wt_req_start(wt_req_new(&rt, 0, 3)); /* no room */
    const wt_done *d = wt_wait_done(1, 5000);
    cr_assert_eq(d[0].id, 3);
    cr_assert_eq(d[0].status, 503);
    cr_assert_str_eq(d[0].retry, "1");
    cr_assert(strstr(d[0].body, "worker pool queue is full") != NULL, "%s", d[0].body);
    sem_post(&release);
    sem_post(&release);
    d = wt_wait_done(3, 5000);
    cr_assert(d[1].id == 1 && d[2].id == 2, "the queued request runs after the first: %d %d", d[1].id, d[2].id);
    for (int i = 1; i < 3; i++)
        cr_assert(d[i].status != 503 && strcmp(d[i].body, "pooled") == 0, "request %d: %d %s", d[i].id, d[i].status,
                  d[i].body);
    wt_loops_stop(); /* in the body: Criterion ignores assertions in .fini */
}

/* ---- the blocked-loop detector ---- */

static int spin(weft_req *r, void *state)
{
    (void)state;
    struct timespec ts = {0, 40 * 1000000L};
    if (strcmp(r->path, "/t") == 0 && weft_loop_current != NULL)
        nanosleep(&ts, NULL); /* a raw blocking call on the loop */
    return WEFT_OK;
}

static int quick(weft_req *r, void *state)
{
    (void)r;
    (void)state;
    return WEFT_OK;
}

static const weft_plugin reactive_quick = {WEFT_PLUGIN_HEADER, .name = "quick", .handle_async = quick};
static const weft_plugin reactive_spin = {WEFT_PLUGIN_HEADER, .name = "spin", .handle_async = spin};

Test(dispatch, a_slice_over_the_threshold_is_counted_for_its_route)
{
    weft_blocking_configure(20, 10);
    uint64_t before = weft_blocking_total();
    wt_route_init(&rt, &reactive_quick, WEFT_DISPATCH_REACTIVE, 0, 0);
    wt_loops_start(1);
    wt_req_start(wt_req_new(&rt, 0, 1));
    wt_wait_done(1, 5000);
    cr_assert_eq(atomic_load(&rt.route.blocked_total), 0, "a quick handler is not reported");
    rt.route.desc = &reactive_spin;
    wt_req_start(wt_req_new(&rt, 0, 2));
    wt_wait_done(2, 5000);
    cr_assert_eq(atomic_load(&rt.route.blocked_total), 1, "a 40 ms slice over a 20 ms threshold");
    cr_assert_eq(weft_blocking_total(), before + 1);
    wt_loops_stop(); /* in the body: Criterion ignores assertions in .fini */
}

/* ---- latency: each request's own clock reads ---- */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A CPU-bound handler: computes for 20 ms (no call into the host, nothing
 * that yields) and answers how long it held its thread, by its own clock. */
static int burn(weft_req *r, void *state)
{
    (void)state;
    uint64_t t0 = mono_ns(), t;
    volatile uint64_t work = 0;
    while ((t = mono_ns()) - t0 < 20 * 1000000u)
        for (int i = 0; i < 1000; i++)
            work += (uint64_t)i * t;
    weft_request_res_printf(r, "%llu", (unsigned long long)(t - t0));
    return WEFT_OK;
}

static const weft_plugin burner = {WEFT_PLUGIN_HEADER, .name = "burner", .handle = burn, .handle_async = burn};

/* `n` requests started back to back (their start messages run in one wake-up
 * of the loop): each one's latency covers the time its handler spent. */
static void expect_latency_covers_handler(weft_dispatch policy, int n)
{
    weft_blocking_configure(0, 10); /* 20 ms on the loop is the point here, not a finding */
    wt_route_init(&rt, &burner, policy, 2, 10);
    wt_loops_start(1);
    for (int i = 0; i < n; i++)
        wt_req_start(wt_req_new(&rt, 0, i + 1));
    const wt_done *d = wt_wait_done(n, 10000);
    for (int i = 0; i < n; i++) {
        unsigned long long spent = strtoull(d[i].body, NULL, 10);
        cr_assert_geq(spent, 20 * 1000000ull, "%s", d[i].body);
        cr_assert_geq(d[i].elapsed_ns, spent, "request %d under %s: measured %llu ns, its handler spent %llu ns",
                      d[i].id, weft_dispatch_name(policy), (unsigned long long)d[i].elapsed_ns, spent);
    }
    wt_loops_stop(); /* in the body: Criterion ignores assertions in .fini */
}

Test(dispatch, a_cpu_bound_coroutine_handler_is_measured_for_the_time_it_held_the_loop)
{
    expect_latency_covers_handler(WEFT_DISPATCH_COROUTINE, 3);
}

Test(dispatch, a_cpu_bound_reactive_handler_is_measured_for_the_time_it_held_the_loop)
{
    expect_latency_covers_handler(WEFT_DISPATCH_REACTIVE, 3);
}

Test(dispatch, a_cpu_bound_pool_handler_is_measured_for_the_time_it_held_its_worker)
{
    expect_latency_covers_handler(WEFT_DISPATCH_POOL, 3);
}
