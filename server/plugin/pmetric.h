/* The host's custom-metric calls (metric_*): plugin-facing checks over base/custom_stats. */
#ifndef WEFT_PMETRIC_H
#define WEFT_PMETRIC_H

#include <weft/plugin.h>

weft_metric *weft_pmetric_metric_counter(weft_init *ctx, const char *name, const char *help);
weft_metric *weft_pmetric_metric_gauge(weft_init *ctx, const char *name, const char *help);
weft_metric *weft_pmetric_metric_histogram(weft_init *ctx, const char *name, const char *help);
void weft_pmetric_metric_add(weft_metric *m, double v);
void weft_pmetric_metric_set(weft_metric *m, double v);
void weft_pmetric_metric_observe(weft_metric *m, double v);

#endif
