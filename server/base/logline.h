/*
 * One JSON log line (log.format = "json"), built into a caller's buffer
 * with no allocation, no lock and no libc beyond memcpy: the logger and the
 * crash handler (a signal handler) share it. Whatever the bytes, the line is
 * one valid JSON object with "time" and "level": bytes that are not UTF-8
 * become U+FFFD, control characters are escaped, and a value that does not
 * fit is cut at a character boundary, ends in "..." and the object carries
 * "truncated":true -- the line is shortened, never lost.
 */
#ifndef WEFT_BASE_LOGLINE_H
#define WEFT_BASE_LOGLINE_H

#include <stddef.h>
#include <time.h>

/* At most this many bytes of a field's JSON text (a route, a request id). */
#define WEFT_JL_FIELD_MAX 512
/* The room a line needs besides its values' text: size a buffer above it. */
#define WEFT_JL_MIN_LINE 256

typedef struct weft_jl_field {
    const char *key; /* a plain ASCII name, written as it is */
    const char *value;
    size_t len;
} weft_jl_field;

typedef struct weft_jl_line_in {
    struct timespec when; /* CLOCK_REALTIME */
    const char *level;    /* "error", "warn", "info", "debug" */
    const char *msg;
    size_t msg_len;
    int msg_cut; /* the message was cut at a byte count: a split UTF-8 character at its end is dropped */
    const weft_jl_field *fields;
    size_t n_fields;
} weft_jl_line_in;

/**
 * {"time":"2026-12-04T10:11:12.345Z","level":"info","msg":"...",<fields>}
 * and a newline into buf (size >= WEFT_JL_MIN_LINE); returns its length.
 */
size_t weft_jl_line(char *buf, size_t size, const weft_jl_line_in *in);

/**
 * Appends s[0..n) as JSON string content (no quotes), stopping before a
 * character whose escape would pass `end`; *used is the input taken.
 */
char *weft_jl_escape(char *p, char *end, const char *s, size_t n, size_t *used);

/** "2026-12-04T10:11:12.345Z" (UTC, milliseconds; 24 bytes) at p, never past end. */
char *weft_jl_time(char *p, char *end, const struct timespec *ts);

#endif
