/*
 * Events across replicas: two weft processes on one PostgreSQL, the chat
 * and events plugins with `fanout = "postgres"` (PostgreSQL's LISTEN/NOTIFY
 * through the db group's version 2), under every policy.
 *
 *   - a chat member on A receives the messages posted to B, in B's order
 *     (tests/support/ws_client.py relay);
 *   - an events subscriber on A receives the events POSTed to B, in order,
 *     with ids counting from 1;
 *   - a listener connection that PostgreSQL drops is re-established and
 *     LISTENs again (logged, weft_db_listen_reconnects_total), and the next
 *     event arrives;
 *   - bad input: a payload over 7999 bytes is 413, a bad channel option
 *     fails `weft -t` with FILE:LINE, a transaction pooler without
 *     listen_conninfo is refused naming the setting.
 *
 * Channels carry the test process's id, so parallel runs never hear each
 * other.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define CLIENT "/usr/bin/python3 " WEFT_SOURCE_DIR "/tests/support/ws_client.py"

static void need_pg(void) { wt_need_pg(); }
TestSuite(fanout, .init = need_pg, .timeout = 180);

/* A and B: the same routes, each policy's chat and events fanned out on channels of this test process. */
static void start_pair(wt_server *a, wt_server *b)
{
    char conf[4096];
    int n = snprintf(conf, sizeof(conf), "threads = 2; listen = [\"127.0.0.1:0\"];\n"
                                         "pools = ( { name = \"default\"; size = 16; queue = 100; } );\n"
                                         "database = { statement_timeout_ms = 5000; };\n"
                                         "routes = (\n");
    for (int i = 0; i < 3; i++) {
        const char *p = wt_policies[i].name;
        n += snprintf(conf + n, sizeof(conf) - (size_t)n,
                      "  { path = \"/%s/chat\"; plugin = \"chat\"; dispatch = \"%s\";\n"
                      "    options = { fanout = \"postgres\"; channel = \"chat_%d_%s\"; }; },\n"
                      "  { path = \"/%s/events\"; plugin = \"events\"; dispatch = \"%s\"; methods = [\"GET\", \"POST\"];\n"
                      "    options = { fanout = \"postgres\"; channel = \"ev_%d_%s\"; }; }%s\n",
                      p, p, (int)getpid(), p, p, p, (int)getpid(), p, i < 2 ? "," : "");
    }
    snprintf(conf + n, sizeof(conf) - (size_t)n, ");\n");
    wt_start(a, conf);
    wt_start(b, conf);
}

ParameterizedTestParameters(fanout, a_chat_member_on_a_hears_b_in_order) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, fanout, a_chat_member_on_a_hears_b_in_order)
{
    wt_server a = {0}, b = {0};
    start_pair(&a, &b);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "timeout 120 " CLIENT " relay ws://127.0.0.1:%d/%s/chat ws://127.0.0.1:%d/%s/chat 300 2>&1", a.port,
             p->name, b.port, p->name);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    char line[512] = "(no output)";
    if (fgets(line, sizeof(line), f) == NULL)
        strcpy(line, "(no output)");
    pclose(f);
    line[strcspn(line, "\n")] = '\0';
    cr_assert_str_eq(line, "ok 300 in order", "%s", line);
    wt_finish(&a);
    wt_finish(&b);
}

/* ---- an events subscriber over a raw socket ---- */

typedef struct rx {
    int fd;
    char buf[65536];
    size_t len;
} rx;

/* Reads until `needle` arrived (fails the test after limit_ms). */
static void read_until(rx *r, const char *needle, double limit_ms)
{
    double deadline = wt_now_ms() + limit_ms;
    while (strstr(r->buf, needle) == NULL) {
        double left = deadline - wt_now_ms();
        cr_assert_gt(left, 0, "no \"%s\" within %.0f ms; got:\n%s", needle, limit_ms, r->buf);
        struct pollfd pfd = {r->fd, POLLIN, 0};
        if (poll(&pfd, 1, (int)left + 1) <= 0)
            continue;
        ssize_t n = read(r->fd, r->buf + r->len, sizeof(r->buf) - 1 - r->len);
        cr_assert_gt(n, 0, "the stream ended before \"%s\": %s", needle, n < 0 ? strerror(errno) : "EOF");
        r->len += (size_t)n;
        r->buf[r->len] = '\0';
    }
}

static void subscribe(rx *r, const wt_server *s, const char *policy, int count)
{
    char path[128];
    snprintf(path, sizeof(path), "/%s/events?count=%d", policy, count);
    r->fd = wt_send_get(s, path);
    r->len = 0;
    r->buf[0] = '\0';
    read_until(r, "event: ready", 15000); /* the channel is listened to from here on */
}

static void publish(const wt_server *s, const char *policy, const char *event, long want)
{
    char path[128];
    snprintf(path, sizeof(path), "/%s/events", policy);
    wt_resp r;
    cr_assert_eq(wt_http_typed(s, "POST", path, "text/plain", event, &r), 0);
    cr_assert_eq(r.status, want, "POST %s: %ld %s", path, r.status, r.body);
    wt_resp_free(&r);
}

