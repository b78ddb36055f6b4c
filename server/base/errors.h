/*
 * A list of user-facing error messages. Validation collects every problem
 * rather than stopping at the first, so `weft -t` reports them all at once.
 */
#ifndef WEFT_ERRORS_H
#define WEFT_ERRORS_H

#include <stddef.h>
#include <weft/plugin.h>

typedef struct weft_errors {
    char **msgs;
    size_t count;
} weft_errors;

void weft_errors_add(weft_errors *e, const char *fmt, ...) WEFT_PRINTF(2, 3);
/** Logs each message at error level. */
void weft_errors_log(const weft_errors *e);
void weft_errors_clear(weft_errors *e);
/** Frees the messages from index `from` on (a problem set aside, e.g. a refused drop-in). */
void weft_errors_truncate(weft_errors *e, size_t from);
/** Messages [from, to) joined by "; " (one log line), malloc'ed. */
char *weft_errors_join(const weft_errors *e, size_t from, size_t to);

#endif
