#include "base/log.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

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

void weft_vlog(int level, const char *prefix, const char *fmt, va_list ap)
{
    if (level > atomic_load(&log_level))
        return;
    /* Format the whole line first and emit it with one write(2), so lines from
     * several loop and worker threads never interleave mid-line. */
    char line[2048];
    size_t n = 0;
    if (weft_log_journal()) {
        /* journald parses "<N>" as the syslog priority and stamps time itself. */
        n = (size_t)snprintf(line, sizeof(line), "<%d>", level);
    } else {
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
