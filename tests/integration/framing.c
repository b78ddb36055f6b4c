/*
 * Strict HTTP/1.1 framing over a raw socket (curl would fix the requests up):
 * each row of the table is a request, the status weft must answer and
 * whether the connection must close. Every row carries a pipelined
 * "GET /hello" behind it: after a rejected request it must never be served.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "harness.h"

/* Sends `req`, reads until the server closes or 2 s of silence; returns the
 * bytes read (malloc'd) and whether the server closed the connection. */
static char *exchange(int port, const char *req, size_t len, int *closed)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    cr_assert_eq(write(fd, req, len), (ssize_t)len);
    size_t cap = 65536, n = 0;
    char *out = malloc(cap + 1);
    *closed = 0;
    for (;;) {
        ssize_t r = read(fd, out + n, cap - n);
        if (r == 0) {
            *closed = 1;
            break;
        }
        if (r < 0) {
            *closed = errno == ECONNRESET;
            break;
        }
        n += (size_t)r;
        if (n == cap)
            break;
    }
    out[n] = '\0';
    close(fd);
    return out;
}

/* Responses in `s`: each carries one Server header (a body may quote a
 * status line, and a body need not end with a newline). */
static int responses(const char *s)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, "\r\nServer: weft/")) != NULL; p++)
        n++;
    return n;
}

typedef struct row {
    char name[48];
    char head[160]; /* the request up to (not including) the pipelined GET */
    int status;
    int closes;
} row;

#define NEXT "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"

ParameterizedTestParameters(framing, each_row)
{
    static row rows[] = {
        {"plain request, then the pipelined one", "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", 200, 0},
        {"Content-Length with Transfer-Encoding",
         "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, 1},
        {"two different Content-Length",
         "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, 1},
        {"the same Content-Length twice", "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab",
         200, 0},
        {"HTTP/1.1 without Host", "GET /hello HTTP/1.1\r\n\r\n", 400, 1},
        {"two Host headers", "GET /hello HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400, 1},
        {"HTTP/1.0 without Host", "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 200, 0},
        {"absolute-form target", "GET http://x/hello HTTP/1.1\r\nHost: x\r\n\r\n", 200, 0},
        {"absolute-form target with query", "GET http://x:8080/hello?a=1 HTTP/1.1\r\nHost: x\r\n\r\n", 200, 0},
    };
    return cr_make_param_array(row, rows, sizeof(rows) / sizeof(rows[0]));
}

ParameterizedTest(row *r, framing, each_row, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1; " WT_LISTEN " admin = false;\n"
                 WT_HELLO_ROUTES "\n");
    char req[512];
    int len = snprintf(req, sizeof(req), "%s" NEXT, r->head);
    int closed = 0;
    char *out = exchange(s.port, req, (size_t)len, &closed);
    char want[32];
    snprintf(want, sizeof(want), "HTTP/1.1 %d ", r->status);
    cr_expect(strncmp(out, want, strlen(want)) == 0, "%s: want %d, got:\n%s", r->name, r->status, out);
    if (r->closes) {
        cr_expect(closed, "%s: the connection must close", r->name);
        cr_expect_eq(responses(out), 1, "%s: the pipelined request was served:\n%s", r->name, out);
    } else {
        cr_expect_eq(responses(out), 2, "%s: both requests answered:\n%s", r->name, out);
    }
    free(out);
    wt_finish(&s);
}

/* Header sizes: one line past limits.max_header_line, or all lines past
 * limits.max_headers, get 431 (nginx and Apache stop a line at 8 KiB). */
Test(framing, oversized_headers_get_431, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1; " WT_LISTEN " admin = false;\n"
                 WT_HELLO_ROUTES "\n");
    static char req[80000];
    char *p = req;
    p += sprintf(p, "GET /hello HTTP/1.1\r\nHost: x\r\nX-Long: ");
    memset(p, 'a', 9000);
    p += 9000;
    p += sprintf(p, "\r\n\r\n");
    int closed;
    char *out = exchange(s.port, req, (size_t)(p - req), &closed);
    cr_expect(strncmp(out, "HTTP/1.1 431 ", 13) == 0, "a 9000-byte line: %.200s", out);
    free(out);
    p = req + sprintf(req, "GET /hello HTTP/1.1\r\nHost: x\r\n");
    for (int i = 0; i < 8; i++) { /* 8 cookies of 5000 bytes: 40 KB in all, no line over 8 KiB */
        p += sprintf(p, "Cookie: c%d=", i);
        memset(p, 'b', 5000);
        p += 5000;
        p += sprintf(p, "\r\n");
    }
    p += sprintf(p, "\r\n");
    out = exchange(s.port, req, (size_t)(p - req), &closed);
    cr_expect(strncmp(out, "HTTP/1.1 431 ", 13) == 0, "40 KB of headers: %.200s", out);
    free(out);
    wt_resp ok;
    cr_assert_eq(wt_http(&s, "GET", "/hello", NULL, &ok), 0);
    cr_expect_eq(ok.status, 200);
    wt_resp_free(&ok);
    wt_finish(&s);
}
