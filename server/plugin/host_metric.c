/* The `metric` group: plugin/pmetric.c's series. */
#include "plugin/host.h"
#include "plugin/pmetric.h"

const weft_host_metric weft_host_metric_group = {
    .struct_size = sizeof(weft_host_metric),
    .version = WEFT_HOST_METRIC_VERSION,
    .counter = weft_pmetric_metric_counter,
    .gauge = weft_pmetric_metric_gauge,
    .histogram = weft_pmetric_metric_histogram,
    .add = weft_pmetric_metric_add,
    .set = weft_pmetric_metric_set,
    .observe = weft_pmetric_metric_observe,
};
