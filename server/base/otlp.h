/*
 * Spans exported to an OpenTelemetry collector with OTLP over HTTP/JSON
 * (POST /v1/traces), from a thread of their own.
 *
 * Loops and workers hand finished spans over with weft_otlp_submit(): a
 * bounded queue of pointers under one mutex held for a pointer's store, so
 * a request never waits for the collector. The exporter thread takes them
 * out in batches (batch_size, or whatever is there after batch_interval_ms),
 * encodes them with jansson and POSTs them with libcurl within timeout_ms.
 * A full queue drops the new span; a failed POST drops its batch (no retry:
 * a collector that is down must not turn into memory held by weft); both
 * are counted for /metrics.
 */
#ifndef WEFT_OTLP_H
#define WEFT_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "base/tracectx.h"

/** What the exporter needs of the config's trace group (config/config.h owns the strings). */
typedef struct weft_otlp_settings {
    const char *endpoint;     /* "http://host:4318/v1/traces"; NULL: no export */
    const char *service_name; /* the resource's service.name */
    int batch_size;           /* spans per POST at most */
    int batch_interval_ms;    /* a span waits at most this long for its batch */
    int queue_size;           /* spans held at most; more are dropped */
    int timeout_ms;           /* one POST, connect included */
} weft_otlp_settings;

enum { WEFT_SPAN_SERVER = 2, WEFT_SPAN_CLIENT = 3 }; /* OTLP's SpanKind numbers */

/** One finished span, filled by its producer and owned by the exporter once submitted. */
typedef struct weft_span {
    uint8_t trace_id[16], span_id[8], parent_id[8];
    int has_parent;
    int kind;
    uint64_t start_unix_ns, end_unix_ns;
    int status;  /* the HTTP status; 0 for a call that got none */
    int error;   /* OTLP status ERROR (a 5xx answered, a call that failed) */
    char name[160];
    char method[24];
    char target[512]; /* url.path (server) or url.full (client) */
    char route[160];  /* weft.route (server) */
    char policy[16];  /* weft.policy (server); empty: no handler ran */
    char answered_by[8]; /* weft.answered_by (server): "plugin", "weft" or "static" */
    char client[46];  /* client.address (server); empty: no IP peer */
    char peer[256];   /* server.address (client) */
    int peer_port;
    char error_text[128];
    char tracestate[WEFT_TRACESTATE_MAX_LEN + 1];
} weft_span;

/**
 * Applies `s` (start-up and every reload; control thread): starts the
 * exporter thread at the first endpoint, points it at a new one, resizes the
 * queue (spans beyond a smaller size are dropped and counted). An endpoint of
 * NULL stops exporting; spans queued meanwhile are dropped.
 */
void weft_otlp_configure(const weft_otlp_settings *s);
/** True while an endpoint is set: producers skip building spans otherwise. Any thread, a relaxed load. */
int weft_otlp_enabled(void);
/** A span to fill, or NULL (out of memory, or the queue already full: counted dropped). Any thread. */
weft_span *weft_otlp_span_new(void);
/** Hands `s` to the exporter (queued, or dropped and counted). Any thread. */
void weft_otlp_submit(weft_span *s);
/** The wall clock in unix nanoseconds. */
uint64_t weft_otlp_unix_ns(void);

typedef struct weft_otlp_stats {
    uint64_t exported, dropped, queued;
} weft_otlp_stats;
/** Counters for /metrics. Any thread. */
weft_otlp_stats weft_otlp_stats_get(void);

/** Sends what is queued (one bounded attempt) and stops the thread (shutdown; control thread). */
void weft_otlp_shutdown(void);

/* otlp_json.c: the OTLP/JSON body of `n` spans, malloc'd, or NULL without memory. */
char *weft_otlp_encode(weft_span *const *spans, size_t n, const char *service_name, size_t *len);

#endif
