#include "rawhttp.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

void wt_raw_free(wt_raw_resp *r)
{
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof(*r));
}

int wt_raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s", strerror(errno));
    return fd;
}

void wt_raw_send(int port, const char *req, size_t len, wt_raw_resp *out, int timeout_ms)
{
    memset(out, 0, sizeof(*out));
    int fd = wt_raw_connect(port);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    size_t sent = 0, cap = 65536, got = 0;
    char *buf = malloc(cap);
    int writing = 1;
    double deadline = wt_now_ms() + timeout_ms;
    for (;;) {
        double left = deadline - wt_now_ms();
        cr_assert_gt(left, 0, "no answer within %d ms to %.80s", timeout_ms, req);
        struct pollfd p = {.fd = fd, .events = POLLIN | (writing ? POLLOUT : 0)};
        if (poll(&p, 1, (int)left) <= 0)
            continue;
        if (p.revents & POLLIN || p.revents & (POLLHUP | POLLERR)) {
            if (got + 4096 > cap)
                buf = realloc(buf, cap *= 2);
            ssize_t n = recv(fd, buf + got, cap - got - 1, 0);
            if (n > 0) {
                got += (size_t)n;
                continue;
            }
            if (n == 0 || (errno != EAGAIN && errno != EINTR))
                break; /* closed, or reset after the answer */
        }
        if (writing && (p.revents & POLLOUT)) {
            ssize_t n = send(fd, req + sent, len - sent, MSG_NOSIGNAL);
            if (n > 0)
                sent += (size_t)n;
            else if (errno != EAGAIN && errno != EINTR)
                writing = 0; /* the server stopped reading: read what it said */
            if (sent == len)
                writing = 0;
        }
    }
    close(fd);
    buf[got] = '\0';
    out->len = got;
    const char *sep = strstr(buf, "\r\n\r\n");
    size_t hlen = sep != NULL ? (size_t)(sep - buf) : got;
    out->head = strndup(buf, hlen);
    out->body = strdup(sep != NULL ? sep + 4 : "");
    if (strncmp(buf, "HTTP/1.", 7) == 0)
        out->status = strtol(buf + 9, NULL, 10);
    free(buf);
}

char *wt_raw_build(const char *method, const char *target, const char *headers, const char *body, size_t body_len,
                   size_t *len)
{
    size_t cap = strlen(method) + strlen(target) + (headers ? strlen(headers) : 0) + body_len + 256;
    char *req = malloc(cap);
    int n = snprintf(req, cap, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s", method, target,
                     headers ? headers : "");
    if (body != NULL)
        n += snprintf(req + n, cap - (size_t)n, "Content-Length: %zu\r\n", body_len);
    n += snprintf(req + n, cap - (size_t)n, "\r\n");
    if (body != NULL)
        memcpy(req + n, body, body_len);
    *len = (size_t)n + (body ? body_len : 0);
    return req;
}

void wt_raw_http(int port, const char *method, const char *target, const char *headers, const char *body,
                 wt_raw_resp *out)
{
    size_t len;
    char *req = wt_raw_build(method, target, headers, body, body ? strlen(body) : 0, &len);
    wt_raw_send(port, req, len, out, 20000);
    free(req);
}

const char *wt_raw_header(const wt_raw_resp *r, const char *name, char *out, size_t size)
{
    size_t n = strlen(name);
    for (const char *p = r->head; p != NULL && *p; p = strstr(p, "\r\n") ? strstr(p, "\r\n") + 2 : NULL) {
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1 + strspn(p + n + 1, " ");
            snprintf(out, size, "%.*s", (int)strcspn(v, "\r\n"), v);
            return out;
        }
    }
    return NULL;
}
