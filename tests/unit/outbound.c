/*
 * Tests for server/outbound/ (fetch.c, upstream.c, http_host.c) against an
 * in-process upstream: a thread that answers HTTP/1.1 on a loopback port
 * (`/hello` at once, `/slow` never), on real loops (support/unitloop.h).
 * A call from a coroutine and from a pool worker gets the response, keeps
 * its connection for the next call, times out with WEFT_HTTP_TIMEOUT, and
 * ends with WEFT_CANCELLED when its request is cancelled; a reactive
 * handler's blocking call is refused without reaching the upstream.
 */
#include "outbound/outbound.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dispatch/dispatch.h"
#include "request/cancel.h"
#include "harness.h"
#include "unitloop.h"

/* ---- the upstream ---- */

static int up_fd = -1, up_port;
static pthread_t up_thread;
static atomic_int up_requests, up_accepts;

static void *serve_conn(void *arg)
{
    int c = (int)(intptr_t)arg;
    char buf[4096];
    size_t have = 0;
    for (;;) {
        ssize_t n = read(c, buf + have, sizeof(buf) - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        buf[have] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (end == NULL)
            continue;
        atomic_fetch_add(&up_requests, 1);
        if (strncmp(buf, "GET /slow", 9) != 0) {
            static const char ok[] = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nhi";
            if (write(c, ok, sizeof(ok) - 1) < 0)
                break;
        } /* /slow: never answered; the client gives up or goes */
        size_t used = (size_t)(end + 4 - buf);
        memmove(buf, buf + used, have - used);
        have -= used;
    }
    close(c);
    return NULL;
}

static void *serve(void *arg)
{
    (void)arg;
    for (;;) {
        int c = accept(up_fd, NULL, NULL);
        if (c < 0)
            return NULL; /* shut down by the test */
        atomic_fetch_add(&up_accepts, 1);
        pthread_t t;
        if (pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)c) == 0)
            pthread_detach(t);
        else
            close(c);
    }
}

