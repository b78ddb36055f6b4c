/*
 * Tests for server/http/bodybuf.c on a real loop's h2o (support/unitloop.h
 * wt_h1_connect): the loop's h2o handler takes streamed bodies, as http.c's
 * does, and hands a body still arriving to weft_bodybuf_collect with
 * max_body = 100 and a 300 ms pause limit; the "route" answers with what it
 * got. The test sends the head and the first part, waits until the
 * collector has the request (so the rest is certainly a later part), then
 * sends the rest: a body up to max_body, in parts, is served whole; past
 * it (in the first part, in a later one, chunked) the answer is 413 and
 * the connection ends (`connection: close`, and closed once the answer is
 * out, the rest of the body unread); a body that stops arriving is
 * answered 408, and a part that comes after it is dropped. Under /total
 * (max_body 1 MB) the bodies held together are bounded by TOTAL: one alone
 * may pass it, a second that would is refused with 503.
 */
#include "http/bodybuf.h"

#include <criterion/criterion.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "request/respond.h"
#include "unitloop.h"

enum { MAX_BODY = 100, PAUSE_MS = 300, TOTAL = 65536 };

static atomic_int collecting; /* the handler got a body still arriving */
static int client = -1;

static void teardown(void)
{
    if (client >= 0)
        close(client);
    wt_loops_stop();
}

TestSuite(http_bodybuf, .fini = teardown, .timeout = 60);

/* The route: how many bytes came, and how many of them were 'a' and 'b'. */
static int serve(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    size_t a = 0, b = 0;
    for (size_t i = 0; i < req->entity.len; i++) {
        a += req->entity.base[i] == 'a';
        b += req->entity.base[i] == 'b';
    }
    char text[64];
    snprintf(text, sizeof(text), "len=%zu a=%zu b=%zu", req->entity.len, a, b);
    weft_respond_text(req, 200, text);
    return 0;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    if (req->proceed_req == NULL)
        return serve(self, req); /* the body came whole (or none) */
    atomic_store(&collecting, 1);
    weft_bodybuf_limits lim = {.max_body = MAX_BODY, .total = SIZE_MAX, .idle_timeout_ms = PAUSE_MS};
    if (h2o_memis(req->path.base, req->path.len, H2O_STRLIT("/total")))
        lim = (weft_bodybuf_limits){.max_body = 1000000, .total = TOTAL, .idle_timeout_ms = 0};
    weft_bodybuf_collect(self, req, &lim, serve);
    return 0;
}

static void start(void)
{
    wt_loops_handler(on_req);
    wt_loops_start(1);
    client = wt_h1_connect(0);
}

static void send_str(const char *s, size_t n)
{
    /* MSG_NOSIGNAL: a server that refused may have closed already. */
    (void)!send(client, s, n, MSG_NOSIGNAL);
}

static void send_fill(char c, size_t n)
{
    char *b = malloc(n);
    cr_assert_not_null(b);
    memset(b, c, n);
    send_str(b, n);
    free(b);
}

static void wait_collecting(void)
{
    double deadline = wt_now_ms() + 5000;
    while (!atomic_load(&collecting) && wt_now_ms() < deadline)
        usleep(1000);
    cr_assert(atomic_load(&collecting), "the handler never got the body as a stream");
}

/* Reads one answer (its head and Content-Length bytes of body; 5 s at most); returns the status. */
static int answer(char *out, size_t size)
{
    size_t have = 0;
    for (;;) {
        out[have] = '\0';
        char *end = strstr(out, "\r\n\r\n");
        const char *cl = end != NULL ? strcasestr(out, "content-length:") : NULL;
        if (cl != NULL && have >= (size_t)(end + 4 - out) + strtoul(cl + 15, NULL, 10))
            break;
        struct pollfd p = {client, POLLIN, 0};
        cr_assert_eq(poll(&p, 1, 5000), 1, "no whole answer within 5 s; so far: %s", out);
        ssize_t n = recv(client, out + have, size - 1 - have, 0);
        cr_assert_gt(n, 0, "the connection closed before a whole answer: %s", out);
        have += (size_t)n;
        cr_assert_lt(have, size - 1, "answer too long");
    }
    int status = 0;
    cr_assert_eq(sscanf(out, "HTTP/1.%*d %d", &status), 1, "not an answer: %s", out);
    return status;
}

/* The server closes the connection, sending nothing more: within 2.5 s,
 * well before h2o's own 5 s I/O timeout would (the unit loop's h2o keeps
 * its defaults), so only weft's ending of the body passes. */
static void expect_closed(void)
{
    struct pollfd p = {client, POLLIN, 0};
    cr_assert_eq(poll(&p, 1, 2500), 1, "the connection is still open after 2.5 s");
    char c;
    cr_assert_leq(recv(client, &c, 1, 0), 0, "more bytes after the answer");
}

static void head_to(const char *path, const char *framing)
{
    char h[256];
    int n = snprintf(h, sizeof(h), "POST %s HTTP/1.1\r\nHost: unit\r\n%s\r\n", path, framing);
    send_str(h, (size_t)n);
}

static void head(const char *framing) { head_to("/upload", framing); }

Test(http_bodybuf, a_body_up_to_max_body_in_parts_is_served_whole)
{
    start();
    head("Content-Length: 100\r\nConnection: close\r\n");
    send_fill('a', 30);
    wait_collecting();
    send_fill('b', 70);
    char out[4096];
    cr_assert_eq(answer(out, sizeof(out)), 200, "%s", out);
    cr_assert_not_null(strstr(out, "len=100 a=30 b=70"), "%s", out);
    expect_closed(); /* as asked */
}

