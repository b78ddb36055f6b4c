/*
 * A static file that shrinks while it is being sent (`cp new old` and
 * copytruncate log rotation truncate in place): the answer must end and the
 * loop go back to work. h2o's multi-range path counted a read of 0 bytes as
 * progress (third_party/patches/h2o/0004): the loop called pread for ever,
 * went on after the client left, ignored SIGTERM, and in a build with
 * assertions live (the .deb) aborted the process.
 *
 * Each case reads about 64 KB of a 20 MB file, truncates it, then reads
 * until the server ends the answer (any end: a short body, a reset, a
 * close). The client holds the rest back so the truncation always lands
 * mid-answer: HTTP/1.1 through a small receive buffer it does not drain,
 * HTTP/2 through the 64 KB initial window it does not open until then.
 * One loop thread: a spinning loop answers nothing else.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define FILE_SIZE 20000000
#define READ_FIRST 60000 /* body bytes read before the truncation (HTTP/2's first window is 65535) */

static wt_server srv;
static char www[400];

static void setup(void)
{
    wt_write_conf(&srv, "#\n"); /* makes srv.dir */
    snprintf(www, sizeof(www), "%s/www", srv.dir);
    cr_assert_eq(mkdir(www, 0755), 0);
    wt_startf(&srv,
              "threads = 1;\n" WT_LISTEN "\n"
              "routes = (\n"
              "  { path = \"/s\"; static = { dir = \"www\"; }; },\n" WT_HELLO_ROUTE "\n"
              ");\n");
}

static void teardown(void)
{
    wt_suite_stop(&srv);
    wt_rm_rf(srv.dir);
}

TestSuite(static_truncate, .init = setup, .fini = teardown, .timeout = 180);

/* A sparse file of FILE_SIZE bytes (reads as zeros, costs no disk). */
static void make_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(ftruncate(fd, FILE_SIZE), 0);
    close(fd);
}

/* What `cp new old` does to old: truncated in place, then a few new bytes. */
static void shrink(const char *path)
{
    int fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(write(fd, "new\n", 4), 4);
    close(fd);
}

static int connect_small(int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    /* Before connect: the window the server sees is set at the handshake. */
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv.port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s", strerror(errno));
    return fd;
}

/* Reads into buf (size); returns bytes read, 0 on close/reset, -1 when `deadline` passed. */
static ssize_t read_by(int fd, char *buf, size_t size, double deadline)
{
    for (;;) {
        double left = deadline - wt_now_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) <= 0)
            continue;
        ssize_t n = recv(fd, buf, size, 0);
        if (n > 0)
            return n;
        if (n == 0 || (errno != EINTR && errno != EAGAIN))
            return 0;
    }
}

/* HTTP/1.1: returns the bytes received after the truncation until the server
 * ended the answer; fails the test if it never does. */
static size_t h1_case(const char *path, const char *file, const char *range)
{
    int fd = connect_small(16384);
    char req[512];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n%s%s%sConnection: close\r\n\r\n", path,
                     range != NULL ? "Range: " : "", range != NULL ? range : "", range != NULL ? "\r\n" : "");
    cr_assert_eq(send(fd, req, (size_t)n, 0), n);
    char buf[16384];
    size_t got = 0, after = 0;
    double deadline = wt_now_ms() + 20000;
    while (got < READ_FIRST) {
        ssize_t r = read_by(fd, buf, sizeof(buf), deadline);
        cr_assert_gt(r, 0, "%s: the answer ended (or stalled) after %zu bytes, before the truncation", path, got);
        got += (size_t)r;
    }
    shrink(file);
    for (;;) {
        ssize_t r = read_by(fd, buf, sizeof(buf), deadline);
        cr_assert_neq(r, -1, "%s (%s): the answer never ended after the file shrank (%zu bytes since)", path,
                      range != NULL ? range : "whole file", after);
        if (r == 0)
            break;
        after += (size_t)r;
    }
    close(fd);
    cr_assert_lt(got + after, (size_t)FILE_SIZE, "%s: the whole file came although it shrank", path);
    return after;
}

