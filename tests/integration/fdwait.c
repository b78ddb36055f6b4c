/* fd_wait / fd_wait_async under each policy, with the fdwait fixture. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define ROUTE(policy)                                                                                       \
    "  { path = \"/" policy "/fdwait\"; plugin = \"fdwait\"; dispatch = \"" policy "\"; },\n"

static const char *conf = "threads = 2;\n"
                          "listen = [\"127.0.0.1:0\"];\n"
                          "pools = ( { name = \"default\"; size = 64; queue = 1000; } );\n"
                          "routes = (\n" ROUTE("pool") ROUTE("coroutine") ROUTE("reactive")
                          "  { path = \"/hello\"; plugin = \"hello\"; dispatch = \"reactive\"; }\n"
                          ");\n";

static wt_server srv;
static void start(void) { wt_start(&srv, conf); }
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(fdwait, .init = start, .fini = stop, .timeout = 180);

ParameterizedTestParameters(fdwait, each_policy)
{
    return wt_policy_params();
}

static void expect(const char *path, long status, const char *body)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0, "%s", path);
    cr_assert_eq(r.status, status, "%s: %ld %s", path, r.status, r.body);
    cr_assert(strstr(r.body, body) != NULL, "%s answered '%s', wanted '%s'", path, r.body, body);
    wt_resp_free(&r);
}

/* Readable after the thread writes, writable after it drains, a timeout
 * when nobody does either; and many at once. */
ParameterizedTest(wt_policy *p, fdwait, each_policy)
{
    char path[128];
    snprintf(path, sizeof(path), "/%s/fdwait?ms=50", p->name);
    expect(path, 200, "read ping");
    snprintf(path, sizeof(path), "/%s/fdwait?ms=0", p->name);
    expect(path, 200, "read ping");
    snprintf(path, sizeof(path), "/%s/fdwait?ms=50&mode=write", p->name);
    expect(path, 200, "writable");
    snprintf(path, sizeof(path), "/%s/fdwait?ms=-1&timeout=100", p->name);
    expect(path, 504, "timeout");

    enum { N = 200 };
    long st[N];
    char *bodies[N];
    snprintf(path, sizeof(path), "/%s/fdwait?ms=100", p->name);
    wt_http_many(&srv, path, N, st, bodies);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(st[i], 200, "%s #%d: %ld %s", path, i, st[i], bodies[i]);
        cr_assert(strstr(bodies[i], "read ping") != NULL, "%s #%d: %s", path, i, bodies[i]);
        free(bodies[i]);
    }
    wt_wait_metric_eq(&srv, "weft_fd_waits", 0, 10000);
    wt_finish(&srv);
}

/* A zero timeout polls once and never parks. */
Test(fdwait, zero_timeout_polls_once)
{
    expect("/coroutine/fdwait?ms=-1&timeout=0", 504, "timeout");
    expect("/hello", 200, "");
    wt_finish(&srv);
}

typedef struct batch {
    const char *path;
    int n;
    long *st;
    char **bodies;
} batch;

static void *run_batch(void *arg)
{
    batch *b = arg;
    wt_http_many(&srv, b->path, b->n, b->st, b->bodies);
    return NULL;
}

/* 1,000 waits parked on the loops (half coroutines, half reactive
 * callbacks): the loops still answer other requests, and every wait wakes
 * when its gate opens. Decided on the server's own gauges, not on timing. */
Test(fdwait, loops_stay_responsive_with_1000_waits_parked)
{
    enum { N = 500 };
    static long st[2][N];
    static char *bodies[2][N];
    batch b[2] = {{"/coroutine/fdwait?gate=1&timeout=120000", N, st[0], bodies[0]},
                  {"/reactive/fdwait?gate=1&timeout=120000", N, st[1], bodies[1]}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, run_batch, &b[i]);
    wt_wait_metric(&srv, "weft_fd_waits", 2 * N, 60000);

    for (int i = 0; i < 20; i++)
        expect("/hello", 200, "");
    cr_assert_eq(wt_metric(&srv, "weft_fd_waits"), 2 * N, "a wait ended before its gate opened");

    expect("/coroutine/fdwait?release=1", 200, "released");
    expect("/reactive/fdwait?release=1", 200, "released");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < N; i++) {
            cr_assert_eq(st[k][i], 200, "%s #%d: %ld %s", b[k].path, i, st[k][i], bodies[k][i]);
            cr_assert(strstr(bodies[k][i], "gate open") != NULL, "%s", bodies[k][i]);
            free(bodies[k][i]);
        }
    wt_wait_metric_eq(&srv, "weft_fd_waits", 0, 10000);
    wt_finish(&srv);
}

/* A client that leaves while its handler waits on a descriptor nobody
 * writes: the wait ends at once (the parked-waits gauge falls back to 0) and
 * the request counts as cancelled, under each policy. */
ParameterizedTestParameters(fdwait, a_client_that_leaves_ends_the_wait)
{
    return wt_policy_params();
}

ParameterizedTest(wt_policy *p, fdwait, a_client_that_leaves_ends_the_wait)
{
    char path[128], key[256];
    snprintf(path, sizeof(path), "/%s/fdwait?ms=-1&timeout=120000", p->name);
    snprintf(key, sizeof(key), "weft_requests_cancelled_total{route=\"/%s/fdwait\",policy=\"%s\"}", p->name, p->name);
    enum { N = 20 };
    int fds[N];
    for (int i = 0; i < N; i++)
        fds[i] = wt_send_get(&srv, path);
    wt_wait_metric(&srv, "weft_fd_waits", N, 30000);
    for (int i = 0; i < N; i++)
        close(fds[i]);
    double ms = wt_await_metric(&srv, "weft_fd_waits", 0, 0, 10000);
    wt_await_metric(&srv, key, 1, N, 10000);
    printf("fdwait: %d %s waits ended %.0f ms after their clients left (timeout 120 s)\n", N, p->name, ms);
    expect("/hello", 200, "");
    wt_finish(&srv);
}
