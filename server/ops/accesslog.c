#include "ops/accesslog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct access_logger {
    h2o_logger_t super;
    h2o_logconf_t *conf;
} access_logger;

static atomic_int log_fd = -1;
static char *log_path;
static char *log_fmt; /* for the loggers of further paths */

static void log_access(h2o_logger_t *self, h2o_req_t *req)
{
    access_logger *l = (access_logger *)self;
    char buf[4096];
    size_t len = sizeof(buf);
    char *line = h2o_log_request(l->conf, req, &len, buf);
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
}

/* One logger per path, each with its own compiled format (h2o disposes each). */
static void add_logger(h2o_pathconf_t *path, h2o_logconf_t *conf)
{
    access_logger *l = (access_logger *)h2o_create_logger(path, sizeof(*l));
    l->super.log_access = log_access;
    l->super.dispose = dispose;
    l->conf = conf;
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
    int fd = open_file(file, why, size);
    if (fd < 0) {
        h2o_logconf_dispose(conf);
        return -1;
    }
    free(log_path);
    if ((log_path = strdup(file)) == NULL) {
        close(fd);
        h2o_logconf_dispose(conf);
        snprintf(why, size, "out of memory");
        return -1;
    }
    free(log_fmt);
    if ((log_fmt = strdup(fmt)) == NULL) {
        close(fd);
        h2o_logconf_dispose(conf);
        snprintf(why, size, "out of memory");
        return -1;
    }
    atomic_store(&log_fd, fd);
    add_logger(path, conf);
    return 0;
}

int weft_accesslog_cover(h2o_pathconf_t *path)
{
    char err[256];
    h2o_logconf_t *conf = log_fmt != NULL ? h2o_logconf_compile(log_fmt, H2O_LOGCONF_ESCAPE_APACHE, err) : NULL;
    if (conf == NULL)
        return -1;
    add_logger(path, conf);
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
