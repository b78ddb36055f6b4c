/* The three dispatch policies, with the cpu, delay and locked plugins. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static const char *conf = "threads = 2;\n"
                          WT_LISTEN "\n"
                          "pools = ( { name = \"default\"; size = 16; queue = 1000; },\n"
                          "          { name = \"four\"; size = 4; queue = 100; },\n"
                          "          { name = \"tiny\"; size = 1; queue = 0; } );\n"
                          "routes = (\n"
                          WT_EACH_POLICY("/cpu", "cpu", " options = { bits = 256; };") ",\n"
                          WT_EACH_POLICY("/delay", "delay", " options = { ms = 200; };") ",\n"
                          WT_EACH_POLICY("/locked", "locked", " options = { workers = 2; hold_ms = 20; };") ",\n"
                          "  { path = \"/four/delay\"; plugin = \"delay\"; dispatch = \"pool\"; pool = \"four\"; options = { ms = 200; }; },\n"
                          "  { path = \"/tiny/delay\"; plugin = \"delay\"; dispatch = \"pool\"; pool = \"tiny\"; options = { ms = 500; }; },\n"
                          "  { path = \"/pool/block\"; plugin = \"blocker\"; dispatch = \"pool\"; options = { ms = 60; }; },\n"
                          "  { path = \"/coroutine/block\"; plugin = \"blocker\"; dispatch = \"coroutine\"; options = { ms = 60; }; }\n"
                          ");\n";

static wt_server srv;
static void start(void) { wt_start(&srv, conf); }
/* Every suite ends with a clean exit: ASan/LSan findings in the server,
 * including leaks at shutdown, turn into a non-zero status here. */
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(policies, .init = start, .fini = stop, .timeout = 120);

/* Criterion may run each test in a re-executed process: parameters must be
 * plain data, not pointers into this one. */
typedef struct route_param {
    char path[32];
} route_param;

ParameterizedTestParameters(policies, each_policy_answers_each_plugin)
{
    static route_param paths[] = {{"/pool/cpu"},   {"/coroutine/cpu"},   {"/reactive/cpu"},
                                  {"/pool/delay"}, {"/coroutine/delay"}, {"/reactive/delay"},
                                  {"/pool/locked"}, {"/coroutine/locked"}, {"/reactive/locked"}};
    return cr_make_param_array(route_param, paths, sizeof(paths) / sizeof(paths[0]));
}

ParameterizedTest(route_param *param, policies, each_policy_answers_each_plugin)
{
    const char *const *path = (const char *const[]){param->path};
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", *path, NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s: %ld %s", *path, r.status, r.body);
    const char *want = strstr(*path, "cpu") ? "Hello_" : "Ping_";
    cr_assert(strncmp(r.body, want, strlen(want)) == 0, "%s answered '%s'", *path, r.body);
    cr_assert(atol(r.body + strlen(want)) >= 1, "counter in '%s'", r.body);
    wt_resp_free(&r);
    wt_finish(&srv);
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Counters are global atomics in the plugin: concurrent requests on both
 * loops and on workers must never see the same number. */
static void assert_unique_counters(const char *path, int n)
{
    long *st = calloc((size_t)n, sizeof(long));
    char **bodies = calloc((size_t)n, sizeof(char *));
    wt_http_many(&srv, path, n, st, bodies);
    long *nums = calloc((size_t)n, sizeof(long));
    for (int i = 0; i < n; i++) {
        cr_assert_eq(st[i], 200, "%s #%d: %ld %s", path, i, st[i], bodies[i]);
        const char *u = strchr(bodies[i], '_');
        cr_assert_not_null(u, "%s", bodies[i]);
        nums[i] = atol(u + 1);
        free(bodies[i]);
    }
    qsort(nums, (size_t)n, sizeof(long), cmp_long);
    for (int i = 1; i < n; i++)
        cr_assert_neq(nums[i], nums[i - 1], "%s: counter %ld repeated", path, nums[i]);
    free(nums);
    free(bodies);
    free(st);
}

Test(policies, counters_never_repeat)
{
    assert_unique_counters("/coroutine/delay", 60);
    assert_unique_counters("/pool/cpu", 40);
    assert_unique_counters("/reactive/delay", 60);
    wt_finish(&srv);
}

