/*
 * The OTLP collector of the trace tests (tests/support/otlp_collector.py, a
 * child process that also serves as the traced upstream) and what is read
 * from it: the spans it received, each checked for the OTLP/JSON shape.
 */
#ifndef WEFT_TEST_SPANS_H
#define WEFT_TEST_SPANS_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

/** Starts the collector; returns its port, its pid in `pid`. */
int wt_collector_start(pid_t *pid);
/** Stops it (pid <= 0: none was started). */
void wt_collector_stop(pid_t pid);
/** GET `path` on the collector at `port`, decoded (the caller frees it). */
json_t *wt_collector_get(int port, const char *path);
/** Every span received so far, each checked for the OTLP shape (the caller frees the array). */
json_t *wt_spans_all(int port);
/** The span of `trace` with `kind` (2: server, 3: client) in `spans`, or NULL. */
json_t *wt_span_find(json_t *spans, const char *trace, int kind);
/** The server span of `trace`, waited for with a 15 s deadline; `spans` holds
 *  it (the caller frees *spans). */
json_t *wt_span_wait(int port, const char *trace, json_t **spans);
/** A span attribute's value (string or int), or NULL. */
const char *wt_span_attr(json_t *span, const char *key);
/** `s` is exactly `len` lowercase hex digits. */
int wt_is_hex(const char *s, size_t len);

#endif