static void upstream_start(void)
{
    up_fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(up_fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    cr_assert_eq(bind(up_fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(up_fd, 64), 0);
    cr_assert_eq(getsockname(up_fd, (struct sockaddr *)&a, &len), 0);
    up_port = ntohs(a.sin_port);
    cr_assert_eq(pthread_create(&up_thread, NULL, serve, NULL), 0);
}

static wt_route rt;

static void setup(void)
{
    upstream_start();
    weft_outbound_attach();
}

static void teardown(void)
{
    wt_loops_stop();
    wt_route_fini(&rt);
    shutdown(up_fd, SHUT_RDWR);
    close(up_fd);
    pthread_join(up_thread, NULL);
}

TestSuite(outbound, .init = setup, .fini = teardown, .timeout = 60);

/* ---- handlers: GET the path in the query's place (the route's state) ---- */

static const char *path_of(weft_req *r) { return r->route->state; }

static int fetch_blocking(weft_req *r, void *state)
{
    (void)state;
    int timed = strcmp(path_of(r), "/slow-timeout") == 0; /* /slow, given 200 ms */
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", up_port, timed ? "/slow" : path_of(r));
    weft_http_request rq = WEFT_HTTP_REQUEST_INIT;
    rq.url = url;
    rq.timeout_ms = timed ? 200 : 0;
    weft_http_response *res = NULL;
    int rc = weft_http_host_http_fetch(r, &rq, &res);
    weft_request_res_printf(r, "rc=%d error=%d status=%d body=%.*s", rc, res != NULL ? res->error : -1,
                            res != NULL ? res->status : -1, res != NULL ? (int)res->body_len : 0,
                            res != NULL && res->body != NULL ? res->body : "");
    weft_fetch_http_free(res);
    return WEFT_OK;
}

static int fetch_reactive(weft_req *r, void *state)
{
    (void)state;
    return fetch_blocking(r, state); /* a blocking call from the loop: refused */
}

static const weft_plugin fetcher = {WEFT_PLUGIN_HEADER, .name = "fetcher", .handle = fetch_blocking,
                                    .handle_async = fetch_reactive};

static const wt_done *run(weft_dispatch policy, const char *path, int n)
{
    wt_route_init(&rt, &fetcher, policy, 2, 10);
    rt.route.state = (void *)path;
    wt_loops_start(1);
    for (int i = 0; i < n; i++) {
        wt_req_start(wt_req_new(&rt, 0, i + 1));
        wt_wait_done(i + 1, 10000); /* one after the other: the second may reuse the connection */
    }
    return wt_wait_done(n, 10000);
}

static void expect_body(const wt_done *d, int rc, int error, int status, const char *body)
{
    char want[128];
    snprintf(want, sizeof(want), "rc=%d error=%d status=%d body=%s", rc, error, status, body);
    cr_assert_str_eq(d->body, want);
}

Test(outbound, a_coroutine_gets_the_response_and_keeps_the_connection)
{
    const wt_done *d = run(WEFT_DISPATCH_COROUTINE, "/hello", 2);
    expect_body(&d[0], WEFT_OK, WEFT_HTTP_OK, 200, "hi");
    expect_body(&d[1], WEFT_OK, WEFT_HTTP_OK, 200, "hi");
    cr_assert_eq(atomic_load(&up_requests), 2);
    cr_assert_eq(atomic_load(&up_accepts), 1, "the second call reused the kept-alive connection");
    wt_loops_stop();
}

Test(outbound, a_pool_worker_gets_the_response)
{
    const wt_done *d = run(WEFT_DISPATCH_POOL, "/hello", 2);
    expect_body(&d[0], WEFT_OK, WEFT_HTTP_OK, 200, "hi");
    expect_body(&d[1], WEFT_OK, WEFT_HTTP_OK, 200, "hi");
    cr_assert_eq(atomic_load(&up_accepts), 1, "the loop's upstream pool serves workers too");
    wt_loops_stop();
}

Test(outbound, a_call_past_its_timeout_ends_with_http_timeout)
{
    const wt_done *d = run(WEFT_DISPATCH_COROUTINE, "/slow-timeout", 1);
    expect_body(&d[0], weft_http_rc(WEFT_HTTP_TIMEOUT), WEFT_HTTP_TIMEOUT, 0, "");
    wt_loops_stop();
}

Test(outbound, a_reactive_blocking_call_is_refused_before_the_upstream)
{
    const wt_done *d = run(WEFT_DISPATCH_REACTIVE, "/hello", 1);
    expect_body(&d[0], WEFT_ERROR, WEFT_HTTP_BAD_REQUEST, 0, "");
    cr_assert_eq(atomic_load(&up_requests), 0);
    wt_loops_stop();
}

/* ---- cancellation ---- */

static weft_req *victim;
static void cancel_victim(void *arg)
{
    (void)arg;
    weft_dispatch_cancel(victim, WEFT_CANCEL_CLIENT);
}

static void check_cancel(weft_dispatch policy)
{
    wt_route_init(&rt, &fetcher, policy, 2, 10);
    rt.route.state = (void *)"/slow";
    wt_loops_start(1);
    victim = wt_req_new(&rt, 0, 1);
    wt_req_start(victim);
    double limit = wt_now_ms() + 5000; /* until the upstream has the call: it never answers */
    while (atomic_load(&up_requests) == 0 && wt_now_ms() < limit)
        usleep(1000);
    cr_assert_eq(atomic_load(&up_requests), 1, "the call never reached the upstream");
    wt_on_loop(0, cancel_victim, NULL);
    const wt_done *d = wt_wait_done(1, 5000);
    cr_assert_eq(weft_http_rc(WEFT_HTTP_CANCELLED), WEFT_CANCELLED);
    expect_body(&d[0], WEFT_CANCELLED, WEFT_HTTP_CANCELLED, 0, "");
    wt_loops_stop();
}

Test(outbound, cancelling_ends_a_coroutine_call) { check_cancel(WEFT_DISPATCH_COROUTINE); }
Test(outbound, cancelling_ends_a_worker_call) { check_cancel(WEFT_DISPATCH_POOL); }
