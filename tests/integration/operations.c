/* Metrics, health, graceful shutdown and limits, against the real binary. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static long get(const wt_server *s, const char *method, const char *path, char **body)
{
    wt_resp r;
    if (wt_http(s, method, path, NULL, &r) != 0) {
        wt_resp_free(&r);
        return -1;
    }
    if (body != NULL)
        *body = strdup(r.body);
    long st = r.status;
    wt_resp_free(&r);
    return st;
}

/* The value of one exact series line ("name{labels}") in an exposition. */
static double series(const char *text, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = text; p != NULL && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, key, n) == 0 && p[n] == ' ')
            return atof(p + n + 1);
    cr_assert_fail("series %s not found", key);
    return -1;
}

static char *scrape(const wt_server *s)
{
    char *body = NULL;
    cr_assert_eq(get(s, "GET", "/metrics", &body), 200);
    return body;
}

Test(metrics, text_parses_and_counters_move_by_exactly_the_requests_made, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 2; " WT_LISTEN " admin = false;\n"
                 "routes = ({ path = \"/hello\"; plugin = \"hello\"; dispatch = \"reactive\"; methods = [\"GET\"]; },\n"
                 "          { path = \"/pool/hello\"; plugin = \"hello\"; dispatch = \"pool\"; });\n");
    char *before = scrape(&s);
    /* every sample line is `name{labels} value` or `name value` */
    regex_t re;
    cr_assert_eq(regcomp(&re, "^[a-zA-Z_:][a-zA-Z0-9_:]*(\\{([a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\]|\\\\.)*\",?)*\\})? "
                              "[-+0-9.eE]+(Inf)?$",
                         REG_EXTENDED | REG_NOSUB),
                 0);
    int samples = 0;
    char *copy = strdup(before), *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') {
            cr_assert(strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0, "%s", line);
            continue;
        }
        cr_assert_eq(regexec(&re, line, 0, NULL, 0), 0, "not Prometheus text format: '%s'", line);
        samples++;
    }
    free(copy);
    regfree(&re);
    cr_assert_gt(samples, 20);

    for (int i = 0; i < 5; i++)
        cr_assert_eq(get(&s, "GET", "/hello", NULL), 200);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(get(&s, "GET", "/pool/hello", NULL), 200);
    cr_assert_eq(get(&s, "GET", "/nope", NULL), 404);
    cr_assert_eq(get(&s, "GET", "/nope2", NULL), 404);
    cr_assert_eq(get(&s, "DELETE", "/hello", NULL), 405);
    char *after = scrape(&s);
    const char *k_hello = "weft_requests_total{route=\"/hello\",policy=\"reactive\",code=\"2xx\"}";
    const char *k_pool = "weft_requests_total{route=\"/pool/hello\",policy=\"pool\",code=\"2xx\"}";
    const char *k_hist = "weft_request_duration_seconds_count{route=\"/hello\",policy=\"reactive\"}";
    const char *k_inf = "weft_request_duration_seconds_bucket{route=\"/pool/hello\",policy=\"pool\",le=\"+Inf\"}";
    cr_assert_eq(series(after, k_hello) - series(before, k_hello), 5);
    cr_assert_eq(series(after, k_pool) - series(before, k_pool), 3);
    cr_assert_eq(series(after, k_hist) - series(before, k_hist), 5);
    cr_assert_eq(series(after, k_inf) - series(before, k_inf), 3);
    cr_assert_eq(series(after, "weft_unmatched_requests_total{code=\"404\"}") -
                     series(before, "weft_unmatched_requests_total{code=\"404\"}"),
                 2);
    cr_assert_eq(series(after, "weft_unmatched_requests_total{code=\"405\"}") -
                     series(before, "weft_unmatched_requests_total{code=\"405\"}"),
                 1);
    cr_assert_eq(series(after, "weft_pool_size{pool=\"default\"}"), 200);
    cr_assert_gt(series(after, "process_resident_memory_bytes"), 1e6);
    cr_assert_eq(series(after, "weft_generation"), 1);
    free(before);
    free(after);
    cr_assert_eq(wt_stop(&s), 0);
}

/* A handler that holds its loop is never in flight when that loop answers
 * a scrape, so the gauge reads 0 whatever the load; the integral the loop
 * keeps itself counts it, as long as the histogram does. */
