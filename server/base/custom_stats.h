/*
 * Series that plugins declare (host->metric_counter/gauge/histogram): a
 * process-wide registry keyed by (plugin, name), so a reload that declares
 * the same series again continues its values, as route series do. Entries
 * are never freed while the process runs, which keeps every handle a plugin
 * holds valid; updates are lock-free from any thread.
 */
#ifndef WEFT_CUSTOM_STATS_H
#define WEFT_CUSTOM_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/stats.h"

#define WEFT_CSTAT_MAX 512

typedef enum weft_cstat_type { WEFT_CSTAT_COUNTER, WEFT_CSTAT_GAUGE, WEFT_CSTAT_HISTOGRAM } weft_cstat_type;

typedef struct weft_cstat {
    char *plugin, *name, *help; /* name without the exposition prefix */
    weft_cstat_type type;
    atomic_uint_fast64_t value;                     /* a double's bits: counter, gauge, histogram sum */
    atomic_uint_fast64_t bucket[WEFT_HIST_BUCKETS]; /* histogram only, not cumulative */
    atomic_uint_fast64_t count;                     /* histogram only */
} weft_cstat;

/** The prefix every plugin series is exposed with, so none can collide with weft_* series. */
#define WEFT_CSTAT_PREFIX "plugin_"

const char *weft_cstat_type_name(weft_cstat_type type);
/**
 * The series (plugin, name) of `type`, created on first use; NULL with the
 * reason in `why` when the name breaks the rules (Prometheus metric-name
 * characters, _total exactly for counters, no _bucket/_sum/_count), the help
 * text has a newline or backslash, the name is taken with another type, or
 * the registry is full.
 */
weft_cstat *weft_cstat_declare(const char *plugin, const char *name, weft_cstat_type type, const char *help,
                               char *why, size_t size);
void weft_cstat_add(weft_cstat *c, double v);
void weft_cstat_set(weft_cstat *c, double v);
void weft_cstat_observe(weft_cstat *c, double v);
double weft_cstat_value(const weft_cstat *c);
/** How many series exist, and series i (declaration order). */
int weft_cstat_count(void);
weft_cstat *weft_cstat_at(int i);

#endif