/* "id: K\ndata: m-K" for K = 1..n, in this order. */
static void expect_in_order(const rx *r, int n)
{
    const char *at = r->buf;
    for (int k = 1; k <= n; k++) {
        char want[64];
        snprintf(want, sizeof(want), "id: %d\ndata: m-%d\n", k, k);
        const char *found = strstr(at, want);
        cr_assert_not_null(found, "event %d is missing or out of order in:\n%s", k, r->buf);
        at = found + strlen(want);
    }
}

ParameterizedTestParameters(fanout, an_events_subscriber_on_a_gets_what_b_publishes) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, fanout, an_events_subscriber_on_a_gets_what_b_publishes)
{
    wt_server a = {0}, b = {0};
    start_pair(&a, &b);
    rx *r = calloc(1, sizeof(*r));
    subscribe(r, &a, p->name, 20);
    for (int k = 1; k <= 20; k++) {
        char ev[32];
        snprintf(ev, sizeof(ev), "m-%d", k);
        publish(&b, p->name, ev, 200);
    }
    read_until(r, "data: m-20\n", 15000);
    expect_in_order(r, 20);
    close(r->fd);
    free(r);
    /* The subscriber's handler ends with its stream: nothing in flight on A. */
    wt_wait_metric_eq(&a, "weft_inflight_requests", 0, 10000);
    wt_finish(&a);
    wt_finish(&b);
}

ParameterizedTestParameters(fanout, a_dropped_listener_listens_again) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, fanout, a_dropped_listener_listens_again)
{
    wt_server a = {0}, b = {0};
    start_pair(&a, &b);
    rx *r = calloc(1, sizeof(*r));
    subscribe(r, &a, p->name, 2);
    publish(&b, p->name, "m-1", 200);
    read_until(r, "data: m-1\n", 15000);
    /* PostgreSQL ends A's listener session (as a restart or a network cut would). */
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query LIKE 'LISTEN %%ev_%d_%s%%'",
             (int)getpid(), p->name);
    cr_assert_geq(wt_sql_value(sql), 1, "no listener session found");
    free(wt_wait_log(&a, "connection re-established; LISTEN again on 1 channel(s)", 15000));
    wt_wait_metric(&a, "weft_db_listen_reconnects_total", 1, 10000);
    /* LISTENed again once its statement was answered: wait for that on the server's side. */
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %%ev_%d_%s%%' AND state = 'idle'",
             (int)getpid(), p->name);
    for (double t0 = wt_now_ms(); wt_sql_value(sql) < 1; usleep(20000))
        cr_assert_lt(wt_now_ms() - t0, 10000, "the listener did not LISTEN again");
    publish(&b, p->name, "m-2", 200);
    read_until(r, "data: m-2\n", 15000);
    expect_in_order(r, 2);
    close(r->fd);
    free(r);
    wt_finish(&a);
    wt_finish(&b);
}

Test(fanout, an_event_over_the_payload_limit_is_413)
{
    wt_server a = {0}, b = {0};
    start_pair(&a, &b);
    char *big = malloc(8001);
    memset(big, 'x', 8000);
    big[8000] = '\0';
    for (int i = 0; i < 3; i++)
        publish(&a, wt_policies[i].name, big, 413);
    big[7999] = '\0'; /* 7999 bytes: the largest NOTIFY payload */
    for (int i = 0; i < 3; i++)
        publish(&a, wt_policies[i].name, big, 200);
    free(big);
    wt_finish(&a);
    wt_finish(&b);
}

Test(fanout, a_bad_channel_option_fails_the_check_with_its_line)
{
    wt_server s = {0};
    wt_write_conf(&s, "listen = [\"127.0.0.1:0\"];\n"
                      "routes = (\n"
                      "  { path = \"/e\"; plugin = \"events\"; dispatch = \"coroutine\";\n"
                      "    options = { fanout = \"postgres\"; channel = \"no-dashes\"; }; }\n"
                      ");\n");
    char *out = NULL;
    const char *const args[] = {"-t", "-c", s.conf, NULL};
    int st = wt_run(&out, args, NULL);
    cr_assert_neq(st, 0, "weft -t accepted it:\n%s", out);
    cr_assert(strstr(out, ":3:") != NULL && strstr(out, "channel: 'no-dashes' is not a channel name") != NULL,
              "%s", out);
    free(out);
    wt_rm_rf(s.dir);
}

/* A transaction pooler hands LISTEN's session away after each statement: refused, naming the setting. */
Test(fanout, listening_through_a_transaction_pooler_needs_listen_conninfo)
{
    wt_server s = {0};
    wt_startf(&s, "threads = 1; listen = [\"127.0.0.1:0\"];\n"
                  "database = { pooler = \"transaction\"; };\n"
                  "routes = ( { path = \"/e\"; plugin = \"events\"; dispatch = \"coroutine\";\n"
                  "             options = { fanout = \"postgres\"; channel = \"ev_%d_tx\"; }; } );\n",
              (int)getpid());
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/e", NULL, &r), 0);
    cr_assert_eq(r.status, 500, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    free(wt_wait_log(&s, "set database.listen_conninfo to a direct (or session-pooled) connection", 10000));
    wt_finish(&s);
}
