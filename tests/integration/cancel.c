/*
 * Cancellation: a request whose client is gone stops costing the server.
 * Many HTTP/1.1 clients send a slow request and hang up; the server's own
 * gauges and counters (GET /metrics) show what became of the work.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* A close that resets (RST) instead of the orderly FIN. */
static void close_reset(int fd)
{
    struct linger l = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    close(fd);
}

#define CLIENTS 2000

Test(cancel, http1_clients_that_leave_free_their_coroutines, .timeout = 120)
{
    wt_server s = {0};
    wt_startf(&s,
              "threads = 2; " WT_LISTEN " admin = false;\n"
              "log = { access_log = \"%s/access.log\"; };\n"
              "routes = ({ path = \"/coroutine/delay\"; plugin = \"delay\"; dispatch = \"coroutine\";"
              " options = { ms = 5000; }; });\n",
              s.dir);
    static int fds[CLIENTS];
    for (int i = 0; i < CLIENTS; i++)
        fds[i] = wt_send_get(&s, "/coroutine/delay");
    double t_up = wt_await_metric(&s, "weft_coroutines_live", 1, CLIENTS, 60000);
    /* Half leave with FIN, half with RST. */
    double t0 = wt_now_ms();
    for (int i = 0; i < CLIENTS; i++) {
        if (i % 2)
            close_reset(fds[i]);
        else
            close(fds[i]);
    }
    double t_closed = wt_now_ms() - t0;
    double t_freed = wt_await_metric(&s, "weft_coroutines_live", 0, 0, 4000);
    printf("cancel: %d coroutines up in %.0f ms; clients closed in %.0f ms; all coroutines freed %.0f ms later "
           "(delay 5000 ms)\n",
           CLIENTS, t_up, t_closed, t_freed);
    cr_expect_lt(t_freed, 4000, "coroutines must be freed well before their 5 s delay ends");
    wt_await_metric(&s, "weft_inflight_requests", 0, 0, 4000);
    double cancelled =
        wt_metric(&s, "weft_requests_cancelled_total{route=\"/coroutine/delay\",policy=\"coroutine\"}");
    double ok = wt_metric(&s, "weft_requests_total{route=\"/coroutine/delay\",policy=\"coroutine\",code=\"2xx\"}");
    double failed = wt_metric(&s, "weft_requests_total{route=\"/coroutine/delay\",policy=\"coroutine\",code=\"5xx\"}");
    cr_expect_eq(cancelled, CLIENTS, "cancelled %g of %d", cancelled, CLIENTS);
    cr_expect_eq(ok, 0, "withdrawn requests must not count as answered");
    cr_expect_eq(failed, 0);
    /* The server still answers, and the access log says 499 as nginx does. */
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/metrics", NULL, &r), 0);
    cr_expect_eq(r.status, 200);
    wt_resp_free(&r);
    wt_suite_stop(&s);
    char path[400];
    snprintf(path, sizeof(path), "%s/access.log", s.dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no access log at %s", path);
    char line[1024];
    int n499 = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        n499 += strstr(line, "/coroutine/delay HTTP/1.1\" 499 ") != NULL;
    fclose(f);
    cr_expect_eq(n499, CLIENTS, "access log lines with 499: %d", n499);
    wt_finish(&s);
}

Test(cancel, abandoned_pool_requests_do_almost_none_of_their_work, .timeout = 180)
{
    wt_server s = {0};
    wt_start(&s, "threads = 2; " WT_LISTEN " admin = false;\n"
                 "pools = ({ name = \"default\"; size = 2; queue = 5000; });\n"
                 "routes = ({ path = \"/pool/cpu\"; plugin = \"cpu\"; dispatch = \"pool\";"
                 " options = { bits = 2048; }; });\n");
    const char *ok_key = "weft_requests_total{route=\"/pool/cpu\",policy=\"pool\",code=\"2xx\"}";
    static int fds[CLIENTS];
    for (int i = 0; i < CLIENTS; i++)
        fds[i] = wt_send_get(&s, "/pool/cpu");
    /* Every request dispatched (queued, running or, for a few, done). */
    wt_wait_dispatched(&s, ok_key, CLIENTS, 60000);
    double answered_before = wt_metric(&s, ok_key);
    for (int i = 0; i < CLIENTS; i++)
        close(fds[i]);
    double t_drained = wt_await_metric(&s, "weft_inflight_requests", 0, 0, 30000);
    double answered = wt_metric(&s, ok_key);
    double cancelled = wt_metric(&s, "weft_requests_cancelled_total{route=\"/pool/cpu\",policy=\"pool\"}");
    double withdrawn = wt_metric(&s, "weft_pool_withdrawn_total{pool=\"default\"}");
    printf("cancel: %d abandoned pool requests: %g answered before the clients left, %g after; %g cancelled, "
           "%g never ran; drained in %.0f ms\n",
           CLIENTS, answered_before, answered - answered_before, cancelled, withdrawn, t_drained);
    /* The work counter: answers are drawn after the work, so `answered`
     * counts primes found. At most the two running jobs may still finish. */
    cr_expect_leq(answered - answered_before, 2, "abandoned requests kept working");
    cr_expect_eq(cancelled + answered, CLIENTS);
    /* A few are taken by a worker between the disconnect and the cancellation: skipped, not run. */
    cr_expect_geq(withdrawn, CLIENTS - 100, "queued jobs must be dropped unrun");
    wt_suite_stop(&s);
    wt_finish(&s);
}

typedef struct route_param {
    char path[32];
    char plugin[16];
    char dispatch[16];
} route_param;

ParameterizedTestParameters(cancel, waits_end_when_the_client_leaves)
{
    static route_param p[] = {
        {"/pool/locked", "locked", "pool"},           {"/coroutine/locked", "locked", "coroutine"},
        {"/reactive/locked", "locked", "reactive"},   {"/pool/delay", "delay", "pool"},
        {"/reactive/delay", "delay", "reactive"},
    };
    return cr_make_param_array(route_param, p, sizeof(p) / sizeof(p[0]));
}

/* Twenty clients queue on one host lock (or sleep) and leave: the holder's
 * sleep and every queued lock wait end at once, so the next client gets the
 * lock straight away instead of behind nineteen 2 s holds by nobody. */
ParameterizedTest(route_param *p, cancel, waits_end_when_the_client_leaves, .timeout = 120)
{
    wt_server s = {0};
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 2; " WT_LISTEN " admin = false;\n"
             "pools = ({ name = \"default\"; size = 32; queue = 100; });\n"
             "routes = ({ path = \"%s\"; plugin = \"%s\"; dispatch = \"%s\";"
             " options = { %s = 2000; %s }; });\n",
             p->path, p->plugin, p->dispatch, strcmp(p->plugin, "locked") == 0 ? "hold_ms" : "ms",
             strcmp(p->plugin, "locked") == 0 ? "workers = 1;" : "");
    wt_start(&s, conf);
    enum { N = 20 };
    int fds[N];
    for (int i = 0; i < N; i++)
        fds[i] = wt_send_get(&s, p->path);
    wt_await_metric(&s, "weft_inflight_requests", 1, N, 30000);
    for (int i = 0; i < N; i++)
        close(fds[i]);
    double t_freed = wt_await_metric(&s, "weft_inflight_requests", 0, 0, 1500);
    if (strcmp(p->dispatch, "pool") == 0)
        wt_await_metric(&s, "weft_pool_busy_workers{pool=\"default\"}", 0, 0, 1500);
    double t0 = wt_now_ms();
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", p->path, NULL, &r), 0);
    double t_next = wt_now_ms() - t0;
    printf("cancel: %s: %d waiting clients left, all freed in %.0f ms; the next request answered %ld in %.0f ms "
           "(hold 2000 ms)\n",
           p->path, N, t_freed, r.status, t_next);
    cr_expect_eq(r.status, 200, "%s", r.body);
    cr_expect_lt(t_next, 3900, "the next client waited behind withdrawn ones");
    wt_resp_free(&r);
    char key[160];
    snprintf(key, sizeof(key), "weft_requests_cancelled_total{route=\"%s\",policy=\"%s\"}", p->path, p->dispatch);
    cr_expect_eq(wt_metric(&s, key), N);
    wt_suite_stop(&s);
    char *log = wt_read_log(&s);
    cr_expect_null(strstr(log, "rc -5"), "withdrawn requests are not logged one by one:\n%s", log);
    free(log);
    wt_finish(&s);
}
