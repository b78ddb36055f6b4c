/*
 * The bad-input matrix, the request's shape: oversized heads and bodies,
 * content types, bodies where none belongs, methods, dot segments and slow
 * clients. Rows and invariants: badinput.h.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "badinput.h"

/* ---- oversized requests ---- */

Test(badinput, oversized_request_line_headers_and_body)
{
    static const row rows[] = {
        /* Within h2o's 417792-byte head: a target past limits.max_uri is weft's 414. */
        {"100 KiB path, no such route", "GET", "/hello/", NULL, NULL, G_PATH, 100 * 1024, 414, 0, NULL, NULL, NULL},
        {"100 KiB path parameter", "GET", "{P}/persons/name/", NULL, NULL, G_PATH, 100 * 1024, 414, 0, NULL, NULL,
         NULL},
        /* Within limits.max_uri, the plugin's own rule applies. */
        {"4 KiB path parameter", "GET", "{P}/persons/name/", NULL, NULL, G_PATH, 4 * 1024, 400, 0,
         "at most 255 characters", NULL, NULL},
        /* Past it: h2o's own 400, connection closed. */
        {"512 KiB request line", "GET", "/hello/", NULL, NULL, G_PATH, 512 * 1024, 400, 0, NULL, NULL, NULL},
        /* Within h2o's head, past limits.max_header_line (8 KiB): weft's 431. */
        {"200 KiB in one header", "GET", "/hello", NULL, NULL, G_HEADER_ONE, 200 * 1024, 431, 0, NULL, NULL, NULL},
        {"200 KiB in 200 headers (over 100 fields)", "GET", "/hello", NULL, NULL, G_HEADERS_MANY, 200, 400, 0, NULL,
         NULL, NULL},
        {"512 KiB header", "GET", "/hello", NULL, NULL, G_HEADER_ONE, 512 * 1024, 400, 0, NULL, NULL, NULL},
        {"body over max_body (Content-Length)", "POST", "{P}/persons", JSON, PERSON, G_BODY, 5000, 413, 0, NULL,
         NULL, NULL},
        {"body over max_body (chunked)", "POST", "{P}/persons", JSON, PERSON, G_CHUNKED, 5000, 413, 0, NULL, NULL,
         NULL},
        {"body over max_body on GET", "GET", "/hello", NULL, PERSON, G_BODY, 5000, 413, 0, NULL, NULL, NULL},
        {"body at max_body is fine", "POST", "/echo/1", NULL, "x", G_BODY, 4096, 200, 0, "body=x", NULL, NULL},
        {"negative Content-Length", "POST", "{P}/persons", JSON "Content-Length: -1\r\n", NULL, G_NONE, 0, 400, 0,
         NULL, NULL, NULL},
    };
    ROWS(rows);
    finish();
}

/* ---- content types ---- */

Test(badinput, content_type_missing_or_wrong_is_415)
{
    static const row rows[] = {
        {"no Content-Type", "POST", "{P}/persons", NULL, PERSON, G_NONE, 0, 415, 0, "application/json", NULL, NULL},
        {"text/plain", "POST", "{P}/persons", "Content-Type: text/plain\r\n", PERSON, G_NONE, 0, 415, 0,
         "application/json", NULL, NULL},
        {"form", "POST", "{P}/persons", "Content-Type: application/x-www-form-urlencoded\r\n", PERSON, G_NONE, 0,
         415, 0, "application/json", NULL, NULL},
        {"application/jsonx", "POST", "{P}/persons", "Content-Type: application/jsonx\r\n", PERSON, G_NONE, 0, 415,
         0, "application/json", NULL, NULL},
        {"empty Content-Type", "POST", "{P}/persons", "Content-Type: \r\n", PERSON, G_NONE, 0, 415, 0,
         "application/json", NULL, NULL},
        {"JSON but no body", "POST", "{P}/persons", JSON, "", G_NONE, 0, 400, 0, "invalid JSON", NULL, NULL},
    };
    ROWS(rows);
    finish();
}

