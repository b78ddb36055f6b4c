/*
 * What the proxy and rate-limit suites share: raw HTTP/1.1 exchanges from a
 * chosen loopback source address (127.0.0.2, 127.0.0.3, ...: distinct
 * clients, or a trusted proxy and an untrusted one, on one machine), bytes
 * sent exactly as given (a PROXY header first), and the port of the Nth
 * listener a server announced.
 */
#ifndef WEFT_TEST_FROMADDR_H
#define WEFT_TEST_FROMADDR_H

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

/* A connection to 127.0.0.1:port from the local address `src`. */
static inline int from_connect(const char *src, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    cr_assert_eq(inet_pton(AF_INET, src, &a.sin_addr), 1);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0, "bind %s: %s", src, strerror(errno));
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s", strerror(errno));
    return fd;
}

static inline void from_send(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* refused: the reading side sees the close */
        p += n;
        len -= (size_t)n;
    }
}

/* Everything the server sends until it closes (or resets), within timeout_ms; malloc'd, NUL-terminated. */
static inline char *from_read_all(int fd, int timeout_ms)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    double deadline = wt_now_ms() + timeout_ms;
    for (;;) {
        int left = (int)(deadline - wt_now_ms());
        cr_assert_gt(left, 0, "the server neither answered nor closed within %d ms: %.*s", timeout_ms, (int)len, buf);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, left) <= 0)
            continue;
        if (len + 2048 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    return buf;
}

/* Sends `data` from `src` on a new connection and returns all the server said before closing. */
static inline char *from_exchange(const char *src, int port, const void *data, size_t len)
{
    int fd = from_connect(src, port);
    from_send(fd, data, len);
    char *out = from_read_all(fd, 15000);
    close(fd);
    return out;
}

/* GET `path` from `src` with extra header lines (each ending in \r\n, or NULL), Connection: close. */
static inline char *from_get(const char *src, int port, const char *path, const char *headers)
{
    char req[16384];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n%s\r\n", path,
                     headers != NULL ? headers : "");
    cr_assert_lt(n, (int)sizeof(req));
    return from_exchange(src, port, req, (size_t)n);
}

/* The status of a raw answer; 0 for none (closed without one). */
static inline long from_status(const char *resp) { return strncmp(resp, "HTTP/1.1 ", 9) == 0 ? atol(resp + 9) : 0; }

/* A header's value in a raw answer (case-insensitive name), into out; NULL if absent. */
static inline const char *from_header(const char *resp, const char *name, char *out, size_t size)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(resp, "\r\n"); p != NULL && strncmp(p, "\r\n\r\n", 4) != 0; p = strstr(p + 2, "\r\n")) {
        if (strncasecmp(p + 2, name, nl) == 0 && p[2 + nl] == ':') {
            const char *v = p + 3 + nl, *e = strstr(v, "\r\n");
            while (*v == ' ')
                v++;
            snprintf(out, size, "%.*s", (int)(e - v), v);
            return out;
        }
    }
    return NULL;
}

/* The port of the n-th (0-based) main listener announced in the log. */
static inline int listen_port(const wt_server *s, int n)
{
    char *log = wt_read_log(s);
    const char *p = log;
    int port = 0;
    for (int i = 0; (p = strstr(p, "listening on http://")) != NULL; p++) {
        if (p >= log + 6 && strncmp(p - 6, "admin ", 6) == 0)
            continue;
        if (i++ == n) {
            const char *colon = strchr(p + 20, ':');
            port = colon != NULL ? atoi(colon + 1) : 0;
            break;
        }
    }
    free(log);
    cr_assert_gt(port, 0, "no listener %d announced", n);
    return port;
}

/* Polls the access log until a line contains every one of the NULL-terminated needles; returns it (malloc'd). */
static inline char *access_line(const char *file, const char *const *needles, double limit_ms)
{
    double deadline = wt_now_ms() + limit_ms;
    for (;;) {
        char *text = wt_read_file(file);
        for (char *line = text != NULL ? strtok(text, "\n") : NULL; line != NULL; line = strtok(NULL, "\n")) {
            int all = 1;
            for (int i = 0; needles[i] != NULL && all; i++)
                all = strstr(line, needles[i]) != NULL;
            if (all) {
                char *copy = strdup(line);
                free(text);
                return copy;
            }
        }
        cr_assert_lt(wt_now_ms(), deadline, "no access log line with '%s' in %s:\n%s", needles[0], file,
                     text != NULL ? text : "(none)");
        free(text);
        usleep(20000); /* (a) poll of the access log, written when h2o frees the request */
    }
}

#endif
