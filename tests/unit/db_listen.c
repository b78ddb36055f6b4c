/*
 * Tests for server/db/db_listen.c and db_notify.c (the db group's version
 * 2) without a PostgreSQL: libpq is the double of support/fakepq.h, whose
 * server delivers a notification to each connection that LISTENs on its
 * channel (wt_pq_notify). Under every policy: a request listens (the call
 * returns once the LISTEN is answered), gets its channel's notifications in
 * the order they were sent, and its registration ends with it (UNLISTEN);
 * after the listener's connection drops, the loop reconnects and LISTENs
 * again (counted); bad channel names and payloads over 7999 bytes are
 * refused before anything is sent; with pooler = "transaction" a listen
 * needs database.listen_conninfo.
 *
 * The test's plugin: "/t/CHANNEL-N" listens on CHANNEL and answers
 * "listen=RC got=P1,P2," once N notifications came (polling its own count
 * with the host's sleep); "/t/n:CHANNEL:LEN" notifies LEN bytes of 'x' and
 * answers "notify=RC".
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db.h"
#include "dbunit.h"
#include "dispatch/dispatch.h"
#include "dispatch/hostsync.h"
#include "fakepq.h"
#include "harness.h"
#include "unitloop.h"

TestSuite(db_listen, .fini = wt_db_stop, .timeout = 60);

typedef struct sub {
    pthread_mutex_t mu;
    char channel[80];
    int want, got, rc, polls;
    char seen[200];
} sub;

static void on_note(void *arg, const char *channel, const char *payload, size_t len)
{
    sub *s = arg;
    pthread_mutex_lock(&s->mu);
    cr_assert_str_eq(channel, s->channel);
    size_t at = strlen(s->seen);
    snprintf(s->seen + at, sizeof(s->seen) - at, "%.*s,", (int)len, payload);
    s->got++;
    pthread_mutex_unlock(&s->mu);
}

static int enough(sub *s)
{
    pthread_mutex_lock(&s->mu);
    int done = s->got >= s->want || ++s->polls > 2000; /* 10 s: answer what came */
    pthread_mutex_unlock(&s->mu);
    return done;
}

static void answer(weft_req *r, sub *s)
{
    pthread_mutex_lock(&s->mu);
    weft_request_res_printf(r, "listen=%d got=%s", s->rc, s->seen);
    pthread_mutex_unlock(&s->mu);
}

static const char *param_of(const weft_req *r) { return strrchr(r->path, '/') + 1; }

/* "n:CHANNEL:LEN": the notify call's outcome; NULL for a listen. */
static int notify_of(weft_req *r, weft_callback cb, int *rc)
{
    const char *p = param_of(r);
    if (strncmp(p, "n:", 2) != 0)
        return 0;
    char channel[80];
    const char *colon = strchr(p + 2, ':');
    snprintf(channel, sizeof(channel), "%.*s", (int)(colon - p - 2), p + 2);
    size_t len = strtoul(colon + 1, NULL, 10);
    char *payload = weft_req_alloc(r, len + 1);
    memset(payload, 'x', len);
    payload[len] = '\0';
    if (cb != NULL)
        weft_db_notify_async(r, channel, payload, cb, NULL);
    else
        *rc = weft_db_notify(r, channel, payload);
    return 1;
}

static sub *sub_new(weft_req *r)
{
    sub *s = weft_req_alloc(r, sizeof(*s));
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    const char *p = param_of(r), *dash = strrchr(p, '-');
    snprintf(s->channel, sizeof(s->channel), "%.*s", (int)(dash - p), p);
    s->want = atoi(dash + 1);
    return s;
}

static int listener_blocking(weft_req *r, void *state)
{
    (void)state;
    int rc;
    if (notify_of(r, NULL, &rc)) {
        weft_request_res_printf(r, "notify=%d", rc);
        return WEFT_OK;
    }
    sub *s = sub_new(r);
    s->rc = weft_db_listen(r, s->channel, on_note, s);
    while (s->rc == WEFT_OK && !enough(s))
        weft_hostsync_sleep_ms(r, 5);
    answer(r, s);
    return WEFT_OK;
}

static void on_notified(weft_req *r, void *arg, int rc)
{
    (void)arg;
    weft_request_res_printf(r, "notify=%d", rc);
    weft_dispatch_done(r, WEFT_OK);
}

static void on_poll(weft_req *r, void *arg, int rc)
{
    sub *s = arg;
    if (rc != WEFT_OK || s->rc != WEFT_OK || enough(s)) {
        answer(r, s);
        weft_dispatch_done(r, WEFT_OK);
        return;
    }
    weft_hostsync_sleep_async(r, 5, on_poll, s);
}

static void on_listened(weft_req *r, void *arg, int rc)
{
    sub *s = arg;
    s->rc = rc;
    on_poll(r, s, WEFT_OK);
}

static int listener_reactive(weft_req *r, void *state)
{
    (void)state;
    int rc;
    if (notify_of(r, on_notified, &rc))
        return WEFT_AGAIN;
    sub *s = sub_new(r);
    weft_db_listen_async(r, s->channel, on_note, s, on_listened, s);
    return WEFT_AGAIN;
}

static const weft_plugin listener = {WEFT_PLUGIN_HEADER, .name = "listener", .handle = listener_blocking,
                                     .handle_async = listener_reactive};

static void wait_listening(const char *channel, int n)
{
    double deadline = wt_now_ms() + 5000;
    while (wt_pq_listening(channel) != n && wt_now_ms() < deadline)
        usleep(1000);
    cr_assert_eq(wt_pq_listening(channel), n, "%d connection(s) listen on %s, not %d", wt_pq_listening(channel),
                 channel, n);
}