/*
 * A body on GET has no defined meaning (RFC 9110 9.3.1): weft accepts it
 * within limits.max_body and the handlers ignore it — the answer is the same
 * as without it. Over max_body it is 413 like any other body.
 */
Test(badinput, body_on_get_is_ignored)
{
    wt_raw_resp a, b;
    http("GET", "/pool/persons/1?limit=1", NULL, NULL, &a);
    http("GET", "/pool/persons/1?limit=1", JSON, "{\"name\": \"x\", \"age\": 1, \"gender\": \"MALE\"}", &b);
    cr_assert_eq(a.status, 200, "%ld %s", a.status, a.body);
    cr_assert_eq(b.status, 200, "%ld %s", b.status, b.body);
    cr_assert_str_eq(a.body, b.body);
    wt_raw_free(&a);
    wt_raw_free(&b);
    static const row rows[] = {
        {"GET with a JSON body", "GET", "{P}/persons?limit=1", JSON, PERSON, G_NONE, 0, 200, 0, "[{", NULL, NULL},
        {"GET /hello with a body", "GET", "/hello", NULL, "ignored", G_NONE, 0, 200, 0, "hello", NULL, NULL},
        {"DELETE with a body", "DELETE", "{P}/persons/2147483647", NULL, "{}", G_NONE, 0, 404, 0, "not found", NULL,
         NULL},
    };
    ROWS(rows);
    finish();
}

/* ---- methods ---- */

Test(badinput, unknown_methods_are_405_with_allow)
{
    static const row rows[] = {
        {"BREW on a GET route", "BREW", "/hello", NULL, NULL, G_NONE, 0, 405, 0, NULL, NULL, "allow: GET, HEAD"},
        {"BREW on persons", "BREW", "{P}/persons", NULL, NULL, G_NONE, 0, 405, 0, NULL, NULL,
         "allow: GET, HEAD, POST"},
        {"PUT on an id", "PUT", "{P}/persons/1", JSON, PERSON, G_NONE, 0, 405, 0, NULL, NULL,
         "allow: GET, HEAD, DELETE"},
        {"lower-case get", "get", "/hello", NULL, NULL, G_NONE, 0, 405, 0, NULL, NULL, "allow: GET, HEAD"},
        {"BREW on no route", "BREW", "/teapot", NULL, NULL, G_NONE, 0, 404, 0, NULL, NULL, NULL},
        {"a 190-byte method", "MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM"
         "MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM",
         "/hello", NULL, NULL, G_NONE, 0, 405, 0, NULL, NULL, "allow: GET, HEAD"},
        {"HEAD is GET without a body", "HEAD", "/hello", NULL, NULL, G_NONE, 0, 200, 0, NULL, "hello", NULL},
    };
    ROWS(rows);
    finish();
}

/* ---- dot segments: resolved or refused, never a file, never another route by an encoded slash ---- */

Test(badinput, dot_segments_never_escape)
{
    static const row rows[] = {
        {"/echo/../hello", "GET", "/echo/../hello", NULL, NULL, G_NONE, 0, 200, 400, NULL, "param.id", NULL},
        {"../../etc/passwd", "GET", "/../../etc/passwd", NULL, NULL, G_NONE, 0, 404, 400, NULL, "root:", NULL},
        {"%2e%2e/etc/passwd", "GET", "/%2e%2e/%2e%2e/etc/passwd", NULL, NULL, G_NONE, 0, 404, 400, NULL, "root:",
         NULL},
        {"./ inside", "GET", "{P}/persons/./1", NULL, NULL, G_NONE, 0, 200, 400, NULL, NULL, NULL},
        {"/hello/..", "GET", "/hello/..", NULL, NULL, G_NONE, 0, 404, 400, NULL, "hello", NULL},
        /* An encoded slash is data: "..%2Fhello" is one segment, so it cannot climb to /hello. */
        {"..%2Fhello from a parameter", "GET", "/echo/..%2Fhello", NULL, NULL, G_NONE, 0, 200, 400, NULL, NULL,
         NULL},
        {"x/..%2Fhello", "GET", "/echo/x/..%2Fhello", NULL, NULL, G_NONE, 0, 404, 400, NULL, "param.id=hello", NULL},
        {"%2F..%2F in a literal", "GET", "/hello%2F..%2F..%2Fhello", NULL, NULL, G_NONE, 0, 404, 400, NULL, NULL,
         NULL},
    };
    ROWS(rows);
    /* "..%2Fhello" must not be answered by the /hello route */
    wt_raw_resp r;
    http("GET", "/echo/..%2Fhello", NULL, NULL, &r);
    cr_assert(strcmp(r.body, "hello") != 0, "/echo/..%%2Fhello reached /hello: %ld %s", r.status, r.body);
    wt_raw_free(&r);
    finish();
}