Test(policies, coroutines_serve_100_delays_on_loop_threads_only)
{
    int before = wt_thread_count(srv.pid);
    long st[100];
    double ms = wt_http_many(&srv, "/coroutine/delay", 100, st, NULL);
    int after = wt_thread_count(srv.pid);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(st[i], 200, "request %d: %ld", i, st[i]);
    /* 100 x 200 ms one after another would take 20 s. */
    cr_assert_lt(ms, 5000.0, "100 concurrent 200 ms coroutine delays took %.0f ms", ms);
    cr_assert_eq(before, after, "coroutines must not add threads (%d -> %d)", before, after);
    wt_finish(&srv);
}

Test(policies, pool_of_4_serves_16_delays_in_4_rounds)
{
    long st[16];
    double ms = wt_http_many(&srv, "/four/delay", 16, st, NULL);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(st[i], 200);
    /* 4 threads x 200 ms: no fewer than 4 rounds. */
    cr_assert_geq(ms, 790.0, "16 delays on 4 threads finished in %.0f ms: pool bound not respected", ms);
    wt_finish(&srv);
}

/* Until it is taken: the only worker counts as busy a moment after its last
 * answer went out (it posts the completion, then returns to the pool), and a
 * request in that moment gets 503 from a pool with no queue. Under load that
 * moment is long enough to lose the hold, and the test waited in vain. */
static void *hold_tiny(void *arg)
{
    for (int i = 0; i < 200; i++) {
        wt_resp r;
        int taken = wt_http(&srv, "GET", "/tiny/delay", NULL, &r) == 0 && r.status != 503;
        wt_resp_free(&r);
        if (taken)
            break;
    }
    return arg;
}

Test(policies, full_queue_gives_503_with_retry_after)
{
    long st[6];
    wt_http_many(&srv, "/tiny/delay", 6, st, NULL);
    int ok = 0, busy = 0;
    for (int i = 0; i < 6; i++) {
        ok += st[i] == 200;
        busy += st[i] == 503;
    }
    cr_assert_geq(ok, 1);
    cr_assert_geq(busy, 1, "a 1-thread pool with queue 0 must refuse concurrent work");
    cr_assert_eq(ok + busy, 6);
    /* The 503 carries Retry-After: probe while the only worker is busy. */
    pthread_t t;
    pthread_create(&t, NULL, hold_tiny, NULL);
    wt_wait_metric(&srv, "weft_inflight_requests", 1, 10000);
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/tiny/delay", NULL, &r), 0);
    cr_assert_eq(r.status, 503);
    char v[32];
    cr_assert_not_null(wt_header(&r, "retry-after", v, sizeof(v)));
    wt_resp_free(&r);
    pthread_join(t, NULL);
    wt_finish(&srv);
}

Test(policies, lock_never_has_two_holders)
{
    for (int round = 0; round < 3; round++) {
        long st[40];
        char *bodies[40];
        wt_http_many(&srv, round == 0 ? "/pool/locked" : round == 1 ? "/coroutine/locked" : "/reactive/locked", 40,
                     st, bodies);
        for (int i = 0; i < 40; i++) {
            cr_assert_eq(st[i], 200, "round %d #%d: %ld %s", round, i, st[i], bodies[i]);
            free(bodies[i]);
        }
    }
    wt_finish(&srv);
}

typedef struct client {
    const wt_server *s;
    int index;
} client;

static void *fifo_client(void *arg)
{
    client *c = arg;
    char path[48];
    snprintf(path, sizeof(path), "/fifo/locked?client=%d", c->index);
    wt_resp r;
    wt_http(c->s, "GET", path, NULL, &r);
    cr_assert_eq(r.status, 200, "client %d: %ld %s", c->index, r.status, r.body);
    wt_resp_free(&r);
    return NULL;
}

/* One worker object held 300 ms per request. Each client is sent only once
 * the server reports the one before it dispatched: on the single loop thread
 * a coroutine runs from dispatch to its lock wait without yielding, so the
 * waiters queue in a known order, whatever the machine's load. They must be
 * answered in that order (a LIFO wait queue would reverse them); the order is
 * read from the server's own access log, written by that one thread as each
 * answer completes, 300 ms apart. */