Test(metrics, the_inflight_integral_counts_a_handler_that_holds_the_loop, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1; " WT_LISTEN " admin = false; blocking = { threshold_ms = 1000; };\n"
                 "routes = (" WT_ROUTE("/spin", "blocker", "coroutine", " options = { ms = 30; spin = 1; };") ");\n");
    const char *k_int = "weft_inflight_requests_seconds_total";
    const char *k_sum = "weft_request_duration_seconds_sum{route=\"/spin\",policy=\"coroutine\"}";
    char *before = scrape(&s);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(get(&s, "GET", "/spin", NULL), 200);
    char *after = scrape(&s);
    double held = series(after, k_sum) - series(before, k_sum);
    double integral = series(after, k_int) - series(before, k_int);
    cr_assert_geq(held, 0.3, "10 requests of 30 ms: %f s", held);
    /* The same requests between the same two ends (the integral's start is
     * admission, as the histogram's; the scrapes themselves are not counted). */
    cr_assert(integral >= 0.95 * held && integral <= held + 0.01, "in flight %f s, the histogram %f s", integral, held);
    cr_assert_eq(series(after, "weft_inflight_requests"), 0);
    free(before);
    free(after);
    cr_assert_eq(wt_stop(&s), 0);
}

Test(metrics, pool_rejections_are_counted, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1; " WT_LISTEN " admin = false;\n"
                 "pools = ({ name = \"one\"; size = 1; queue = 0; });\n"
                 "routes = ({ path = \"/d\"; plugin = \"delay\"; dispatch = \"pool\"; pool = \"one\"; options = { ms = 400; }; });\n");
    long st[5];
    wt_http_many(&s, "/d", 5, st, NULL);
    int busy = 0;
    for (int i = 0; i < 5; i++)
        busy += st[i] == 503;
    cr_assert_geq(busy, 1);
    char *m = scrape(&s);
    cr_assert_eq(series(m, "weft_pool_rejected_total{pool=\"one\"}"), busy);
    cr_assert_eq(series(m, "weft_requests_total{route=\"/d\",policy=\"pool\",code=\"5xx\"}"), busy);
    free(m);
    cr_assert_eq(wt_stop(&s), 0);
}

/* ---- health ---- */

static char pgdir[64];

static int pg(const char *cmd)
{
    char line[512];
    snprintf(line, sizeof(line), "%s/packaging/pgdev.sh %s %s >/dev/null 2>&1", WEFT_SOURCE_DIR, cmd, pgdir);
    return system(line);
}

static long wait_status(const wt_server *s, const char *path, long want, double limit_ms)
{
    long st = 0;
    for (double t0 = wt_now_ms(); wt_now_ms() - t0 < limit_ms; usleep(100000))
        if ((st = get(s, "GET", path, NULL)) == want)
            return st;
    return st;
}

