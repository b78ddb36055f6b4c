/*
 * The process's own figures under the names every Prometheus client library
 * gives them (process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_open_fds, process_max_fds,
 * process_start_time_seconds), so that dashboards and rules written for any
 * exporter work unchanged, and weft_build_info: 1 with the versions as labels.
 */
#ifndef WEFT_PROCESS_METRICS_H
#define WEFT_PROCESS_METRICS_H

#include <stdio.h>

/** Writes those families, HELP and TYPE included, to `f`. Any thread. */
void weft_process_metrics_render(FILE *f);

#endif
