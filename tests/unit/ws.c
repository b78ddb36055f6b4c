/*
 * Tests for server/ws/ws.c (with the framing of Debian's libwslay under
 * h2o's websocket.c) without a server process: the test's client is one
 * end of a loopback TCP connection whose other end is an HTTP/1 connection
 * of a real loop's h2o (support/unitloop.h wt_h1_connect). The loop's h2o handler turns the
 * upgrade request into a weft_req of a route with websocket.max_message =
 * 1024 and dispatches it; the plugin accepts and echoes (ws_recv under
 * coroutine, ws_on_message under reactive) and records the close code it
 * saw. Checked: echo; a fragmented message with a ping between its
 * fragments (the pong comes first, then one message); pongs reach the
 * handler; an unmasked frame, reserved bits, an unknown opcode close with
 * 1002, a long or fragmented control frame fails the connection (wslay's
 * frame layer: no close frame); a message past max_message
 * with 1009 (in one frame or across fragments); invalid UTF-8 text with
 * 1007; the close handshake in both directions; a client that vanishes
 * ends the handler with 1006; a silent peer is closed with 1001 after
 * websocket.idle_timeout_s, and one that reads nothing while the handler
 * sends is refused past its send queue bound and closed with 1008.
 */
#include "ws/ws.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dispatch/dispatch.h"
#include "harness.h"
#include "request/request.h"
#include "unitloop.h"

static wt_route rt;
static weft_ws_cfg wcfg = {.max_message = 1024, .idle_timeout_s = 60, .max_queued_total = 1 << 20};
static int client = -1, next_id;

static void teardown(void)
{
    if (client >= 0)
        close(client);
    wt_loops_stop();
    wt_route_fini(&rt);
}

TestSuite(ws, .fini = teardown, .timeout = 60);

/* ---- the plugin: echo, "ping" makes it ping, "quit" makes it close with 4000,
 * "flood" makes it send 1000-byte messages until a send is refused ---- */

static atomic_int flood_rc, flood_sent;

static void flood(weft_ws *ws)
{
    static const char chunk[1000];
    int rc = WEFT_OK, n = 0;
    while (rc == WEFT_OK && n < 100000) {
        rc = weft_ws_ws_send(ws, WEFT_WS_BINARY, chunk, sizeof(chunk));
        n += rc == WEFT_OK;
    }
    atomic_store(&flood_rc, rc); /* first: the test reads flood_rc once either is set */
    atomic_store(&flood_sent, n);
}

static void reply(weft_ws *ws, int type, const void *data, size_t len)
{
    char b[160];
    if (type == WEFT_WS_TEXT && len == 5 && memcmp(data, "flood", 5) == 0) {
        flood(ws);
    } else if (type == WEFT_WS_PONG) {
        int n = snprintf(b, sizeof(b), "pong:%.*s", (int)len, (const char *)data);
        weft_ws_ws_send(ws, WEFT_WS_TEXT, b, (size_t)n);
    } else if (type == WEFT_WS_TEXT && len == 4 && memcmp(data, "quit", 4) == 0) {
        weft_ws_ws_close(ws, 4000, "bye");
    } else if (type == WEFT_WS_TEXT && len == 4 && memcmp(data, "ping", 4) == 0) {
        weft_ws_ws_send(ws, WEFT_WS_PING, "srv", 3);
    } else {
        weft_ws_ws_send(ws, type, data, len);
    }
}

static int echo_blocking(weft_req *r, void *state)
{
    (void)state;
    weft_ws *ws = weft_ws_ws_accept(r);
    if (ws == NULL) {
        weft_request_res_printf(r, "refused");
        return WEFT_OK;
    }
    for (;;) {
        int type;
        const void *data;
        size_t len;
        if (weft_ws_ws_recv(ws, -1, &type, &data, &len) != WEFT_OK) {
            weft_request_res_printf(r, "closed %zu", len);
            return WEFT_OK;
        }
        reply(ws, type, data, len);
    }
}

