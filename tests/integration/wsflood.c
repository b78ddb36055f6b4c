/*
 * WebSocket memory charged to whoever causes it (issue 30, items 3 and 4;
 * tests/support/ws_flood.py): a peer that sends pings and never reads the
 * pongs is closed once they back up, and a broadcast to members that never
 * read closes them instead of queueing every message for each one
 * (websocket.max_queued_total, shared by every socket). The server's
 * resident memory stays bounded, and it keeps serving.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confs.h"
#include "harness.h"

static const char *conf = "threads = 2; " WT_LISTEN " admin = false;\n"
                          "pools = ({ name = \"default\"; size = 16; queue = 100; });\n"
                          "routes = (\n" WT_EACH_POLICY("/chat", "chat", " methods = [\"GET\"];") ",\n"
                          WT_HELLO_ROUTE "\n);\n";

static wt_server srv;
static void start(void) { wt_start(&srv, conf); }
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(wsflood, .init = start, .fini = stop, .timeout = 240);

static void run(const char *args, char *line, size_t size)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/support/ws_flood.py %s", WEFT_SOURCE_DIR, args);
    FILE *c = popen(cmd, "r");
    cr_assert_not_null(c);
    if (fgets(line, (int)size, c) == NULL)
        line[0] = '\0';
    cr_assert_eq(pclose(c), 0, "ws_flood.py %s: %s", args, line);
}

ParameterizedTestParameters(wsflood, ping_flood_closes_the_socket) { return wt_policy_params(); }

/* 250 MB of pings: the socket is closed long before (its pongs count
 * against its send queue), and memory does not follow the pings. */
ParameterizedTest(wt_policy *p, wsflood, ping_flood_closes_the_socket)
{
    long rss0 = wt_rss_kib(srv.pid);
    char args[128], line[256];
    snprintf(args, sizeof(args), "ping %d /%s/chat 250", srv.port, p->name);
    run(args, line, sizeof(line));
    long rss1 = wt_rss_kib(srv.pid);
    printf("wsflood %s: ping flood: %s; RSS %ld -> %ld KiB\n", p->name, line, rss0, rss1);
    cr_expect(strncmp(line, "closed=1", 8) == 0, "%s: the flooding socket is closed: %s", p->name, line);
    if (wt_rss_checked())
        cr_expect_lt(rss1 - rss0, 64 * 1024, "%s: RSS grew by %ld KiB", p->name, rss1 - rss0);
    cr_expect_geq(wt_metric(&srv, "weft_websocket_slow_closed_total"), 1);
}

/* 100 members that never read and 6 broadcasts of 1 MB: without a shared
 * budget each member would hold up to 4 MB (400 MB). A member whose queue
 * backs up while the process is at its budget is closed (1008); one whose
 * queue the kernel still drains just misses messages. The process holds at
 * most its budget (websocket.max_queued_total, 64 MiB) besides the kernel's
 * socket buffers. */
Test(wsflood, silent_members_are_dropped_not_fed)
{
    const char *policies[] = {"coroutine", "reactive"};
    long idle = wt_rss_kib(srv.pid);
    for (int i = 0; i < 2; i++) {
        long rss0 = wt_rss_kib(srv.pid);
        char args[128], line[256];
        snprintf(args, sizeof(args), "silent %d /%s/chat 100 1048576 6", srv.port, policies[i]);
        run(args, line, sizeof(line));
        long rss1 = wt_rss_kib(srv.pid);
        printf("wsflood %s: 100 silent members, 6 broadcasts of 1 MB: %s; RSS %ld -> %ld KiB\n", policies[i], line,
               rss0, rss1);
        int sent = 0, closed = -1;
        cr_assert_eq(sscanf(line, "sent=%d slow_closed=%d", &sent, &closed), 2, "%s", line);
        cr_expect_eq(sent, 6, "%s: the sender was served: %s", policies[i], line);
        cr_expect_geq(closed, 1, "%s: silent members were closed as slow readers: %s", policies[i], line);
        if (wt_rss_checked())
            cr_expect_lt(rss1 - rss0, 192 * 1024, "%s: RSS grew by %ld KiB", policies[i], rss1 - rss0);
    }
    /* After the attack the memory goes back to the system (ops/trim.c, every
     * 5 s): poll the server's RSS, with a deadline (kind (a)). */
    long rss = wt_rss_kib(srv.pid);
    double t0 = wt_now_ms();
    while (wt_rss_checked() && rss > 2 * idle && wt_now_ms() - t0 < 15000) {
        usleep(100000);
        rss = wt_rss_kib(srv.pid);
    }
    printf("wsflood: RSS back to %ld KiB (idle %ld KiB) %.0f ms after the attack; %g bytes trimmed\n", rss, idle,
           wt_now_ms() - t0, wt_metric(&srv, "weft_memory_trimmed_bytes_total"));
    if (wt_rss_checked())
        cr_expect_leq(rss, 2 * idle, "RSS %ld KiB, idle %ld KiB: not given back", rss, idle);
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/hello", NULL, &r), 0);
    cr_expect_eq(r.status, 200);
    wt_resp_free(&r);
}