/* ---- slow clients ---- */

/*
 * Clients that trickle their headers a byte at a time are dropped once
 * limits.request_timeout_ms (1000 ms here) has passed since the request
 * began, however steadily they send; meanwhile everybody else is served
 * without delay.
 */
Test(badinput, slow_clients_are_dropped_others_served)
{
    enum { SLOW = 40 };
    int fds[SLOW];
    double closed_at[SLOW];
    double t0 = wt_now_ms();
    for (int i = 0; i < SLOW; i++) {
        fds[i] = wt_raw_connect(srv.port);
        fcntl(fds[i], F_SETFL, O_NONBLOCK);
        const char *start = "GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
        cr_assert_eq(send(fds[i], start, strlen(start), MSG_NOSIGNAL), (ssize_t)strlen(start));
        closed_at[i] = 0;
    }
    int open = SLOW, served = 0;
    double worst = 0;
    while (open > 0 && wt_now_ms() - t0 < 6000) {
        for (int i = 0; i < SLOW; i++) {
            if (closed_at[i] != 0)
                continue;
            char c;
            ssize_t n = recv(fds[i], &c, 1, 0);
            int gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
            if (!gone && send(fds[i], "s", 1, MSG_NOSIGNAL) < 0 && errno != EAGAIN)
                gone = 1;
            cr_assert(n <= 0 || c == 'H', "a slow client got an answer before its headers were complete");
            if (gone || n > 0) {
                closed_at[i] = wt_now_ms() - t0;
                close(fds[i]);
                open--;
            }
        }
        /* everybody else: served at once */
        double a = wt_now_ms();
        wt_raw_resp r;
        http("GET", "/hello", NULL, NULL, &r);
        cr_assert_eq(r.status, 200, "%ld", r.status);
        wt_raw_free(&r);
        double took = wt_now_ms() - a;
        worst = took > worst ? took : worst;
        served++;
        usleep(50000); /* the scenario: the slow clients trickle one byte every 50 ms */
    }
    cr_assert_eq(open, 0, "%d slow clients still connected after 6 s", open);
    for (int i = 0; i < SLOW; i++)
        cr_assert(closed_at[i] >= 900 && closed_at[i] < 3000, "slow client %d dropped after %.0f ms", i,
                  closed_at[i]);
    cr_assert_lt(worst, 500, "a normal request took %.0f ms while slow clients trickled", worst);
    cr_assert_gt(served, 10);
    assert_serving("slow clients");
    finish();
}

/* A half-sent body is answered 408 once it paused for ¾ of
 * request_timeout_ms (750 ms here), and the connection closes with the
 * answer, the rest of the body unread. */
Test(badinput, stalled_body_is_dropped)
{
    int fd = wt_raw_connect(srv.port);
    const char *req = "POST /echo/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\nonly part";
    cr_assert_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    double t0 = wt_now_ms();
    char buf[4096];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof(buf) - 1 && (n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    double took = wt_now_ms() - t0;
    close(fd);
    cr_assert(strncmp(buf, "HTTP/1.1 408", 12) == 0, "a stalled body got: %s", buf);
    cr_assert(took >= 700 && took < 3000, "a stalled body was held %.0f ms (n=%zd, %s)", took, n,
              n < 0 ? strerror(errno) : "closed");
    assert_serving("stalled body");
    finish();
}