Test(policies, lock_waiters_are_served_fifo)
{
    enum { N = 8 };
    wt_server s = {0};
    wt_startf(&s,
              "threads = 1; " WT_LISTEN " admin = false;\n"
              "log = { access_log = \"%s/access.log\"; };\n"
              "routes = ({ path = \"/fifo/locked\"; plugin = \"locked\"; dispatch = \"coroutine\";"
              " options = { workers = 1; hold_ms = 300; }; });\n",
              s.dir);
    client c[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        c[i] = (client){&s, i};
        pthread_create(&t[i], NULL, fifo_client, &c[i]);
        wt_wait_dispatched(&s, "weft_requests_total{route=\"/fifo/locked\",policy=\"coroutine\",code=\"2xx\"}", i + 1,
                           10000);
    }
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    int status = wt_stop(&s); /* flushes the access log */
    char path[400];
    snprintf(path, sizeof(path), "%s/access.log", s.dir);
    char *log = wt_read_file(path);
    cr_assert_not_null(log, "no access log at %s", path);
    const char *at = log;
    for (int i = 0; i < N; i++) {
        char want[48];
        snprintf(want, sizeof(want), "/fifo/locked?client=%d ", i);
        const char *p = strstr(log, want);
        cr_assert_not_null(p, "client %d not in the access log:\n%s", i, log);
        cr_assert_geq(p, at, "client %d was answered before client %d:\n%s", i, i - 1, log);
        at = p;
    }
    free(log);
    cr_assert_eq(status, 0, "weft exited with %d", status);
}

Test(policies, blocking_a_loop_thread_is_reported)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/pool/block", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    wt_resp_free(&r);
    char *log = wt_read_log(&srv);
    cr_assert_null(strstr(log, "blocked its event-loop thread"), "pool workers may block: %s", log);
    free(log);
    cr_assert_eq(wt_http(&srv, "GET", "/coroutine/block", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    wt_resp_free(&r);
    log = wt_read_log(&srv);
    const char *line = strstr(log, "route /coroutine/block (plugin blocker");
    cr_assert_not_null(line, "%s", log);
    cr_assert(strstr(line, "blocked its event-loop thread") != NULL, "%s", log);
    cr_assert(strstr(line, "dispatch=coroutine") != NULL, "%s", log);
    free(log);
    wt_finish(&srv);
}

Test(overflow, coroutine_stack_overflow_names_route, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1; " WT_LISTEN "\n"
                 "coroutine = { stack_size = 16384; };\n"
                 "routes = ({ path = \"/coroutine/deep\"; plugin = \"deep\"; dispatch = \"coroutine\"; });\n");
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/coroutine/deep?depth=4", NULL, &r), 0);
    cr_assert_eq(r.status, 200, "shallow recursion fits");
    wt_resp_free(&r);
    wt_http(&s, "GET", "/coroutine/deep?depth=100000", NULL, &r);
    wt_resp_free(&r);
    int status = wt_stop(&s);
    char *log = wt_read_log(&s);
    cr_assert(strstr(log, "coroutine stack overflow in route /coroutine/deep") != NULL, "%s", log);
    cr_assert_neq(status, 0);
    free(log);
    wt_finish(&srv);
}

/* ---- coroutine stacks: kept while a burst lasts, given back after it ---- */

static wt_server burst;
static void burst_stop(void) { wt_suite_stop(&burst); }
TestSuite(coro_stacks, .fini = burst_stop, .timeout = 120);

enum { BURST = 600 };
static long burst_status[BURST];
static void *burst_client(void *arg)
{
    (void)arg;
    wt_http_many(&burst, "/d", BURST, burst_status, NULL);
    return NULL;
}

Test(coro_stacks, a_bursts_stacks_go_back_on_the_loops_tick)
{
    /* Each request must still be in flight when the 400th arrives: on a
     * loaded 2-core machine (a TSan server, builds beside it) 600 connects
     * and dispatches took longer than 1.5 s, the gauge never passed 400 and
     * the burst ended first. */
    int ms = getenv("WEFT_TEST_SANITIZER") != NULL ? 10000 : 4000;
    wt_startf(&burst, "threads = 1;\n" WT_LISTEN "\n"
                      "routes = ( { path = \"/d\"; plugin = \"delay\"; dispatch = \"coroutine\"; options = { ms = %d; }; } );\n",
              ms);
    wt_resp r;
    cr_assert_eq(wt_http(&burst, "GET", "/d", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    wt_resp_free(&r);
    double one = wt_metric(&burst, "weft_coroutine_stack_bytes"); /* one stack, cached */
    cr_assert_gt(one, 0);
    pthread_t t;
    pthread_create(&t, NULL, burst_client, NULL);
    /* Well past the 256 stacks a loop always keeps (dispatch.c). */
    wt_wait_metric(&burst, "weft_coroutines_live", 400, 30000);
    pthread_join(t, NULL);
    for (int i = 0; i < BURST; i++)
        cr_assert_eq(burst_status[i], 200, "request %d: %ld", i, burst_status[i]);
    /* Nothing runs now: the loop's tick lowers the high-water mark and unmaps the rest. */
    wt_wait_metric_eq(&burst, "weft_coroutine_stack_bytes", 256 * one, 30000);
    wt_finish(&burst);
}
