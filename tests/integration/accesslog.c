/*
 * Every answer reaches the access log, those h2o writes itself included
 * (issue 30, item 10): a request h2o refuses before any handler sees it —
 * a broken request line, a header line without a colon, Content-Length with
 * Transfer-Encoding, a request head past h2o's size limit — is answered 400
 * from the host's fallback path, which weft's logger was not registered on.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confs.h"
#include "harness.h"
#include "rawhttp.h"

static wt_server srv;
static char access_log[400];

static void start(void)
{
    wt_write_conf(&srv, "");
    snprintf(access_log, sizeof(access_log), "%s/access.log", srv.dir);
    char conf[2048];
    snprintf(conf, sizeof(conf), "threads = 1;\n" WT_LISTEN " admin = false;\n"
             "log = { access_log = \"%s\"; };\nroutes = (" WT_HELLO_ROUTE ");\n", access_log);
    wt_start(&srv, conf);
}
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(accesslog, .init = start, .fini = stop, .timeout = 60);

/* Lines of the access log that contain `needle`. */
static int count_lines(const char *needle)
{
    char *text = wt_read_file(access_log);
    int n = 0;
    for (const char *p = text; p != NULL && (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    free(text);
    return n;
}

/* The access log has `want` lines with `needle`: poll with a deadline (the
 * line is written once h2o is done with the request, after the answer). */
static void wait_lines(const char *needle, int want)
{
    for (double t0 = wt_now_ms(); wt_now_ms() - t0 < 10000; usleep(20000)) /* poll */
        if (count_lines(needle) >= want)
            return;
    char *text = wt_read_file(access_log);
    cr_assert_fail("%d line(s) with '%s' never appeared in the access log:\n%s", want, needle,
                   text != NULL ? text : "(no file)");
}

static void refused(const char *what, const char *bytes, int *n400)
{
    wt_raw_resp r;
    wt_raw_send(srv.port, bytes, strlen(bytes), &r, 10000);
    cr_expect_eq(r.status, 400, "%s: %ld", what, r.status);
    wt_raw_free(&r);
    wait_lines("\" 400 ", ++*n400);
}

Test(accesslog, h2o_s_own_400s_are_logged)
{
    /* a request weft answers, first: the log works at all */
    wt_raw_resp r;
    wt_raw_http(srv.port, "GET", "/hello?logged", NULL, NULL, &r);
    cr_assert_eq(r.status, 200);
    wt_raw_free(&r);
    wait_lines("GET /hello?logged HTTP/1.1\" 200 ", 1);
    int n400 = count_lines("\" 400 ");
    refused("a broken request line", "GET /hello HTTP/1.1 trailing\r\nHost: x\r\n\r\n", &n400);
    refused("a header line without a colon", "GET /hello HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n", &n400);
    refused("Content-Length with Transfer-Encoding",
            "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            &n400);
    /* h2o's own limit on a request head (H2O_MAX_REQLEN, 417,792 bytes), never completed */
    size_t big = 430000;
    char *head = malloc(big + 64);
    int off = snprintf(head, big + 64, "GET /hello HTTP/1.1\r\nHost: x\r\nX-Pad: ");
    memset(head + off, 'a', big);
    head[off + big] = '\0';
    refused("a request head past h2o's limit", head, &n400);
    free(head);
}