Test(http_bodybuf, a_later_part_past_max_body_is_413_and_the_connection_closes)
{
    start();
    head("Content-Length: 200\r\n"); /* keep-alive asked: the refusal closes anyway */
    send_fill('a', 50);
    wait_collecting();
    send_fill('b', 150);
    char out[4096];
    cr_assert_eq(answer(out, sizeof(out)), 413, "%s", out);
    cr_assert_not_null(strstr(out, "max_body"), "%s", out);
    expect_closed(); /* keep-alive was asked: the refusal ends the connection all the same */
}

Test(http_bodybuf, a_first_part_past_max_body_is_413_at_once)
{
    start();
    head("Content-Length: 300\r\n");
    send_fill('a', 150); /* the other 150 never come: the answer must not wait for them */
    char out[4096];
    cr_assert_eq(answer(out, sizeof(out)), 413, "%s", out);
    cr_assert_not_null(strcasestr(out, "connection: close"), "the connection ends with the answer: %s", out);
    expect_closed(); /* not left open, unread, until h2o's timeout */
}

Test(http_bodybuf, a_chunked_body_past_max_body_is_413)
{
    start();
    head("Transfer-Encoding: chunked\r\n");
    send_str("3c\r\n", 4);
    send_fill('a', 60);
    send_str("\r\n", 2);
    wait_collecting();
    send_str("3c\r\n", 4);
    send_fill('b', 60);
    send_str("\r\n0\r\n\r\n", 7);
    char out[4096];
    cr_assert_eq(answer(out, sizeof(out)), 413, "%s", out);
    cr_assert_not_null(strcasestr(out, "connection: close"), "the connection ends with the answer: %s", out);
}

Test(http_bodybuf, a_body_that_stops_arriving_is_408)
{
    start();
    double t0 = wt_now_ms(); /* before the pause can start */
    head("Content-Length: 80\r\n");
    send_fill('a', 10);
    wait_collecting();
    char out[4096];
    cr_assert_eq(answer(out, sizeof(out)), 408, "%s", out);
    double took = wt_now_ms() - t0;
    cr_assert_geq(took, PAUSE_MS, "408 only after the pause limit (%.0f ms)", took);
    cr_assert_not_null(strcasestr(out, "connection: close"), "the connection ends with the answer: %s", out);
}

/* After the 408 the collector had asked h2o for the next part: a part that
 * comes then is dropped (h2o once called a NULL write_req there and the
 * process died), and the connection closes. */
Test(http_bodybuf, a_part_after_the_408_is_dropped_and_the_connection_closes)
{
    start();
    head("Content-Length: 80\r\n");
    send_fill('a', 10);
    wait_collecting();
    char out[4096];
    cr_assert_eq(answer(out, sizeof(out)), 408, "%s", out);
    send_fill('b', 10);
    expect_closed();
}

/* Reads `fd`'s answer (whole, 5 s at most) through the one `answer` reader. */
static int answer_on(int fd, char *out, size_t size)
{
    int keep = client;
    client = fd;
    int status = answer(out, size);
    client = keep;
    return status;
}

static size_t held_on_loop;
static void read_held(void *arg)
{
    (void)arg;
    held_on_loop = weft_bodybuf_bytes();
}

/* One body alone may hold more than the total (a route's max_body above it
 * can still be met); a second body that would take the total past it gets
 * 503 with Retry-After, is counted, and the first goes on. Once both
 * requests are over nothing is held. */
Test(http_bodybuf, bodies_past_the_total_are_503_but_one_alone_passes)
{
    start();
    uint64_t refused0 = weft_bodybuf_refused_total();
    head_to("/total", "Content-Length: 200000\r\nConnection: close\r\n");
    send_fill('a', 1000);
    wait_collecting();
    send_fill('a', 99000); /* 100 kB: 128 KiB held, past the total, alone */
    double deadline = wt_now_ms() + 5000;
    do
        wt_on_loop(0, read_held, NULL);
    while (held_on_loop < 131072 && wt_now_ms() < deadline);
    cr_assert_eq(held_on_loop, 131072, "one body alone holds its 128 KiB");
    int second = wt_h1_connect(0);
    const char *h = "POST /total HTTP/1.1\r\nHost: unit\r\nContent-Length: 5000\r\n\r\nbbbb";
    (void)!send(second, h, strlen(h), MSG_NOSIGNAL);
    char out[4096];
    cr_assert_eq(answer_on(second, out, sizeof(out)), 503, "%s", out);
    cr_assert_not_null(strcasestr(out, "retry-after: 1"), "%s", out);
    cr_assert_not_null(strstr(out, "max_buffered_body_total"), "%s", out);
    cr_assert_eq(weft_bodybuf_refused_total(), refused0 + 1);
    close(second);
    send_fill('b', 100000);
    cr_assert_eq(answer(out, sizeof(out)), 200, "%s", out);
    cr_assert_not_null(strstr(out, "len=200000 a=100000 b=100000"), "%s", out);
    expect_closed();
    deadline = wt_now_ms() + 5000;
    do
        wt_on_loop(0, read_held, NULL);
    while (held_on_loop != 0 && wt_now_ms() < deadline);
    cr_assert_eq(held_on_loop, 0, "the bodies' bytes are given back with their requests");
}