/* ---- a minimal h2c client: prior knowledge, one stream, literal headers ---- */

static size_t frame(unsigned char *out, size_t len, int type, int flags, unsigned sid)
{
    out[0] = (unsigned char)(len >> 16), out[1] = (unsigned char)(len >> 8), out[2] = (unsigned char)len;
    out[3] = (unsigned char)type, out[4] = (unsigned char)flags;
    out[5] = (unsigned char)(sid >> 24), out[6] = (unsigned char)(sid >> 16);
    out[7] = (unsigned char)(sid >> 8), out[8] = (unsigned char)sid;
    return 9 + len;
}

/* "Literal header field without indexing, new name" (RFC 7541 6.2.2), short strings only. */
static size_t literal(unsigned char *p, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    cr_assert(nl < 127 && vl < 127);
    p[0] = 0;
    p[1] = (unsigned char)nl;
    memcpy(p + 2, name, nl);
    p[2 + nl] = (unsigned char)vl;
    memcpy(p + 3 + nl, value, vl);
    return 3 + nl + vl;
}

static void window_update(int fd, unsigned sid, unsigned increment)
{
    unsigned char f[13];
    f[9] = (unsigned char)(increment >> 24), f[10] = (unsigned char)(increment >> 16);
    f[11] = (unsigned char)(increment >> 8), f[12] = (unsigned char)increment;
    cr_assert_eq(send(fd, f, frame(f, 4, 8, 0, sid), 0), 13);
}

typedef struct h2_reader {
    int fd;
    unsigned char buf[1 << 17];
    size_t have;
    size_t data; /* DATA payload of stream 1 so far */
    int ended;   /* stream 1 ended: END_STREAM, RST_STREAM, GOAWAY or the connection closed */
} h2_reader;

/* Consumes the whole frames in r->buf. */
static void h2_frames(h2_reader *r)
{
    size_t at = 0;
    while (r->have - at >= 9) {
        const unsigned char *f = r->buf + at;
        size_t len = (size_t)f[0] << 16 | (size_t)f[1] << 8 | f[2];
        if (r->have - at < 9 + len)
            break;
        unsigned sid = ((unsigned)f[5] << 24 | (unsigned)f[6] << 16 | (unsigned)f[7] << 8 | f[8]) & 0x7fffffffu;
        int type = f[3], flags = f[4];
        if (type == 0 && sid == 1)
            r->data += len;
        if ((sid == 1 && (type == 0 || type == 1) && (flags & 1)) || (sid == 1 && type == 3) || type == 7)
            r->ended = 1;
        if (type == 4 && !(flags & 1)) { /* the server's SETTINGS: acknowledged */
            unsigned char ack[9];
            cr_assert_eq(send(r->fd, ack, frame(ack, 0, 4, 1, 0), 0), 9);
        }
        at += 9 + len;
    }
    memmove(r->buf, r->buf + at, r->have - at);
    r->have -= at;
}

/* Reads until `until` holds or the stream ends; 0, or -1 when the deadline passed. */
static int h2_read(h2_reader *r, size_t until, double deadline)
{
    while (!r->ended && r->data < until) {
        ssize_t n = read_by(r->fd, (char *)r->buf + r->have, sizeof(r->buf) - r->have, deadline);
        if (n == -1)
            return -1;
        if (n == 0) {
            r->ended = 1;
            break;
        }
        r->have += (size_t)n;
        h2_frames(r);
    }
    return 0;
}

