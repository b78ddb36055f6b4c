#include "ops/accesslog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/timer.h"
#include "request/trace.h"

typedef struct access_logger {
    h2o_logger_t super;
    h2o_logconf_t *conf;
    /* The same with %h taken from the "weft-client" env entry http/client_addr.c
     * sets for a client behind a trusted proxy (h2o's %h is the socket's). */
    h2o_logconf_t *proxied;
} access_logger;

static atomic_int log_fd = -1;
static char *log_path;
static char *log_fmt; /* for the loggers of further paths */

/* Where weft_accesslog_stamp keeps a request's start (h2o's request
 * environment; the value's base points at the nanoseconds in its pool). */
#define START_ENV "weft.t0"

int weft_accesslog_stamp(h2o_req_t *req)
{
    h2o_iovec_t *v = h2o_req_getenv(req, H2O_STRLIT(START_ENV), 1);
    if (v->base == NULL) { /* a request h2o reprocesses keeps its first start */
        uint64_t *t0 = h2o_mem_alloc_pool(&req->pool, uint64_t, 1);
        *t0 = weft_now_ns();
        *v = h2o_iovec_init(t0, 0);
    }
    return 0;
}

/* The request's time in seconds, from weft_accesslog_stamp to now (its
 * answer's last byte handed to the socket, or its client gone); "-" for one
 * h2o answered before any handler ran. */
static size_t format_duration(h2o_req_t *req, char *out, size_t size)
{
    const h2o_iovec_t *v = req->env.size != 0 ? h2o_req_getenv(req, H2O_STRLIT(START_ENV), 0) : NULL;
    if (v == NULL || v->base == NULL)
        return (size_t)snprintf(out, size, "-");
    uint64_t t0, now = weft_now_ns();
    memcpy(&t0, v->base, sizeof(t0));
    uint64_t us = now > t0 ? (now - t0) / 1000 : 0;
    return (size_t)snprintf(out, size, "%llu.%06llu", (unsigned long long)(us / 1000000),
                            (unsigned long long)(us % 1000000));
}

/* The trace id, then the request's duration, as the last two fields: the
 * trace id from h2o's request environment where request/trace.c put it
 * ("-" for answers given before a route ran). Not through the format's
 * %{NAME}e: libh2o's format compiler never frees such a name, a leak the
 * sanitizer runs fail on. */
static char *with_tail(h2o_req_t *req, char *line, size_t *len, char *buf, size_t size)
{
    if (line == NULL || *len == 0 || line[*len - 1] != '\n')
        return line;
    const h2o_iovec_t *id = h2o_req_getenv(req, H2O_STRLIT(WEFT_TRACE_ENV), 0);
    char tail[80];
    size_t n = (size_t)snprintf(tail, sizeof(tail), " %.*s ", id != NULL && id->len == 32 ? 32 : 1,
                                id != NULL && id->len == 32 ? id->base : "-");
    n += format_duration(req, tail + n, sizeof(tail) - n);
    char *out = line;
    if (line == buf && *len + n > size) {
        if ((out = malloc(*len + n)) == NULL)
            return line;
        memcpy(out, line, *len);
    } else if (line != buf && (out = realloc(line, *len + n)) == NULL) {
        return line;
    }
    memcpy(out + *len - 1, tail, n); /* over the newline, which goes after it */
    out[*len - 1 + n] = '\n';
    *len += n;
    return out;
}

static void log_access(h2o_logger_t *self, h2o_req_t *req)
{
    access_logger *l = (access_logger *)self;
    char buf[4096];
    size_t len = sizeof(buf);
    h2o_logconf_t *conf = l->conf;
    h2o_iovec_t *client = req->env.size != 0 ? h2o_req_getenv(req, H2O_STRLIT("weft-client"), 0) : NULL;
    if (client != NULL) {
        /* Read back as a request header (h2o frees an env field's name only
         * with a leak); one the client sent itself must not be the one found. */
        ssize_t i;
        while ((i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("weft-client"), -1)) >= 0)
            h2o_delete_header(&req->headers, i);
        h2o_add_header_by_str(&req->pool, &req->headers, H2O_STRLIT("weft-client"), 0, NULL, client->base, client->len);
        conf = l->proxied;
    }
    char *line = h2o_log_request(conf, req, &len, buf);
    line = with_tail(req, line, &len, buf, sizeof(buf));
    /* One write per line (O_APPEND): lines from several loops never mix, and
     * a reopen swaps the descriptor under it with dup2, never closing it. */
    ssize_t r = write(atomic_load_explicit(&log_fd, memory_order_relaxed), line, len);
    (void)r;
    if (line != buf)
        free(line);
}

