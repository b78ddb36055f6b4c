/*
 * weft/host_metric.h — the `metric` group: a plugin's own series in
 * /metrics, declared in load() or init(), updated from any thread.
 */
#ifndef WEFT_HOST_METRIC_H
#define WEFT_HOST_METRIC_H

#include <weft/types.h>

#define WEFT_HOST_METRIC_VERSION 1u

typedef struct weft_host_metric {
    uint32_t struct_size;
    uint32_t version; /**< WEFT_HOST_METRIC_VERSION of the running host */
    /**
     * Declares a counter shown as plugin_NAME{plugin="PLUGIN"}. NAME: 1..100
     * characters of [a-zA-Z0-9_], not starting with a digit; a counter's
     * name ends in _total and no other's does; none ends in _bucket, _sum
     * or _count; and what `promtool check metrics` asks of a name: snake
     * case (no lowercase letter followed by a capital), units spelled out
     * and in base units (seconds, bytes; not ms, kb, milliseconds,
     * kilobytes, days), and not its own type as a word (a gauge named
     * queue_gauge). `help` is one line without backslashes. Declaring the same
     * name again (a reload, a second route) returns the same series, whose
     * values carry on. NULL, and load/init fails naming the plugin, when a
     * rule is broken or the name is another type. In load() or init() only.
     */
    weft_metric *(*counter)(weft_init *ctx, const char *name, const char *help);
    /** A gauge (a value that goes up and down), declared as counter. */
    weft_metric *(*gauge)(weft_init *ctx, const char *name, const char *help);
    /** A histogram over weft's own buckets, declared as counter (0.0005 … 10; seconds are the natural unit). */
    weft_metric *(*histogram)(weft_init *ctx, const char *name, const char *help);
    /** Adds `v` to a counter (v >= 0; anything else is ignored) or a gauge. Any thread, lock-free. */
    void (*add)(weft_metric *m, double v);
    /** Sets a gauge. Any thread. */
    void (*set)(weft_metric *m, double v);
    /** Records one observation in a histogram. Any thread, lock-free. */
    void (*observe)(weft_metric *m, double v);
} weft_host_metric;

#endif
