/*
 * Fair admission: at limits.max_connections the oldest idle keep-alive
 * connections are closed to admit new clients, never one with a request in
 * flight (scaled down through a low max_connections, and at full size: the
 * issue's 11,000 idle sockets against the default 10,000); and
 * limits.max_connections_per_ip closes a client address's connections past
 * its cap at accept.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "harness.h"
#include "rawhttp.h"

#define IDLE 60

/* A connection to 127.0.0.1:port from the local address `src`. */
static int connect_from(const char *src, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    cr_assert_eq(inet_pton(AF_INET, src, &a.sin_addr), 1);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0, "bind %s: %s", src, strerror(errno));
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s", strerror(errno));
    return fd;
}

/* GET /hello on a keep-alive connection: the status, or 0 when the server
 * closed or reset the connection instead of answering. */
static long hello_on(int fd)
{
    const char req[] = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
    if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) - 1))
        return 0;
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[2048];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    cr_assert(n >= 0 || errno != EAGAIN, "neither an answer nor a close within 10 s");
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    cr_assert(strncmp(buf, "HTTP/1.1 ", 9) == 0, "%s", buf);
    return atol(buf + 9);
}

/* A keep-alive connection that has been answered once and now sits idle. */
static int idle_connection(const wt_server *s)
{
    int fd = wt_raw_connect(s->port);
    cr_assert_eq(hello_on(fd), 200, "no answer on idle connection setup");
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

/* Exactly max_connections clients, spread over two loops, all stay: the
 * limit counts the loops together (SO_REUSEPORT's hash does not split
 * connections evenly, and a per-loop share closed idle ones while the
 * process was below its limit), and reaching the limit with nobody waiting
 * closes nothing (the c10k runs lost 8 idle connections at every such
 * moment). The first connections are left idle past the eviction age
 * (200 ms) before the last one arrives, so that either fault would close
 * them. */
Test(admission, exactly_max_connections_all_stay, .timeout = 60)
{
    enum { MAX = 40 };
    wt_server s = {0};
    wt_start(&s, "threads = 2; listen = [\"127.0.0.1:0\"]; admin = false;\n"
                 "limits = { max_connections = 40; request_timeout_ms = 60000; };\n"
                 "routes = ({ path = \"/hello\"; plugin = \"hello\"; dispatch = \"reactive\"; });\n");
    int fds[MAX];
    for (int i = 0; i < MAX - 1; i++)
        fds[i] = idle_connection(&s);
    usleep(300 * 1000); /* past the 200 ms after which an idle connection may be evicted */
    fds[MAX - 1] = idle_connection(&s);
    for (int i = 0; i < MAX; i++)
        cr_expect_eq(hello_on(fds[i]), 200, "connection %d of %d was closed at max_connections = %d", i + 1, MAX, MAX);
    for (int i = 0; i < MAX; i++)
        close(fds[i]);
    wt_finish(&s);
}

/* The issue's own numbers: 11,000 idle connections from one client against
 * the default max_connections (10,000), then a new client. The flood only
 * connects and never sends a byte (the cheapest attack; h2o would hold such
 * a socket until request_timeout_ms). The test process and weft each need
 * ~11,000 descriptors: the test raises its soft RLIMIT_NOFILE (weft raises
 * its own to the hard limit); it is skipped when the hard limit is too low. */
Test(admission, eleven_thousand_idle_connections_then_a_new_client, .timeout = 300)
{
    enum { FLOOD = 11000, MAX_CONNECTIONS = 10000 };
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rlim_t need = FLOOD + 1000;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
        cr_skip_test("the hard RLIMIT_NOFILE (%llu) is below the %llu descriptors 11,000 connections need",
                     (unsigned long long)rl.rlim_max, (unsigned long long)need);
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        rl.rlim_cur = need;
        cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0, "setrlimit: %s", strerror(errno));
    }
    wt_server s = {0};
    /* request_timeout_ms well past the flood's set-up: without eviction the
     * new client would wait that long for a slot (8.6 s with the default). */
    wt_start(&s, "threads = 2; listen = [\"127.0.0.1:0\"]; admin = false;\n"
                 "limits = { request_timeout_ms = 120000; };\n"
                 "routes = ({ path = \"/hello\"; plugin = \"hello\"; dispatch = \"reactive\"; });\n");
    int *fds = malloc(FLOOD * sizeof(int));
    cr_assert_not_null(fds);
    double t0 = wt_now_ms();
    for (int i = 0; i < FLOOD; i++)
        fds[i] = wt_raw_connect(s.port); /* completes in the kernel: weft accepts later, or evicts */
    double flood_ms = wt_now_ms() - t0;
    /* Settled: every flood connection weft has seen is open or was evicted,
     * and no more than max_connections are open. (Each scrape is itself a
     * new client admitted the same way.) */
    double open = 0, evicted = 0;
    for (double t = wt_now_ms(); wt_now_ms() - t < 120000; usleep(20000)) {
        /* evicted first: one evicted between the two scrapes is then missed
         * (polled again), never counted both open and evicted */
        evicted = wt_metric(&s, "weft_connections_evicted_total");
        open = wt_metric(&s, "weft_connections_open");
        if (open >= 0 && evicted >= 0 && open + evicted >= FLOOD)
            break;
    }
    cr_assert_geq(open + evicted, FLOOD, "weft saw only %g of the %d connections (%g open, %g evicted)",
                  open + evicted, FLOOD, open, evicted);
    t0 = wt_now_ms();
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/hello", NULL, &r), 0);
    double took = wt_now_ms() - t0;
    evicted = wt_metric(&s, "weft_connections_evicted_total");
    open = wt_metric(&s, "weft_connections_open");
    printf("admission: %d idle connections opened in %.0f ms (max_connections %d); a new client then answered %ld "
           "in %.1f ms; %g connections open, %g idle ones evicted (before eviction: it waited for "
           "request_timeout_ms, 8.6 s in the issue)\n",
           FLOOD, flood_ms, MAX_CONNECTIONS, r.status, took, open, evicted);
    cr_expect_eq(r.status, 200);
    cr_expect_geq(evicted, FLOOD - MAX_CONNECTIONS, "the idle flood past max_connections was evicted");
    cr_expect_leq(open, MAX_CONNECTIONS);
    /* The behaviour, not a benchmark, decides: measured ~1 ms on an idle
     * machine (the 100 ms of the issue); without eviction it would be
     * request_timeout_ms (120 s here). The bound leaves a loaded shared
     * machine 50 times the target. */
    cr_expect_lt(took, 5000, "a new client must not wait for idle connections to time out");
    wt_resp_free(&r);
    /* Reset, so that 10,000 client ports are not left in TIME_WAIT on a shared machine. */
    struct linger reset = {.l_onoff = 1, .l_linger = 0};
    for (int i = 0; i < FLOOD; i++) {
        setsockopt(fds[i], SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
        close(fds[i]);
    }
    free(fds);
    wt_finish(&s);
}

