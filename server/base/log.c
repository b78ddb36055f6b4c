#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/logline.h"
#include "base/sigsafe.h"

static atomic_int log_level = WEFT_LOG_INFO;

void weft_log_set_level(int level) { atomic_store(&log_level, level); }
int weft_log_get_level(void) { return atomic_load(&log_level); }

int weft_log_parse_level(const char *name)
{
    static const struct {
        const char *name;
        int level;
    } levels[] = {{"error", WEFT_LOG_ERROR}, {"warn", WEFT_LOG_WARN}, {"info", WEFT_LOG_INFO}, {"debug", WEFT_LOG_DEBUG}};
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
        if (strcasecmp(name, levels[i].name) == 0)
            return levels[i].level;
    return -1;
}

static const char *level_name(int level)
{
    switch (level) {
    case WEFT_LOG_ERROR: return "error";
    case WEFT_LOG_WARN: return "warn";
    case WEFT_LOG_INFO: return "info";
    default: return "debug";
    }
}

static atomic_int json_format;

void weft_log_set_json(int on)
{
    atomic_store(&json_format, on);
    weft_ss_set_json(on); /* the crash report's lines too */
}

/* One JSON object per line (base/logline.c): what a log shipper (Kubernetes,
 * journald's MESSAGE) parses without guessing, whatever bytes a plugin or a
 * client put in the message. */
static size_t format_json(char *line, size_t size, size_t n, int level, const weft_log_ctx *ctx, const char *msg,
                          size_t len, int cut)
{
    weft_jl_field f[4];
    size_t nf = 0;
    const char *vals[4] = {NULL, NULL, NULL, NULL};
    if (ctx != NULL) {
        vals[0] = ctx->route;
        vals[1] = ctx->plugin;
        vals[2] = ctx->request_id != NULL && ctx->request_id[0] != '\0' ? ctx->request_id : NULL;
        vals[3] = ctx->trace_id != NULL && ctx->trace_id[0] != '\0' ? ctx->trace_id : NULL;
    }
    static const char *const keys[4] = {"route", "plugin", "request_id", "trace_id"};
    for (size_t i = 0; i < 4; i++)
        if (vals[i] != NULL)
            f[nf++] = (weft_jl_field){keys[i], vals[i], strlen(vals[i])};
    weft_jl_line_in in = {.level = level_name(level), .msg = msg, .msg_len = len, .msg_cut = cut, .fields = f,
                          .n_fields = nf};
    clock_gettime(CLOCK_REALTIME, &in.when);
    return n + weft_jl_line(line + n, size - n, &in);
}

/* The message of a JSON line: the rest of a prefix (a fatal's file:line)
 * and the text, at most sizeof(msg) - 1 bytes; *cut when it was longer. */
static size_t format_msg(char *msg, size_t size, const weft_log_ctx *ctx, const char *fmt, va_list ap, int *cut)
{
    size_t m = 0;
    /* The route and plugin are fields of their own. */
    if (ctx != NULL && ctx->text_prefix != NULL && ctx->route == NULL) {
        m = strlen(ctx->text_prefix) < size / 2 ? strlen(ctx->text_prefix) : size / 2;
        memcpy(msg, ctx->text_prefix, m);
    }
    int r = vsnprintf(msg + m, size - m, fmt, ap);
    *cut = r > 0 && (size_t)r >= size - m;
    return r < 0 ? m : *cut ? size - 1 : m + (size_t)r;
}

void weft_vlog_in(int level, const weft_log_ctx *ctx, const char *fmt, va_list ap)
{
    if (level > atomic_load(&log_level))
        return;
    /* Format the whole line first and emit it with one write(2), so lines from
     * several loop and worker threads never interleave mid-line. */
    char line[5120];
    size_t n = 0;
    const char *prefix = ctx != NULL ? ctx->text_prefix : NULL;
    if (weft_log_journal())
        /* journald parses "<N>" as the syslog priority and stamps time itself. */
        n = (size_t)snprintf(line, sizeof(line), "<%d>", level);
    if (atomic_load(&json_format)) {
        char msg[2048];
        int cut;
        size_t len = format_msg(msg, sizeof(msg), ctx, fmt, ap, &cut);
        n = format_json(line, sizeof(line), n, level, ctx, msg, len, cut); /* newline included */
        ssize_t r = write(STDERR_FILENO, line, n);
        (void)r;
        return;
    }
    if (!weft_log_journal()) {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
        n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03ldZ %-5s ", ts.tv_nsec / 1000000, level_name(level));
    }
    if (prefix != NULL && n < sizeof(line))
        n += (size_t)snprintf(line + n, sizeof(line) - n, "%s", prefix);
    if (n < sizeof(line))
        n += (size_t)vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    if (n >= sizeof(line) - 1) {
        n = sizeof(line) - 2;
        memcpy(line + n - 3, "...", 3);
    }
    line[n++] = '\n';
    ssize_t r = write(STDERR_FILENO, line, n);
    (void)r;
}

void weft_vlog(int level, const char *prefix, const char *fmt, va_list ap)
{
    weft_log_ctx ctx = {.text_prefix = prefix};
    weft_vlog_in(level, &ctx, fmt, ap);
}

/* The error log: standard error itself, pointed at a file, so that the
 * crash handler's report and a plugin's stray fprintf land there too. */
static pthread_mutex_t file_mu = PTHREAD_MUTEX_INITIALIZER;
static char *error_log;

static int point_stderr_at(const char *path, char *why, size_t size)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) {
        snprintf(why, size, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    int rc = dup2(fd, STDERR_FILENO) < 0 ? -1 : 0; /* atomic: no line is lost or split */
    if (rc != 0)
        snprintf(why, size, "cannot redirect standard error to %s: %s", path, strerror(errno));
    close(fd);
    return rc;
}

int weft_log_open_error_log(const char *path, char *why, size_t size)
{
    pthread_mutex_lock(&file_mu);
    int rc = point_stderr_at(path, why, size);
    if (rc == 0) {
        free(error_log);
        error_log = strdup(path);
    }
    pthread_mutex_unlock(&file_mu);
    return rc;
}

int weft_log_reopen(char *why, size_t size)
{
    pthread_mutex_lock(&file_mu);
    int rc = error_log != NULL ? point_stderr_at(error_log, why, size) : 0;
    pthread_mutex_unlock(&file_mu);
    return rc;
}

int weft_log_journal(void) { return getenv("JOURNAL_STREAM") != NULL; }

void weft_say(int level, const char *fmt, ...)
{
    char line[4096];
    size_t n = weft_log_journal() ? (size_t)snprintf(line, sizeof(line), "<%d>", level) : 0;
    n += (size_t)snprintf(line + n, sizeof(line) - n, "weft: ");
    va_list ap;
    va_start(ap, fmt);
    if (n < sizeof(line))
        n += (size_t)vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    va_end(ap);
    if (n >= sizeof(line) - 1) {
        n = sizeof(line) - 2;
        memcpy(line + n - 3, "...", 3);
    }
    line[n++] = '\n';
    ssize_t r = write(STDERR_FILENO, line, n);
    (void)r;
}

void weft_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    weft_vlog(level, NULL, fmt, ap);
    va_end(ap);
}

void weft__fatal(const char *file, int line, const char *fmt, ...)
{
    char prefix[256];
    snprintf(prefix, sizeof(prefix), "fatal (%s:%d): ", file, line);
    va_list ap;
    va_start(ap, fmt);
    weft_vlog(WEFT_LOG_ERROR, prefix, fmt, ap);
    va_end(ap);
    abort();
}