Test(health, ready_follows_the_database, .timeout = 120)
{
    snprintf(pgdir, sizeof(pgdir), "/tmp/who%d", (int)getpid());
    cr_assert_eq(pg("start"), 0);
    char host[96];
    snprintf(host, sizeof(host), "PGHOST=%s", pgdir);
    const char *env[] = {host, "PGPORT=5432", "PGUSER=postgres", "PGDATABASE=weft", NULL};
    wt_server s = {0};
    wt_start_env(&s, "threads = 2; " WT_LISTEN " admin = false;\n"
                     "database = { statement_timeout_ms = 2000; };\n"
                     WT_HELLO_ROUTES "\n",
                 env);
    char *body = NULL;
    cr_assert_eq(get(&s, "GET", "/health/live", &body), 200);
    cr_assert(strstr(body, "\"status\":\"UP\"") != NULL, "%s", body);
    free(body);
    cr_assert_eq(wait_status(&s, "/health/ready", 200, 10000), 200);
    cr_assert_eq(get(&s, "GET", "/health/ready", &body), 200);
    cr_assert(strstr(body, "\"name\":\"database\",\"status\":\"UP\"") != NULL, "%s", body);
    free(body);

    /* The libpq environment alone (no database group) is a database too. */
    wt_server e = {0};
    wt_start_env(&e, "threads = 1; " WT_LISTEN " admin = false;\n"
                     WT_HELLO_ROUTES "\n",
                 env);
    cr_assert_eq(wait_status(&e, "/health/ready", 200, 10000), 200);
    cr_assert_eq(get(&e, "GET", "/health/ready", &body), 200);
    cr_assert(strstr(body, "\"name\":\"database\",\"status\":\"UP\"") != NULL, "%s", body);
    free(body);

    cr_assert_eq(pg("stop"), 0);
    cr_assert_eq(wait_status(&e, "/health/ready", 503, 10000), 503, "env-only database down: not ready");
    cr_assert_eq(wt_stop(&e), 0);
    cr_assert_eq(wait_status(&s, "/health/ready", 503, 10000), 503);
    cr_assert_eq(get(&s, "GET", "/health/ready", &body), 503);
    cr_assert(strstr(body, "\"name\":\"database\",\"status\":\"DOWN\"") != NULL, "%s", body);
    cr_assert(strstr(body, "\"status\":\"DOWN\"") != NULL, "%s", body);
    free(body);
    cr_assert_eq(get(&s, "GET", "/health/live", NULL), 200, "liveness does not depend on the database");

    cr_assert_eq(pg("start"), 0);
    cr_assert_eq(wait_status(&s, "/health/ready", 200, 20000), 200, "ready again once the database is back");
    cr_assert_eq(wt_stop(&s), 0);
    pg("stop");
    char rm[96];
    snprintf(rm, sizeof(rm), "rm -rf %s", pgdir);
    cr_expect_eq(system(rm), 0);
}

/* ---- graceful shutdown ---- */

typedef struct client {
    const wt_server *s;
    long status;
} client;

static void *slow_get(void *arg)
{
    client *c = arg;
    c->status = get(c->s, "GET", "/delay", NULL);
    return NULL;
}

Test(shutdown, sigterm_lets_in_flight_requests_finish, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 2; " WT_LISTEN " admin = false; shutdown = { grace_s = 30; };\n"
                 "routes = ({ path = \"/delay\"; plugin = \"delay\"; dispatch = \"coroutine\"; options = { ms = 4000; }; });\n");
    enum { N = 50 };
    client c[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        c[i] = (client){&s, 0};
        pthread_create(&t[i], NULL, slow_get, &c[i]);
    }
    /* All 50 dispatched: the server's own counts say so (a fixed sleep lost
     * requests on a loaded machine). Answered ones count too, so a machine
     * slow enough to take longer than the delay to send 50 requests makes the
     * test weaker, not red; the 4 s delay keeps that rare. */
    wt_wait_dispatched(&s, "weft_requests_total{route=\"/delay\",policy=\"coroutine\",code=\"2xx\"}", N, 20000);
    double t0 = wt_now_ms();
    int status = wt_stop(&s);
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(c[i].status, 200, "in-flight request %d got %ld", i, c[i].status);
    }
    cr_assert_eq(status, 0);
    cr_assert_lt(wt_now_ms() - t0, 20000.0, "in-flight requests finish in their 4 s, long before grace_s (30 s)");
    char *log = wt_read_log(&s);
    cr_assert(strstr(log, "stopping") != NULL && strstr(log, "stopped") != NULL, "%s", log);
    free(log);
}

/* shutdown.unready_ms: readiness answers 503 first while the listener still
 * accepts (a load balancer's health check takes the replica out before any
 * connection is refused); the listeners close only after it. */
Test(shutdown, unready_ms_turns_readiness_503_while_still_accepting, .timeout = 60)
{
    wt_server s = {0};
    /* Long enough that no loaded machine can miss the window. */
    wt_start(&s, "threads = 2; " WT_LISTEN " admin = false; shutdown = { grace_s = 10; unready_ms = 600000; };\n"
                 WT_HELLO_ROUTES "\n");
    char *body = NULL;
    cr_assert_eq(get(&s, "GET", "/health/ready", &body), 200, "%s", body);
    free(body);
    cr_assert_eq(kill(s.pid, SIGTERM), 0);
    free(wt_wait_log(&s, "not ready: /health/ready answers 503 for 600000 ms", 20000));
    /* Each request is a new connection: the listener still accepts. */
    cr_assert_eq(get(&s, "GET", "/health/ready", &body), 503, "%s", body);
    cr_assert(strstr(body, "\"name\":\"draining\",\"status\":\"DOWN\"") != NULL, "%s", body);
    free(body);
    cr_assert_eq(get(&s, "GET", "/hello", NULL), 200, "still serving while not ready");
    cr_assert_eq(get(&s, "GET", "/health/live", NULL), 200, "alive while not ready");
    char *log = wt_read_log(&s);
    cr_assert(strstr(log, "stopping;") == NULL, "the drain has not started yet:\n%s", log);
    free(log);
    cr_assert_eq(wt_stop(&s), 1, "a second SIGTERM exits at once, with status 1");
}