static void on_message(weft_ws *ws, void *arg, int type, const void *data, size_t len)
{
    if (type == WEFT_WS_CLOSE)
        weft_request_res_printf(arg, "closed %zu", len); /* the host completes the request next */
    else
        reply(ws, type, data, len);
}

static int echo_reactive(weft_req *r, void *state)
{
    (void)state;
    weft_ws *ws = weft_ws_ws_accept(r);
    if (ws == NULL) {
        weft_request_res_printf(r, "refused");
        return WEFT_OK;
    }
    weft_ws_ws_on_message(ws, on_message, r);
    return WEFT_AGAIN;
}

static const weft_plugin echo = {WEFT_PLUGIN_HEADER, .name = "echo", .handle = echo_blocking,
                                 .handle_async = echo_reactive};

/* The loop's h2o handler: what http/ does for a route, reduced to the link ws.c takes over. */
static int on_h2o_req(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    weft_req *r = wt_req_new(&rt, 0, ++next_id);
    weft_req_link *link = h2o_mem_alloc_pool(&req->pool, weft_req_link, 1);
    *link = (weft_req_link){.req = req, .wr = r};
    r->link = link;
    r->hreq = req;
    weft_dispatch_start(r);
    return 0;
}

/* ---- the client ---- */

static char inbuf[8192];
static size_t in_len;

/* Reads more into inbuf; 0 at EOF (or a reset: the server closed with the
 * client's close reply unread). Fails the test when nothing comes within 5 s. */
static int fill(void)
{
    struct pollfd p = {client, POLLIN, 0};
    cr_assert_eq(poll(&p, 1, 5000), 1, "the server sent nothing within 5 s");
    ssize_t n = read(client, inbuf + in_len, sizeof(inbuf) - in_len);
    if (n < 0 && errno == ECONNRESET)
        return 0;
    cr_assert_geq(n, 0, "read: %s", strerror(errno));
    in_len += (size_t)n;
    return n > 0;
}

static void consume(size_t n)
{
    memmove(inbuf, inbuf + n, in_len - n);
    in_len -= n;
}

static void send_all(const void *b, size_t n)
{
    cr_assert_eq(write(client, b, n), (ssize_t)n);
}

