/*
 * A reactive handler that calls done() while its own waits are still on
 * their way (dispatch/await.h): each wait is stopped, its callback never
 * runs, the request's memory is not touched after it is freed (the ASan
 * suite would report it), and a lock it was queued for goes on to the next
 * waiter instead of to a request that is gone. And the callback forms from
 * a blocking-style handler are refused (a worker would start a loop's timer
 * from its own thread).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "rawhttp.h"

static const char *conf = "threads = 1;\n"
                          "listen = [\"127.0.0.1:0\"];\n"
                          "routes = (\n"
                          "  { path = \"/l\"; plugin = \"leaver\"; dispatch = \"reactive\"; },\n"
                          "  { path = \"/b\"; plugin = \"leaver\"; dispatch = \"reactive\"; stream_body = true; },\n"
                          "  { path = \"/pool\"; plugin = \"leaver\"; dispatch = \"pool\"; },\n"
                          "  { path = \"/coroutine\"; plugin = \"leaver\"; dispatch = \"coroutine\"; }\n"
                          ");\n";

static wt_server srv;
static void start(void) { wt_start(&srv, conf); }
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(leaver, .init = start, .fini = stop, .timeout = 120);

static void expect(const char *path, const char *body)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0, "%s", path);
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    cr_assert(strstr(r.body, body) != NULL, "%s answered '%s', wanted '%s'", path, r.body, body);
    wt_resp_free(&r);
}

/* count's own 300 ms sleep ends after every abandoned 100 ms one would have. */
static void no_stray_callbacks(void) { expect("/l?count=1", "callbacks 0"); }

Test(leaver, an_abandoned_sleep_and_descriptor_wait_never_call_back)
{
    for (int i = 0; i < 20; i++) {
        expect("/l?leave=sleep", "left");
        expect("/l?leave=fd", "left");
    }
    no_stray_callbacks();
    expect("/l?leave=fd", "left"); /* still serving */
}

static void *hold(void *arg)
{
    (void)arg;
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/l?hold=400", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    wt_resp_free(&r);
    return NULL;
}

/* Without the host's cleanup the lock went to the gone request's record at
 * unlock: the next waiter never got it (and the grant wrote freed memory). */
Test(leaver, a_lock_queued_for_by_a_gone_request_goes_to_the_next_waiter)
{
    pthread_t t;
    pthread_create(&t, NULL, hold, NULL);
    wt_wait_metric(&srv, "weft_inflight_requests", 1, 10000); /* the holder has the lock */
    for (int i = 0; i < 5; i++)
        expect("/l?leave=lock", "left");
    expect("/l?lock=1", "locked"); /* after the holder's unlock */
    pthread_join(t, NULL);
    expect("/l?lock=1", "locked");
    no_stray_callbacks();
}

Test(leaver, an_abandoned_body_read_never_calls_back)
{
    int fd = wt_raw_connect(srv.port);
    const char head[] = "POST /b?leave=body HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n";
    cr_assert_eq(write(fd, head, sizeof(head) - 1), (ssize_t)(sizeof(head) - 1));
    char buf[512] = "";
    size_t got = 0;
    while (got < sizeof(buf) - 1 && strstr(buf, "left") == NULL) {
        ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
        cr_assert_gt(n, 0, "no answer before the body ended (%zu bytes: %s)", got, buf);
        got += (size_t)n;
        buf[got] = '\0';
    }
    /* The rest of the body, then gone: nothing may call the handler now. */
    const char rest[] = "5\r\nhello\r\n0\r\n\r\n";
    (void)!write(fd, rest, sizeof(rest) - 1);
    close(fd);
    no_stray_callbacks();
}

/* rc -1: WEFT_ERROR, given to the callback before the call returned. */
Test(leaver, callback_forms_from_blocking_handlers_are_refused)
{
    const char *const policies[] = {"pool", "coroutine"};
    const char *const calls[] = {"sleep", "lock", "query"};
    for (int p = 0; p < 2; p++)
        for (int c = 0; c < 3; c++) {
            char path[64];
            snprintf(path, sizeof(path), "/%s?misuse=%s", policies[p], calls[c]);
            expect(path, "rc -1");
        }
    free(wt_wait_log(&srv, "with a callback outside a reactive handler", 5000));
}