static void check_in_order(int policy)
{
    wt_db_start_with(&listener, policy, 0, 1);
    wt_pq_auto(1);
    wt_db_req(1, "room-3", 1);
    wait_listening("room", 1);
    cr_assert_eq(wt_pq_notify("other", "z"), 0, "no one listens on another channel");
    cr_assert_eq(wt_pq_notify("room", "a"), 1);
    wt_pq_notify("room", "b");
    wt_pq_notify("room", "c");
    const wt_done *d = wt_wait_done(1, 10000);
    cr_assert_str_eq(d[0].body, "listen=0 got=a,b,c,");
    cr_assert_eq(wt_db_gauge("weft_db_notifications_received_total"), 3);
    /* The request's end takes its registration with it, and the channel's LISTEN. */
    wait_listening("room", 0);
    wt_db_wait_gauge("weft_db_listen_channels", 0, 5000);
    cr_assert_eq(wt_pq_count(WT_PQ_BLOCKING_ON_LOOP), 0);
}

Test(db_listen, notifications_arrive_in_order_pool) { check_in_order(WEFT_DISPATCH_POOL); }
Test(db_listen, notifications_arrive_in_order_coroutine) { check_in_order(WEFT_DISPATCH_COROUTINE); }
Test(db_listen, notifications_arrive_in_order_reactive) { check_in_order(WEFT_DISPATCH_REACTIVE); }

/* Two requests on one channel: one LISTEN is enough for both, each gets every notification. */
Test(db_listen, two_listeners_share_the_loops_session)
{
    wt_db_start_with(&listener, WEFT_DISPATCH_COROUTINE, 0, 1);
    wt_pq_auto(1);
    wt_db_req(1, "room-2", 1);
    wt_db_req(2, "room-2", 1);
    wt_db_wait_gauge("weft_db_listen_channels", 1, 5000);
    wait_listening("room", 1);
    wt_pq_wait_count(WT_PQ_ANSWERED, 2, 5000); /* both LISTENs answered */
    wt_pq_notify("room", "a");
    wt_pq_notify("room", "b");
    const wt_done *d = wt_wait_done(2, 10000);
    cr_assert_str_eq(d[0].body, "listen=0 got=a,b,");
    cr_assert_str_eq(d[1].body, "listen=0 got=a,b,");
    cr_assert_eq(wt_pq_count(WT_PQ_CONNECTS), 1, "one listener connection on the loop");
}

static void check_relisten(int policy)
{
    wt_db_start_with(&listener, policy, 0, 1);
    wt_pq_auto(1);
    wt_db_req(1, "room-2", 1);
    wait_listening("room", 1);
    wt_pq_notify("room", "a");
    wt_db_wait_gauge("weft_db_notifications_received_total", 1, 5000); /* read before the drop */
    wt_pq_drop();
    /* Reconnected (after its 100 ms backoff) and listening again. */
    wt_db_wait_gauge("weft_db_listen_reconnects_total", 1, 5000);
    wait_listening("room", 1);
    wt_pq_notify("room", "b");
    const wt_done *d = wt_wait_done(1, 10000);
    cr_assert_str_eq(d[0].body, "listen=0 got=a,b,");
}

Test(db_listen, a_dropped_listener_reconnects_and_listens_again_coroutine)
{
    check_relisten(WEFT_DISPATCH_COROUTINE);
}

Test(db_listen, a_dropped_listener_reconnects_and_listens_again_reactive)
{
    check_relisten(WEFT_DISPATCH_REACTIVE);
}

Test(db_listen, a_dropped_listener_reconnects_and_listens_again_pool) { check_relisten(WEFT_DISPATCH_POOL); }

static void expect_body(int id, const char *param, const char *body)
{
    wt_db_req(id, param, 1);
    const wt_done *d = wt_wait_done(id, 5000);
    cr_assert_str_eq(d[id - 1].body, body, "%s answered \"%s\"", param, d[id - 1].body);
}

static void check_refusals(int policy)
{
    wt_db_start_with(&listener, policy, 0, 1);
    wt_pq_auto(1);
    char long_name[80];
    memset(long_name, 'a', 64);
    snprintf(long_name + 64, sizeof(long_name) - 64, "-1");
    expect_body(1, "1room-1", "listen=-1 got=");
    expect_body(2, "ro$om-1", "listen=-1 got=");
    expect_body(3, long_name, "listen=-1 got=");
    expect_body(4, "n:bad$name:1", "notify=-1");
    expect_body(5, "n:room:8000", "notify=-1");
    cr_assert_eq(wt_pq_count(WT_PQ_WRITTEN), 0, "nothing was sent for any of them");
    expect_body(6, "n:room:7999", "notify=0");
    cr_assert_str_eq(wt_pq_written_sql(), "SELECT", "pg_notify, as a statement");
}

Test(db_listen, bad_channels_and_payloads_are_refused_pool) { check_refusals(WEFT_DISPATCH_POOL); }
Test(db_listen, bad_channels_and_payloads_are_refused_coroutine) { check_refusals(WEFT_DISPATCH_COROUTINE); }
Test(db_listen, bad_channels_and_payloads_are_refused_reactive) { check_refusals(WEFT_DISPATCH_REACTIVE); }

Test(db_listen, a_transaction_pooler_needs_listen_conninfo)
{
    wt_db_pooler(WEFT_POOLER_TRANSACTION, 1);
    wt_db_start_with(&listener, WEFT_DISPATCH_COROUTINE, 0, 1);
    wt_pq_auto(1);
    expect_body(1, "room-1", "listen=-1 got=");
    cr_assert_eq(wt_pq_count(WT_PQ_ATTEMPTS), 0, "no listener connection was opened");
    expect_body(2, "n:room:3", "notify=0"); /* NOTIFY is a statement: fine through the pooler */
}