static void start(weft_dispatch policy)
{
    wt_route_init(&rt, &echo, policy, 2, 10);
    rt.route.ws_cfg = &wcfg;
    weft_ws_attach();
    wt_loops_handler(on_h2o_req);
    wt_loops_start(1);
    client = wt_h1_connect(0);
    static const char hs[] = "GET /ws HTTP/1.1\r\nHost: unit\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    send_all(hs, sizeof(hs) - 1);
    char *end;
    while ((end = memmem(inbuf, in_len, "\r\n\r\n", 4)) == NULL)
        cr_assert(fill(), "closed during the handshake");
    *end = '\0';
    cr_assert_eq(strncmp(inbuf, "HTTP/1.1 101", 12), 0, "not upgraded: %s", inbuf);
    cr_assert_not_null(strstr(inbuf, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "RFC 6455's accept key: %s", inbuf);
    consume((size_t)(end + 4 - inbuf));
}

/* A client frame: masked unless told, with `rsv` in bits 4-6 of the first byte. */
static size_t frame(uint8_t *out, int fin, int rsv, int opcode, int masked, const void *payload, size_t len)
{
    static const uint8_t key[4] = {0x12, 0x34, 0x56, 0x78};
    size_t at = 0;
    out[at++] = (uint8_t)((fin ? 0x80 : 0) | (rsv << 4) | opcode);
    uint8_t m = masked ? 0x80 : 0;
    if (len < 126) {
        out[at++] = m | (uint8_t)len;
    } else {
        out[at++] = m | 126;
        out[at++] = (uint8_t)(len >> 8);
        out[at++] = (uint8_t)len;
    }
    if (masked) {
        memcpy(out + at, key, 4);
        at += 4;
    }
    for (size_t i = 0; i < len; i++)
        out[at + i] = ((const uint8_t *)payload)[i] ^ (masked ? key[i % 4] : 0);
    return at + len;
}

static void send_frame(int fin, int rsv, int opcode, int masked, const void *payload, size_t len)
{
    uint8_t b[4096];
    send_all(b, frame(b, fin, rsv, opcode, masked, payload, len));
}

typedef struct rframe {
    int fin, opcode;
    size_t len;
    char data[4096];
} rframe;

/* The server's next frame (unmasked, as a server's must be). */
static void read_frame(rframe *f)
{
    for (;;) {
        if (in_len >= 2) {
            size_t hl = 2, len = (uint8_t)inbuf[1] & 0x7f;
            cr_assert_eq((uint8_t)inbuf[1] & 0x80, 0, "a server frame is never masked");
            if (len == 126 && in_len >= 4) {
                len = ((size_t)(uint8_t)inbuf[2] << 8) | (uint8_t)inbuf[3];
                hl = 4;
            }
            cr_assert_neq(len, 127);
            if (len != 126 && in_len >= hl + len) {
                f->fin = (uint8_t)inbuf[0] >> 7;
                f->opcode = inbuf[0] & 0x0f;
                f->len = len;
                memcpy(f->data, inbuf + hl, len);
                f->data[len] = '\0';
                consume(hl + len);
                return;
            }
        }
        cr_assert(fill(), "the connection closed before a whole frame");
    }
}

static void expect_frame(int opcode, const char *payload)
{
    rframe f;
    read_frame(&f);
    cr_assert_eq(f.opcode, opcode, "opcode %d, not %d (payload \"%s\")", f.opcode, opcode, f.data);
    cr_assert(f.fin);
    cr_assert_str_eq(f.data, payload);
}

/* The server's close frame with `code` (after at most `skip` other frames); the client answers it, and the
 * server closes the connection. */
static void expect_close_after(int code, int skip)
{
    rframe f;
    read_frame(&f);
    while (f.opcode != 8 && skip-- > 0)
        read_frame(&f);
    cr_assert_eq(f.opcode, 8, "a close frame, not opcode %d (\"%s\")", f.opcode, f.data);
    cr_assert_geq(f.len, 2);
    int got = ((uint8_t)f.data[0] << 8) | (uint8_t)f.data[1];
    cr_assert_eq(got, code, "close code %d, not %d", got, code);
    uint8_t b[2] = {(uint8_t)(code >> 8), (uint8_t)code};
    send_frame(1, 0, 8, 1, b, 2);
    while (fill())
        ;
}

static void expect_close(int code) { expect_close_after(code, 0); }

/* The handler ended and recorded the close code it saw. */
static void expect_ended(int code)
{
    char want[32];
    snprintf(want, sizeof(want), "closed %d", code);
    const wt_done *d = wt_wait_done(1, 5000);
    cr_assert_str_eq(d[0].body, want);
    cr_assert_eq(d[0].status, 101);
}

/* The client leaves; the handler sees 1006 and its request completes (before the loop stops). */
static void leave(void)
{
    close(client);
    client = -1;
    expect_ended(1006);
}

/* ---- messages ---- */

static void check_echo(weft_dispatch policy)
{
    start(policy);
    send_frame(1, 0, WEFT_WS_TEXT, 1, "hello", 5);
    expect_frame(WEFT_WS_TEXT, "hello");
    send_frame(1, 0, WEFT_WS_BINARY, 1, "bin", 3);
    expect_frame(WEFT_WS_BINARY, "bin");
    leave();
    wt_loops_stop();
}

Test(ws, a_coroutine_echoes_and_a_vanished_client_ends_it_with_1006) { check_echo(WEFT_DISPATCH_COROUTINE); }
Test(ws, a_reactive_handler_echoes_and_a_vanished_client_ends_it_with_1006) { check_echo(WEFT_DISPATCH_REACTIVE); }
Test(ws, a_worker_echoes_and_a_vanished_client_ends_it_with_1006) { check_echo(WEFT_DISPATCH_POOL); }

static void check_fragments(weft_dispatch policy)
{
    start(policy);
    uint8_t b[512];
    size_t n = frame(b, 0, 0, WEFT_WS_TEXT, 1, "hel", 3);
    n += frame(b + n, 1, 0, WEFT_WS_PING, 1, "p1", 2); /* a control frame may come between fragments */
    n += frame(b + n, 0, 0, 0, 1, "lo ", 3);
    n += frame(b + n, 1, 0, 0, 1, "world", 5);
    send_all(b, n);
    expect_frame(WEFT_WS_PONG, "p1");
    expect_frame(WEFT_WS_TEXT, "hello world");
    send_frame(1, 0, WEFT_WS_PONG, 1, "x", 1); /* an unsolicited pong reaches the handler */
    expect_frame(WEFT_WS_TEXT, "pong:x");
    send_frame(1, 0, WEFT_WS_TEXT, 1, "ping", 4);
    expect_frame(WEFT_WS_PING, "srv");
    send_frame(1, 0, WEFT_WS_PONG, 1, "srv", 3);
    expect_frame(WEFT_WS_TEXT, "pong:srv");
    leave();
    wt_loops_stop();
}

Test(ws, coroutine_fragments_with_a_ping_between_make_one_message) { check_fragments(WEFT_DISPATCH_COROUTINE); }
Test(ws, reactive_fragments_with_a_ping_between_make_one_message) { check_fragments(WEFT_DISPATCH_REACTIVE); }

/* ---- the close handshake ---- */

static void check_client_close(weft_dispatch policy)
{
    start(policy);
    uint8_t b[6] = {0x03, 0xe8, 'd', 'o', 'n', 'e'}; /* 1000 "done" */
    send_frame(1, 0, 8, 1, b, sizeof(b));
    rframe f;
    read_frame(&f);
    cr_assert_eq(f.opcode, 8, "the close is answered with a close");
    cr_assert_eq(((uint8_t)f.data[0] << 8) | (uint8_t)f.data[1], 1000);
    while (fill()) /* then the server closes the connection */
        ;
    expect_ended(1000);
    wt_loops_stop();
}

Test(ws, a_client_close_is_answered_and_ends_a_coroutine) { check_client_close(WEFT_DISPATCH_COROUTINE); }
Test(ws, a_client_close_is_answered_and_ends_a_reactive_handler) { check_client_close(WEFT_DISPATCH_REACTIVE); }

Test(ws, the_handler_close_reaches_the_client_with_its_code)
{
    start(WEFT_DISPATCH_COROUTINE);
    send_frame(1, 0, WEFT_WS_TEXT, 1, "quit", 4);
    expect_close(4000);
    expect_ended(4000);
    wt_loops_stop();
}

/* ---- what the peer may not send ---- */

static void check_refused(int code, int fin, int rsv, int opcode, int masked, const void *payload, size_t len)
{
    start(WEFT_DISPATCH_COROUTINE);
    send_frame(fin, rsv, opcode, masked, payload, len);
    expect_close(code);
    wt_wait_done(1, 5000);
    wt_loops_stop();
}

Test(ws, an_unmasked_client_frame_is_closed_with_1002) { check_refused(1002, 1, 0, WEFT_WS_TEXT, 0, "hi", 2); }
Test(ws, reserved_bits_are_closed_with_1002) { check_refused(1002, 1, 4, WEFT_WS_TEXT, 1, "hi", 2); }
Test(ws, an_unknown_opcode_is_closed_with_1002) { check_refused(1002, 1, 0, 3, 1, "hi", 2); }
/* A control frame that is fragmented or longer than 125 bytes is refused by
 * wslay's frame layer, below its close handshake: the connection is failed
 * without a close frame (RFC 6455 7.1.7 says SHOULD send one; wslay and
 * h2o's websocket.c do not), nothing reaches the handler, which ends with 1006. */
static void check_failed(int fin, const void *payload, size_t len)
{
    start(WEFT_DISPATCH_COROUTINE);
    send_frame(fin, 0, WEFT_WS_PING, 1, payload, len);
    while (fill())
        ;
    cr_assert_eq(in_len, 0, "no frame before the close (%zu bytes)", in_len);
    expect_ended(1006);
    wt_loops_stop();
}

Test(ws, a_fragmented_ping_fails_the_connection) { check_failed(0, "p", 1); }

Test(ws, a_ping_over_125_bytes_fails_the_connection)
{
    char big[126];
    memset(big, 'p', sizeof(big));
    check_failed(1, big, sizeof(big));
}

Test(ws, invalid_utf8_text_is_closed_with_1007) { check_refused(1007, 1, 0, WEFT_WS_TEXT, 1, "a\xff\xfe", 3); }

Test(ws, a_frame_over_max_message_is_closed_with_1009)
{
    static char big[1025];
    memset(big, 'b', sizeof(big));
    check_refused(1009, 1, 0, WEFT_WS_BINARY, 1, big, sizeof(big));
}

Test(ws, fragments_adding_up_past_max_message_are_closed_with_1009)
{
    start(WEFT_DISPATCH_COROUTINE);
    static char part[600];
    memset(part, 'f', sizeof(part));
    send_frame(0, 0, WEFT_WS_BINARY, 1, part, sizeof(part));
    send_frame(1, 0, 0, 1, part, sizeof(part)); /* 1200 bytes in all */
    expect_close(1009);
    wt_wait_done(1, 5000);
    wt_loops_stop();
}

Test(ws, a_message_of_exactly_max_message_is_delivered)
{
    start(WEFT_DISPATCH_COROUTINE);
    static char whole[1025];
    memset(whole, 'w', 1024);
    send_frame(1, 0, WEFT_WS_TEXT, 1, whole, 1024);
    expect_frame(WEFT_WS_TEXT, whole);
    leave();
    wt_loops_stop();
}

/* ---- the socket's own limits ---- */

Test(ws, a_silent_peer_is_closed_with_1001_after_the_idle_timeout)
{
    wcfg.idle_timeout_s = 1;
    start(WEFT_DISPATCH_COROUTINE);
    double t0 = wt_now_ms();
    expect_close(1001);
    cr_assert_geq(wt_now_ms() - t0, 900, "not before websocket.idle_timeout_s");
    expect_ended(1001);
    wt_loops_stop();
}

/* The peer reads nothing while the handler sends: past the socket's send
 * queue bound (4 x max_message + 64 KiB queued in weft and h2o, after the
 * kernel's buffers filled) the send is refused and the socket closed 1008. */
Test(ws, a_peer_that_does_not_read_is_closed_with_1008)
{
    start(WEFT_DISPATCH_COROUTINE);
    send_frame(1, 0, WEFT_WS_TEXT, 1, "flood", 5);
    double deadline = wt_now_ms() + 10000;
    while (atomic_load(&flood_sent) == 0 && atomic_load(&flood_rc) == 0 && wt_now_ms() < deadline)
        usleep(1000); /* poll of the handler's own record of the flood's end */
    cr_assert_eq(atomic_load(&flood_rc), WEFT_UNAVAILABLE, "a send past the queue bound is refused (after %d)",
                 atomic_load(&flood_sent));
    expect_close_after(1008, 100000); /* behind what the kernel's buffers held */
    /* The handler sees 1008 echoed back, or 1006 when reading the backlog
     * took the client longer than the server's 2 s grace for the answer. */
    const wt_done *d = wt_wait_done(1, 5000);
    cr_assert(strcmp(d[0].body, "closed 1008") == 0 || strcmp(d[0].body, "closed 1006") == 0, "%s", d[0].body);
    wt_loops_stop();
}
