#include "plugin/pmetric.h"

#include "base/custom_stats.h"
#include "plugin/route_init.h"

/* weft_metric is the plugin's name for a registry entry. */
static weft_metric *declare(weft_init *ctx, const char *name, weft_cstat_type type, const char *help)
{
    char why[400];
    weft_cstat *c = weft_cstat_declare(ctx->plugin, name, type, help, why, sizeof(why));
    if (c == NULL)
        weft_route_init_init_error(ctx, "%s", why);
    return (weft_metric *)c;
}

weft_metric *weft_pmetric_metric_counter(weft_init *ctx, const char *name, const char *help)
{
    return declare(ctx, name, WEFT_CSTAT_COUNTER, help);
}

weft_metric *weft_pmetric_metric_gauge(weft_init *ctx, const char *name, const char *help)
{
    return declare(ctx, name, WEFT_CSTAT_GAUGE, help);
}

weft_metric *weft_pmetric_metric_histogram(weft_init *ctx, const char *name, const char *help)
{
    return declare(ctx, name, WEFT_CSTAT_HISTOGRAM, help);
}

void weft_pmetric_metric_add(weft_metric *m, double v)
{
    if (m != NULL)
        weft_cstat_add((weft_cstat *)m, v);
}

void weft_pmetric_metric_set(weft_metric *m, double v)
{
    if (m != NULL)
        weft_cstat_set((weft_cstat *)m, v);
}

void weft_pmetric_metric_observe(weft_metric *m, double v)
{
    if (m != NULL)
        weft_cstat_observe((weft_cstat *)m, v);
}
