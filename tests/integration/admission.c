/*
 * Fair admission: at limits.max_connections the oldest idle keep-alive
 * connections are closed to admit new clients, never one with a request in
 * flight. (The 11,000 idle sockets are scaled down here through a
 * low max_connections: the mechanism is the same.)
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "harness.h"
#include "rawhttp.h"

#define IDLE 60

/* A keep-alive connection that has been answered once and now sits idle. */
static int idle_connection(const wt_server *s)
{
    int fd = wt_raw_connect(s->port);
    const char req[] = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
    cr_assert_eq(write(fd, req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[2048];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    cr_assert_gt(n, 0, "no answer on idle connection setup");
    buf[n] = '\0';
    cr_assert(strncmp(buf, "HTTP/1.1 200 ", 13) == 0, "%s", buf);
    return fd;
}

Test(admission, idle_connections_make_room_for_new_clients, .timeout = 120)
{
    wt_server s = {0};
    /* The admin listener and /metrics count too: a few to spare. */
    wt_start(&s, "threads = 1; listen = [\"127.0.0.1:0\"]; admin = false;\n"
                 "limits = { max_connections = 50; request_timeout_ms = 60000; };\n"
                 "routes = ({ path = \"/hello\"; plugin = \"hello\"; dispatch = \"reactive\"; },\n"
                 "          { path = \"/slow\"; plugin = \"delay\"; dispatch = \"coroutine\"; options = { ms = 1500; }; });\n");
    /* A busy connection first: the oldest, but never evicted. */
    int busy = wt_send_get(&s, "/slow");
    int fds[IDLE];
    int n = 0;
    for (; n < 49; n++)
        fds[n] = idle_connection(&s);
    double t0 = wt_now_ms();
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/hello", NULL, &r), 0);
    double took = wt_now_ms() - t0;
    printf("admission: %d idle keep-alive connections at max_connections 50; a new client answered %ld in %.0f ms "
           "(without eviction it waits for request_timeout_ms, 60 s)\n",
           n, r.status, took);
    cr_expect_eq(r.status, 200);
    cr_expect_lt(took, 1000);
    wt_resp_free(&r);
    cr_expect_geq(wt_metric(&s, "weft_connections_evicted_total"), 1);
    /* The busy connection still gets its answer. */
    struct timeval tv = {10, 0};
    setsockopt(busy, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[1024];
    ssize_t got = read(busy, buf, sizeof(buf) - 1);
    cr_assert_gt(got, 0, "the connection with a request in flight was closed");
    buf[got] = '\0';
    cr_expect(strncmp(buf, "HTTP/1.1 200 ", 13) == 0, "%s", buf);
    /* The oldest idle one was closed to make room. */
    char c;
    cr_expect_eq(read(fds[0], &c, 1), 0, "the oldest idle connection should have been closed");
    for (int i = 0; i < n; i++)
        close(fds[i]);
    close(busy);
    wt_finish(&s);
}
