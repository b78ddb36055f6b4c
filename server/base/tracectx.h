/*
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the traceparent
 * and tracestate headers checked and formatted, and ids made up. Pure
 * functions on plain bytes, so request/, outbound/ and the exporter share
 * one reading of the spec and the unit tests need no server.
 */
#ifndef WEFT_TRACECTX_H
#define WEFT_TRACECTX_H

#include <stddef.h>
#include <stdint.h>

/** "00-" 32 hex "-" 16 hex "-" 2 hex: the version 00 traceparent's length. */
#define WEFT_TRACEPARENT_LEN 55
/** tracestate bounds: more members or bytes than this and it is dropped whole. */
#define WEFT_TRACESTATE_MAX_MEMBERS 32
#define WEFT_TRACESTATE_MAX_LEN 512
/** The sampled bit of trace-flags. */
#define WEFT_TRACE_SAMPLED 0x01u

typedef struct weft_traceparent {
    uint8_t trace_id[16];
    uint8_t span_id[8]; /* the caller's span: the parent of ours */
    uint8_t flags;
} weft_traceparent;

/**
 * Parses a traceparent value. Version 00 must be exactly 55 characters;
 * a later version (not "ff") is read by version 00's rules on its first 55
 * characters, which must be followed by nothing or by '-' (the spec's
 * forward compatibility). Lowercase hex only; all-zero ids are invalid.
 * Returns 0, or -1 when the value is to be ignored (a new trace starts).
 */
int weft_traceparent_parse(const char *s, size_t len, weft_traceparent *out);

/**
 * True when `s` is a tracestate the spec allows and within the bounds
 * above: comma-separated key=value members (empty members and blanks
 * around them allowed), keys unique. Anything else is dropped, not passed on.
 */
int weft_tracestate_valid(const char *s, size_t len);

/** Writes "00-TRACE-SPAN-FLAGS" and a NUL into `out` (WEFT_TRACEPARENT_LEN + 1 bytes). */
void weft_traceparent_format(char *out, const uint8_t trace_id[16], const uint8_t span_id[8], uint8_t flags);

/** Lowercase hex of `n` bytes, NUL-terminated (2n + 1 bytes). */
void weft_trace_hex(char *out, const uint8_t *bytes, size_t n);

/**
 * Fills `out` with random bytes, never all zero, from a per-thread
 * generator (xoshiro256**) seeded from getrandom once per thread: no lock
 * and no system call per request. Ids, not secrets.
 */
void weft_trace_random(uint8_t *out, size_t n);

/** A uniform draw in [0, 1) from the same generator (sampling). */
double weft_trace_uniform(void);

#endif
