/*
 * The Prometheus exposition of GET /metrics: every layer's counters (base/stats,
 * the pools, the database, reloads) rendered in text format 0.0.4.
 */
#ifndef WEFT_METRICS_H
#define WEFT_METRICS_H

#include <stddef.h>

struct weft_generation;
/** Writes the whole exposition into a malloc'd buffer; NULL without memory. */
char *weft_metrics_render(const struct weft_generation *gen, size_t *len);

#endif