static size_t h2_case(const char *path, const char *file, const char *range)
{
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    h2_reader *r = calloc(1, sizeof(*r));
    r->fd = connect_small(1 << 20);
    unsigned char out[1024];
    size_t n = sizeof(preface) - 1;
    memcpy(out, preface, n);
    n += frame(out + n, 0, 4, 0, 0); /* SETTINGS: the defaults, a 65535-byte initial window */
    size_t hb = n + 9, h = hb;
    h += literal(out + h, ":method", "GET");
    h += literal(out + h, ":scheme", "http");
    h += literal(out + h, ":authority", "127.0.0.1");
    h += literal(out + h, ":path", path);
    if (range != NULL)
        h += literal(out + h, "range", range);
    n += frame(out + n, h - hb, 1, 0x5, 1); /* HEADERS, END_STREAM | END_HEADERS */
    cr_assert_eq(send(r->fd, out, n, 0), (ssize_t)n);
    double deadline = wt_now_ms() + 20000;
    cr_assert_eq(h2_read(r, READ_FIRST, deadline), 0, "%s: no %d bytes within 20 s", path, READ_FIRST);
    cr_assert(!r->ended, "%s: the stream ended after %zu bytes, before the truncation", path, r->data);
    size_t before = r->data;
    shrink(file);
    /* Now the rest may come: windows open to (almost) 2^31. */
    window_update(r->fd, 0, 0x7fffffffu - 65535);
    window_update(r->fd, 1, 0x7fffffffu - 65535);
    cr_assert_eq(h2_read(r, SIZE_MAX, deadline), 0, "%s (%s): the stream never ended after the file shrank (%zu bytes since)",
                 path, range != NULL ? range : "whole file", r->data - before);
    cr_assert_lt(r->data, (size_t)FILE_SIZE, "%s: the whole file came although it shrank", path);
    size_t after = r->data - before;
    close(r->fd);
    free(r);
    return after;
}

/* The loop is free again: /hello is answered (one loop: a spinning one
 * answers nothing, over HTTP/1.1), and the process is idle. */
static void assert_loop_free(const char *what)
{
    wt_resp resp;
    cr_assert_eq(wt_http(&srv, "GET", "/hello", NULL, &resp), 0, "%s: /hello unanswered", what);
    cr_assert_eq(resp.status, 200, "%s", what);
    wt_resp_free(&resp);
    /* Over HTTP/2 a spinning loop still turns (each empty part goes round
     * the loop), so it is its CPU time that shows it: a full core. One
     * second of an idle server's life measured, a bound far above idle. */
    double cpu0 = wt_cpu_seconds(srv.pid), t0 = wt_now_ms();
    usleep(1000000);
    double cpu = wt_cpu_seconds(srv.pid) - cpu0, wall = (wt_now_ms() - t0) / 1000;
    cr_assert_lt(cpu, 0.5 * wall, "%s: the idle server used %.2f s of CPU in %.2f s (a spinning loop)", what, cpu, wall);
}

typedef struct tcase {
    char name[16];
    char range[64]; /* "" for the whole file */
    int h2;
} tcase;

static tcase cases[] = {
    {"multi", "bytes=0-9999999,10000000-19999998", 0},
    {"multi", "bytes=0-9999999,10000000-19999998", 1},
    {"single", "bytes=100-19999998", 0},
    {"single", "bytes=100-19999998", 1},
    {"whole", "", 0},
    {"whole", "", 1},
};

ParameterizedTestParameters(static_truncate, a_file_that_shrinks_mid_answer_ends_it_and_frees_the_loop)
{
    return cr_make_param_array(tcase, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(tcase *c, static_truncate, a_file_that_shrinks_mid_answer_ends_it_and_frees_the_loop)
{
    char name[64], file[600], path[128], what[128];
    snprintf(name, sizeof(name), "%s-%s.bin", c->name, c->h2 ? "h2" : "h1");
    snprintf(file, sizeof(file), "%s/%s", www, name);
    snprintf(path, sizeof(path), "/s/%s", name);
    snprintf(what, sizeof(what), "%s over %s", c->name, c->h2 ? "HTTP/2" : "HTTP/1.1");
    make_file(file);
    const char *range = c->range[0] != '\0' ? c->range : NULL;
    if (c->h2)
        h2_case(path, file, range);
    else
        h1_case(path, file, range);
    assert_loop_free(what);
    /* The shrunk file is served as it is now. */
    wt_resp resp;
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &resp), 0);
    cr_assert_eq(resp.status, 200, "%s: %ld", what, resp.status);
    cr_assert_eq(resp.len, 4, "%s: %zu bytes", what, resp.len);
    wt_resp_free(&resp);
    /* SIGTERM stops it (a loop spinning in h2o never read its stop message). */
    wt_finish(&srv);
}
