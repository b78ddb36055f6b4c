/* Leveled log lines on stderr, shaped for journald and for humans. */
#ifndef WEFT_LOG_H
#define WEFT_LOG_H

#include <stdarg.h>
#include <weft/plugin.h>

/** Lines above this level are dropped. Default WEFT_LOG_INFO. */
void weft_log_set_level(int level);
int weft_log_get_level(void);
/** Parses "error", "warn", "info", "debug"; returns -1 for anything else. */
int weft_log_parse_level(const char *name);

void weft_log(int level, const char *fmt, ...) WEFT_PRINTF(2, 3);
void weft_vlog(int level, const char *prefix, const char *fmt, va_list ap);

/* What a line is about, where known: fields of their own in JSON. */
typedef struct weft_log_ctx {
    const char *text_prefix; /* the text format's prefix ("route /x (plugin p 1.0) [id]: ") */
    const char *route, *plugin, *request_id;
    const char *trace_id; /* the request's W3C trace id (32 hex), JSON only */
} weft_log_ctx;
void weft_vlog_in(int level, const weft_log_ctx *ctx, const char *fmt, va_list ap);
/** log.format = "json": one JSON object per line (time, level, msg, route, plugin, request_id, trace_id). */
void weft_log_set_json(int on);
/** log.error_log: standard error becomes this file (appended, created 0640). -1 with `why`. */
int weft_log_open_error_log(const char *path, char *why, size_t size);
/** Opens the error log's path again (after logrotate moved it); 0 when there is none. */
int weft_log_reopen(char *why, size_t size);

#define weft_log_error(...) weft_log(WEFT_LOG_ERROR, __VA_ARGS__)
#define weft_log_warn(...) weft_log(WEFT_LOG_WARN, __VA_ARGS__)
#define weft_log_info(...) weft_log(WEFT_LOG_INFO, __VA_ARGS__)
#define weft_log_debug(...) weft_log(WEFT_LOG_DEBUG, __VA_ARGS__)

/** True when standard error is the journal (systemd sets JOURNAL_STREAM): lines carry "<N>". */
int weft_log_journal(void);
/**
 * A command's own message on stderr ("weft: ..." for -t, reload,
 * quarantine clear): no timestamp, but under journald its priority prefix,
 * so `journalctl -p warning` shows why a start or a reload failed.
 */
void weft_say(int level, const char *fmt, ...) WEFT_PRINTF(2, 3);

/** Start-up failures and broken invariants only; request-time errors never call this. */
#define weft_fatal(...) weft__fatal(__FILE__, __LINE__, __VA_ARGS__)
_Noreturn void weft__fatal(const char *file, int line, const char *fmt, ...) WEFT_PRINTF(3, 4);

#endif