/* limits.max_connections_per_ip: past the cap a new connection from that
 * address is closed at accept; other addresses are served; a closed one
 * frees its place exactly once. Two loops: the count is shared. Metrics come
 * from the admin listener, which the cap never applies to (the test's own
 * scrapes come from the capped address). */
Test(admission, per_ip_cap_closes_at_accept, .timeout = 60)
{
#define PER_IP_CONF(cap)                                                                          \
    "threads = 2; listen = [\"127.0.0.1:0\"]; admin = { listen = \"127.0.0.1:0\"; };\n"              \
    "observability = { metrics = \"admin\"; };\n"                                                     \
    "limits = { max_connections_per_ip = " #cap "; request_timeout_ms = 60000; };\n"                   \
    "routes = ({ path = \"/hello\"; plugin = \"hello\"; dispatch = \"reactive\"; });\n"
    wt_server s = {0};
    wt_start(&s, PER_IP_CONF(3));
    wt_server admin = s;
    admin.port = s.admin_port;
    int fds[3];
    for (int i = 0; i < 3; i++) {
        fds[i] = connect_from("127.0.0.1", s.port);
        cr_assert_eq(hello_on(fds[i]), 200, "connection %d of 3 is within the cap", i + 1);
    }
    int fourth = connect_from("127.0.0.1", s.port);
    cr_expect_eq(hello_on(fourth), 0, "a 4th connection from 127.0.0.1 must be closed at accept");
    close(fourth);
    cr_expect_eq(wt_metric(&admin, "weft_connections_refused_total{reason=\"per_ip\"}"), 1);
    char *log = wt_wait_log(&s, "closing a new connection from 127.0.0.1 at accept", 5000);
    free(log);
    int other = connect_from("127.0.0.2", s.port);
    cr_expect_eq(hello_on(other), 200, "another address is not capped");
    close(other);
    /* One closes: once weft has seen it close (3 open: two of 127.0.0.1's
     * and the scrape itself), 127.0.0.1 has a place again, and one only. */
    close(fds[0]);
    wt_await_metric(&admin, "weft_connections_open", 0, 3, 10000);
    fds[0] = connect_from("127.0.0.1", s.port);
    cr_expect_eq(hello_on(fds[0]), 200, "a place freed by a close is reused");
    fourth = connect_from("127.0.0.1", s.port);
    cr_expect_eq(hello_on(fourth), 0, "the cap still holds: the refused connection was never counted");
    close(fourth);
    cr_expect_eq(wt_metric(&admin, "weft_connections_refused_total{reason=\"per_ip\"}"), 2);
    /* A reload changes the cap for new connections. */
    wt_write_conf(&s, PER_IP_CONF(4));
    cr_assert_eq(kill(s.pid, SIGHUP), 0);
    wt_await_metric(&admin, "weft_reloads_total{outcome=\"ok\"}", 1, 1, 10000);
    fourth = connect_from("127.0.0.1", s.port);
    cr_expect_eq(hello_on(fourth), 200, "a reload raised the cap to 4");
    close(fourth);
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    wt_finish(&s);
}

/* weft raises its soft RLIMIT_NOFILE to the hard limit (a shell's 1024 would
 * run out long before the default max_connections), and says so when even
 * the hard limit is below max_connections: descriptors would then run out
 * before idle connections are evicted. */
Test(admission, descriptor_limit_is_raised_and_a_low_one_reported, .timeout = 60)
{
    struct rlimit rl = {.rlim_cur = 1024, .rlim_max = 4096}; /* this test's own process: Criterion forks one */
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0, "setrlimit: %s", strerror(errno));
    wt_server s = {0};
    wt_start(&s, "threads = 1; listen = [\"127.0.0.1:0\"]; admin = false;\n"
                 "routes = ({ path = \"/hello\"; plugin = \"hello\"; dispatch = \"reactive\"; });\n");
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/limits", (int)s.pid);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    unsigned long soft = 0, hard = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "Max open files", 14) == 0)
            sscanf(line + 14, "%lu %lu", &soft, &hard);
    fclose(f);
    cr_expect_eq(soft, 4096, "soft limit %lu, hard %lu", soft, hard);
    char *log = wt_wait_log(&s, "only 4096 file descriptors allowed (RLIMIT_NOFILE) for limits.max_connections = 10000",
                            5000);
    free(log);
    wt_finish(&s);
}