Test(shutdown, unready_ms_then_the_drain_and_exit_0, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1; " WT_LISTEN " admin = false; shutdown = { unready_ms = 200; };\n" WT_HELLO_ROUTES "\n");
    cr_assert_eq(get(&s, "GET", "/hello", NULL), 200);
    cr_assert_eq(wt_stop(&s), 0);
    char *log = wt_read_log(&s);
    const char *unready = strstr(log, "not ready: /health/ready answers 503 for 200 ms");
    const char *stopping = strstr(log, "stopping;");
    cr_assert(unready != NULL && stopping != NULL && unready < stopping, "not ready first, then the drain:\n%s", log);
    free(log);
}

/* ---- limits ---- */

static int connect_raw(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

Test(limits, slow_header_client_is_dropped_and_others_are_served, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1; " WT_LISTEN " admin = false; limits = { request_timeout_ms = 500; };\n"
                 WT_HELLO_ROUTES "\n");
    int fd = connect_raw(s.port);
    cr_assert_eq(write(fd, "GET /hello HTTP/1.1\r\n", 21), 21);
    double t0 = wt_now_ms();
    int closed = 0;
    while (wt_now_ms() - t0 < 5000) {
        /* trickle a header byte now and then; others must not wait */
        cr_assert_eq(get(&s, "GET", "/hello", NULL), 200);
        if (send(fd, "X", 1, MSG_NOSIGNAL) < 0) {
            closed = 1;
            break;
        }
        char c;
        struct timeval tv = {0, 200000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        ssize_t n = recv(fd, &c, 1, 0);
        if (n == 0 || (n > 0 && c == 'H')) { /* closed, or an error response */
            closed = 1;
            break;
        }
    }
    cr_assert(closed, "a client trickling headers must be dropped by request_timeout_ms");
    cr_assert_lt(wt_now_ms() - t0, 3000.0);
    close(fd);
    cr_assert_eq(wt_stop(&s), 0);
}

Test(limits, max_connections_defers_accepting_until_one_closes, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1; " WT_LISTEN " admin = false; limits = { max_connections = 2; };\n"
                 "routes = (" WT_HELLO_ROUTE ",\n"
                 "          { path = \"/slow\"; plugin = \"delay\"; dispatch = \"coroutine\"; options = { ms = 20000; }; });\n");
    /* The backlog is FIFO: a and b are accepted before c, whenever that is.
     * Each carries a request in flight: idle connections would be closed to
     * make room (admission.c), busy ones never are (and a connection idle
     * for less than 200 ms is not closed either, so c cannot overtake them). */
    int a = wt_send_get(&s, "/slow"), b = wt_send_get(&s, "/slow");
    /* a third client queues in the kernel backlog: no answer while two are busy */
    int c = connect_raw(s.port);
    cr_assert_eq(write(c, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", 32), 32);
    struct timeval tv = {0, 500000};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[512];
    cr_assert_lt(recv(c, buf, sizeof(buf), 0), 0, "the third connection must wait at max_connections = 2");
    close(a);
    tv.tv_sec = 5;
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ssize_t n = recv(c, buf, sizeof(buf) - 1, 0);
    cr_assert_gt(n, 0, "served once a slot frees up");
    buf[n] = '\0';
    cr_assert(strstr(buf, "200 OK") != NULL, "%s", buf);
    close(b);
    close(c);
    /* counted when c's accept was deferred, before it was served */
    char *m = scrape(&s);
    cr_assert_geq(series(m, "weft_connections_deferred_total"), 1);
    free(m);
    cr_assert_eq(wt_stop(&s), 0);
}

static int request_on(int fd)
{
    if (write(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", 32) != 32)
        return -1;
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[512];
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return strstr(buf, "200 OK") != NULL ? 200 : 0;
}

Test(limits, out_of_file_descriptors_backs_off_and_recovers, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1; " WT_LISTEN " admin = false;\n"
                 WT_HELLO_ROUTES "\n");
    int kept = connect_raw(s.port);
    cr_assert_eq(request_on(kept), 200);
    /* leave room for exactly three more descriptors */
    int limit = wt_fd_count(s.pid) + 3;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "prlimit --pid %d --nofile=%d:%d", (int)s.pid, limit, limit);
    cr_assert_eq(system(cmd), 0, "prlimit (util-linux) is needed");
    enum { N = 8 };
    int c[N];
    for (int i = 0; i < N; i++)
        c[i] = connect_raw(s.port);
    free(wt_wait_log(&s, "pausing new connections", 10000));
    /* the established connection is still served while accept has no fds */
    cr_assert_eq(request_on(kept), 200);
    char *log = wt_read_log(&s);
    cr_assert(strstr(log, "Too many open files") != NULL && strstr(log, "pausing new connections") != NULL, "%s",
              log);
    free(log);
    /* and it is not spinning on the readable listener: it sleeps between
     * retries. The 1 s sleep is the observation window, not a wait for an
     * event: a server that backs off uses 0 ticks in it (measured), one that
     * spins uses a whole core, or on a loaded 2-core machine still a fair
     * share of one, hence the bound of a tenth of a second rather than half. */
    double t0 = wt_cpu_seconds(s.pid);
    usleep(1000000);
    double used = wt_cpu_seconds(s.pid) - t0;
    cr_assert_lt(used, 0.1, "%.2f s of CPU in 1 s while out of descriptors: spinning", used);
    for (int i = 0; i < N; i++)
        close(c[i]);
    /* no wait: the fresh connection sits in the backlog until the next retry */
    int fresh = connect_raw(s.port);
    cr_assert_eq(request_on(fresh), 200, "new connections succeed once descriptors free up");
    close(fresh);
    close(kept);
    cr_assert_eq(wt_stop(&s), 0);
}

Test(limits, a_saturated_pool_keeps_its_queue_bound_and_memory_flat, .timeout = 120)
{
    wt_server s = {0};
    wt_start(&s, "threads = 2; " WT_LISTEN " admin = false;\n"
                 "pools = ({ name = \"small\"; size = 2; queue = 4; });\n"
                 "routes = ({ path = \"/d\"; plugin = \"delay\"; dispatch = \"pool\"; pool = \"small\"; options = { ms = 300; }; });\n");
    enum { N = 150 };
    static long st[N];
    long rss0 = 0;
    long total_busy = 0;
    for (int round = 0; round < 4; round++) {
        if (round == 1)
            rss0 = wt_rss_kib(s.pid); /* after a warm-up round */
        wt_http_many(&s, "/d", N, st, NULL);
        int ok = 0, busy = 0;
        for (int i = 0; i < N; i++) {
            ok += st[i] == 200;
            busy += st[i] == 503;
        }
        cr_assert_eq(ok + busy, N, "only 200 or 503");
        /* 2 running + 4 waiting can be admitted at once; the rest are refused */
        cr_assert_geq(busy, N - 6 * 3, "round %d: %d refused: the queue bound did not hold", round, busy);
        total_busy += busy;
    }
    long rss1 = wt_rss_kib(s.pid);
    char *m = scrape(&s);
    cr_assert_eq(series(m, "weft_pool_rejected_total{pool=\"small\"}"), total_busy);
    free(m);
#ifndef __SANITIZE_ADDRESS__
    /* (under ASan freed memory sits in quarantine: RSS means nothing there) */
    if (getenv("WEFT_TEST_SANITIZER") == NULL)
        cr_assert_lt(rss1 - rss0, 2048, "RSS grew %ld KiB while refusing %ld requests", rss1 - rss0, total_busy);
#endif
    cr_log_info("RSS %ld -> %ld KiB across %ld refusals", rss0, rss1, total_busy);
    cr_assert_eq(wt_stop(&s), 0);
}