static void dispose(h2o_logger_t *self)
{
    access_logger *l = (access_logger *)self;
    h2o_logconf_dispose(l->conf);
    h2o_logconf_dispose(l->proxied);
}

/* fmt with each %h as %{weft-client}i; NULL without memory. */
static h2o_logconf_t *compile_proxied(const char *fmt, char *err)
{
    static const char sub[] = "%{weft-client}i";
    char *out = malloc(strlen(fmt) * (sizeof(sub) - 1) + 1), *o = out;
    if (out == NULL) {
        strcpy(err, "out of memory");
        return NULL;
    }
    for (const char *p = fmt; *p != '\0'; p++) {
        if (p[0] == '%' && p[1] == 'h') {
            memcpy(o, sub, sizeof(sub) - 1);
            o += sizeof(sub) - 1;
            p++;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    h2o_logconf_t *c = h2o_logconf_compile(out, H2O_LOGCONF_ESCAPE_APACHE, err);
    free(out);
    return c;
}

/* One logger per path, each with its own compiled format (h2o disposes each). */
static void add_logger(h2o_pathconf_t *path, h2o_logconf_t *conf, h2o_logconf_t *proxied)
{
    access_logger *l = (access_logger *)h2o_create_logger(path, sizeof(*l));
    l->super.log_access = log_access;
    l->super.dispose = dispose;
    l->conf = conf;
    l->proxied = proxied;
}

static int open_file(const char *file, char *why, size_t size)
{
    int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
        snprintf(why, size, "cannot open %s: %s", file, strerror(errno));
    return fd;
}

int weft_accesslog_open(h2o_pathconf_t *path, const char *file, const char *fmt, char *why, size_t size)
{
    char err[256];
    h2o_logconf_t *conf = h2o_logconf_compile(fmt, H2O_LOGCONF_ESCAPE_APACHE, err);
    if (conf == NULL) {
        snprintf(why, size, "access log format: %s", err);
        return -1;
    }
    h2o_logconf_t *proxied = compile_proxied(fmt, err);
    if (proxied == NULL) {
        h2o_logconf_dispose(conf);
        snprintf(why, size, "access log format: %s", err);
        return -1;
    }
    int fd = open_file(file, why, size);
    if (fd < 0) {
        h2o_logconf_dispose(conf);
        h2o_logconf_dispose(proxied);
        return -1;
    }
    free(log_path);
    if ((log_path = strdup(file)) == NULL) {
        close(fd);
        h2o_logconf_dispose(conf);
        h2o_logconf_dispose(proxied);
        snprintf(why, size, "out of memory");
        return -1;
    }
    free(log_fmt);
    if ((log_fmt = strdup(fmt)) == NULL) {
        close(fd);
        h2o_logconf_dispose(conf);
        h2o_logconf_dispose(proxied);
        snprintf(why, size, "out of memory");
        return -1;
    }
    atomic_store(&log_fd, fd);
    add_logger(path, conf, proxied);
    return 0;
}

int weft_accesslog_cover(h2o_pathconf_t *path)
{
    char err[256];
    h2o_logconf_t *conf = log_fmt != NULL ? h2o_logconf_compile(log_fmt, H2O_LOGCONF_ESCAPE_APACHE, err) : NULL;
    h2o_logconf_t *proxied = log_fmt != NULL ? compile_proxied(log_fmt, err) : NULL;
    if (conf == NULL || proxied == NULL) {
        if (conf != NULL)
            h2o_logconf_dispose(conf);
        if (proxied != NULL)
            h2o_logconf_dispose(proxied);
        return -1;
    }
    add_logger(path, conf, proxied);
    return 0;
}

int weft_accesslog_reopen(char *why, size_t size)
{
    int cur = atomic_load(&log_fd);
    if (cur < 0 || log_path == NULL)
        return 0;
    int fd = open_file(log_path, why, size);
    if (fd < 0)
        return -1; /* the old file keeps receiving lines */
    int rc = dup2(fd, cur) < 0 ? -1 : 0;
    if (rc != 0)
        snprintf(why, size, "cannot reopen %s: %s", log_path, strerror(errno));
    close(fd);
    return rc;
}

void weft_accesslog_close(void)
{
    int fd = atomic_exchange(&log_fd, -1);
    if (fd >= 0)
        close(fd);
    free(log_path);
    log_path = NULL;
    free(log_fmt);
    log_fmt = NULL;
}
