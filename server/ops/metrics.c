#include "ops/metrics.h"

#include "base/otlp.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dispatch/auto.h"
#include "dispatch/blocking.h"
#include "base/custom_stats.h"
#include "base/stats.h"
#include "db/db.h"
#include "ops/process_metrics.h"
#include "ops/trim.h"
#include "outbound/outbound.h"
#include "request/backlog.h"
#include "reload/generation.h"
#include "reload/reload.h"
#include "dispatch/workpool.h"
#include "edge/edge.h"
#include "http/bodybuf.h"
#include "http/ratelimit.h"

#define SUM(field) weft_stats_sum(offsetof(weft_loop_stats, field))

static uint64_t slot_sum(int slot, size_t field_offset)
{
    return weft_stats_sum(offsetof(weft_loop_stats, slots) + (size_t)slot * sizeof(weft_slot_stats) + field_offset);
}

#define CODE(c) (offsetof(weft_slot_stats, code) + (size_t)(c) * sizeof(atomic_uint_fast64_t))

static void route_metrics(FILE *f)
{
    static const char *const classes[] = {"", "1xx", "2xx", "3xx", "4xx", "5xx"};
    int n = weft_stats_slot_count();
    weft_stats_write_header(f, "weft_requests_total", "counter",
                            "Requests answered, by route, dispatch policy and status class.");
    for (int i = 0; i < n; i++) {
        const char *path, *policy;
        weft_stats_slot_key(i, &path, &policy);
        for (int c = 1; c <= 5; c++) {
            fputs("weft_requests_total{route=\"", f);
            weft_stats_write_escaped(f, path);
            fprintf(f, "\",policy=\"%s\",code=\"%s\"} %llu\n", policy, classes[c],
                    (unsigned long long)slot_sum(i, CODE(c)));
        }
    }
    weft_stats_write_header(f, "weft_requests_cancelled_total", "counter",
                            "Requests whose client left before the answer, by route and policy.");
    for (int i = 0; i < n; i++) {
        const char *path, *policy;
        weft_stats_slot_key(i, &path, &policy);
        fputs("weft_requests_cancelled_total{route=\"", f);
        weft_stats_write_escaped(f, path);
        fprintf(f, "\",policy=\"%s\"} %llu\n", policy,
                (unsigned long long)slot_sum(i, offsetof(weft_slot_stats, cancelled)));
    }
    weft_stats_write_header(f, "weft_requests_refused_total", "counter",
                            "Requests answered 503 before their handler ran: the route's max_concurrent was "
                            "reached, or no pool worker was free within the pool's queue_timeout_ms.");
    static const char *const why[] = {"max_concurrent", "queue_timeout"};
    for (int i = 0; i < n; i++) {
        const char *path, *policy;
        weft_stats_slot_key(i, &path, &policy);
        for (int w = 0; w < 2; w++) {
            fputs("weft_requests_refused_total{route=\"", f);
            weft_stats_write_escaped(f, path);
            fprintf(f, "\",policy=\"%s\",reason=\"%s\"} %llu\n", policy, why[w],
                    (unsigned long long)slot_sum(i, offsetof(weft_slot_stats, refused) +
                                                        (size_t)w * sizeof(atomic_uint_fast64_t)));
        }
    }
    weft_stats_write_header(f, "weft_request_duration_seconds", "histogram",
                            "Time from dispatch to response, by route and policy.");
    for (int i = 0; i < n; i++) {
        const char *path, *policy;
        weft_stats_slot_key(i, &path, &policy);
        uint64_t buckets[WEFT_HIST_BUCKETS], count = 0;
        for (int b = 0; b < WEFT_HIST_BUCKETS; b++)
            buckets[b] = slot_sum(i, offsetof(weft_slot_stats, bucket) + (size_t)b * sizeof(atomic_uint_fast64_t));
        for (int c = 1; c <= 5; c++)
            count += slot_sum(i, CODE(c));
        double sum = (double)slot_sum(i, offsetof(weft_slot_stats, sum_ns)) / 1e9;
        char *labels = NULL;
        size_t ll = 0;
        FILE *lf = open_memstream(&labels, &ll);
        if (lf == NULL)
            continue;
        fputs("route=\"", lf);
        weft_stats_write_escaped(lf, path);
        fprintf(lf, "\",policy=\"%s\"", policy);
        fclose(lf);
        weft_stats_write_histogram(f, "weft_request_duration_seconds", labels, buckets, count, sum);
        free(labels);
    }
}

/* One family per name: HELP/TYPE once, then every plugin's series of it. */
static void plugin_metrics(FILE *f)
{
    int n = weft_cstat_count();
    for (int i = 0; i < n; i++) {
        const weft_cstat *first = weft_cstat_at(i);
        int seen = 0;
        for (int k = 0; k < i && !seen; k++)
            seen = strcmp(weft_cstat_at(k)->name, first->name) == 0;
        if (seen)
            continue;
        char name[160];
        snprintf(name, sizeof(name), WEFT_CSTAT_PREFIX "%s", first->name);
        weft_stats_write_header(f, name, weft_cstat_type_name(first->type), *first->help ? first->help : "(no help)");
        for (int k = i; k < n; k++) {
            weft_cstat *c = weft_cstat_at(k);
            if (strcmp(c->name, first->name) != 0)
                continue;
            char labels[200];
            /* plugin names are [a-z0-9_-]: nothing to escape */
            snprintf(labels, sizeof(labels), "plugin=\"%s\"", c->plugin);
            if (c->type != WEFT_CSTAT_HISTOGRAM) {
                fprintf(f, "%s{%s} %.17g\n", name, labels, weft_cstat_value(c));
                continue;
            }
            uint64_t buckets[WEFT_HIST_BUCKETS], count = atomic_load_explicit(&c->count, memory_order_relaxed), in = 0;
            for (int b = 0; b < WEFT_HIST_BUCKETS; b++)
                in += buckets[b] = atomic_load_explicit(&c->bucket[b], memory_order_relaxed);
            /* an observation in flight may be in a bucket and not yet counted: +Inf must stay the largest */
            weft_stats_write_histogram(f, name, labels, buckets, count > in ? count : in, weft_cstat_value(c));
        }
    }
}

/* Where each route's new requests go now: a fixed policy is its own; an auto
 * route's moves between coroutine and pool (dispatch/auto.h). */
static void route_policy_metrics(FILE *f, const weft_generation *gen)
{
    static const weft_dispatch shown[] = {WEFT_DISPATCH_COROUTINE, WEFT_DISPATCH_POOL, WEFT_DISPATCH_REACTIVE};
    weft_stats_write_header(f, "weft_route_policy", "gauge",
                            "1 for the policy a route's new requests start on (dispatch = \"auto\" moves it).");
    for (size_t i = 0; i < gen->n_routes; i++) {
        const weft_route *r = &gen->routes[i];
        weft_dispatch now = weft_route_policy_now(r);
        for (size_t k = 0; k < 3; k++) {
            if (shown[k] != now && (weft_route_auto(r) == NULL || shown[k] == WEFT_DISPATCH_REACTIVE))
                continue;
            fputs("weft_route_policy{route=\"", f);
            weft_stats_write_escaped(f, r->cfg->path);
            fprintf(f, "\",policy=\"%s\"} %d\n", weft_dispatch_name(shown[k]), shown[k] == now);
        }
    }
    weft_stats_write_header(f, "weft_route_policy_changes_total", "counter",
                            "Times dispatch = \"auto\" moved a route between coroutine and pool.");
    for (size_t i = 0; i < gen->n_routes; i++) {
        const weft_route *r = &gen->routes[i];
        weft_auto_info ai = {0};
        if (weft_route_auto(r) != NULL)
            weft_auto_info_get(r, &ai);
        fputs("weft_route_policy_changes_total{route=\"", f);
        weft_stats_write_escaped(f, r->cfg->path);
        fprintf(f, "\"} %llu\n", (unsigned long long)ai.changes);
    }
    weft_stats_write_header(f, "weft_route_policy_probes_total", "counter",
                            "Probe requests of demoted auto routes run on a coroutine, by outcome.");
    for (size_t i = 0; i < gen->n_routes; i++) {
        const weft_route *r = &gen->routes[i];
        if (weft_route_auto(r) == NULL)
            continue;
        weft_auto_info ai;
        weft_auto_info_get(r, &ai);
        for (int k = 0; k < 2; k++) {
            fputs("weft_route_policy_probes_total{route=\"", f);
            weft_stats_write_escaped(f, r->cfg->path);
            fprintf(f, "\",outcome=\"%s\"} %llu\n", k ? "blocked" : "passed",
                    (unsigned long long)(k ? ai.probes_blocked : ai.probes - ai.probes_blocked));
        }
    }
}

static void pool_metrics(FILE *f, const weft_generation *gen)
{
    static const struct {
        const char *name, *type, *help;
    } series[] = {
        {"weft_pool_size", "gauge", "Worker threads per pool."},
        {"weft_pool_busy_workers", "gauge", "Workers running a handler."},
        {"weft_pool_queue_length", "gauge", "Requests waiting for a worker."},
        {"weft_pool_rejected_total", "counter", "Requests refused with 503 because the pool queue was full."},
        {"weft_pool_withdrawn_total", "counter", "Queued requests dropped unrun because their client left."},
        {"weft_pool_threads", "gauge",
         "Worker threads alive (started on demand, up to weft_pool_size plus the lent ones)."},
        {"weft_pool_queue_timeouts_total", "counter",
         "Queued requests answered 503 because no worker was free within the pool's queue_timeout_ms."},
        {"weft_pool_lent_workers", "gauge",
         "Workers lent to WebSockets and streams: not counted in weft_pool_size (at most max_long_lived)."},
        {"weft_pool_lend_refused_total", "counter",
         "WebSockets and streams refused with 503 because max_long_lived workers were lent already."},
    };
    for (size_t k = 0; k < sizeof(series) / sizeof(series[0]); k++) {
        weft_stats_write_header(f, series[k].name, series[k].type, series[k].help);
        for (size_t i = 0; i < gen->n_pools; i++) {
            weft_workpool_stats ps;
            weft_workpool_stats_get(gen->pools[i], &ps);
            unsigned long long v = k == 0 ? (unsigned long long)ps.size
                                 : k == 1 ? (unsigned long long)ps.busy
                                 : k == 2 ? (unsigned long long)ps.queued
                                 : k == 3 ? (unsigned long long)ps.rejected
                 : k == 4 ? ps.withdrawn
                 : k == 5 ? (unsigned long long)ps.started
                 : k == 6 ? ps.expired
                 : k == 7 ? (unsigned long long)ps.lent
                                          : ps.lend_refused;
            fprintf(f, "%s{pool=\"%s\"} %llu\n", series[k].name, weft_workpool_name(gen->pools[i]), v);
        }
    }
}

static void trace_metrics(FILE *f)
{
    weft_otlp_stats t = weft_otlp_stats_get();
    weft_stats_write_header(f, "weft_trace_spans_exported_total", "counter",
                            "Spans the OTLP collector (trace.otlp_endpoint) accepted.");
    fprintf(f, "weft_trace_spans_exported_total %llu\n", (unsigned long long)t.exported);
    weft_stats_write_header(f, "weft_trace_spans_dropped_total", "counter",
                            "Spans dropped: the export queue was full (trace.queue_size) or the collector refused "
                            "or missed a batch.");
    fprintf(f, "weft_trace_spans_dropped_total %llu\n", (unsigned long long)t.dropped);
    weft_stats_write_header(f, "weft_trace_spans_queued", "gauge", "Spans waiting for export.");
    fprintf(f, "weft_trace_spans_queued %llu\n", (unsigned long long)t.queued);
}

static void request_metrics(FILE *f)
{
    weft_stats_write_header(f, "weft_unmatched_requests_total", "counter", "Requests no route matched (404) or allowed (405).");
    fprintf(f, "weft_unmatched_requests_total{code=\"404\"} %llu\n",
            (unsigned long long)SUM(unmatched));
    fprintf(f, "weft_unmatched_requests_total{code=\"405\"} %llu\n",
            (unsigned long long)SUM(unmatched[1]));
    weft_stats_write_header(f, "weft_inflight_requests", "gauge", "Requests dispatched and not yet answered (static files: until sent whole).");
    fprintf(f, "weft_inflight_requests %lld\n", (long long)SUM(inflight));
    weft_stats_write_header(f, "weft_inflight_requests_seconds_total", "counter",
                            "Time integral of weft_inflight_requests, kept by each loop at every change: its rate() "
                            "is the mean number of requests in flight, where a scrape only samples the gauge.");
    fprintf(f, "weft_inflight_requests_seconds_total %.6f\n", (double)SUM(inflight_ns) / 1e9);
}

static void connection_metrics(FILE *f)
{
    weft_stats_write_header(f, "weft_connections_open", "gauge", "Client connections open.");
    fprintf(f, "weft_connections_open %lld\n", (long long)SUM(connections));
    weft_stats_write_header(f, "weft_connections_deferred_total", "counter",
           "Times accepting paused at limits.max_connections or for lack of file descriptors.");
    fprintf(f, "weft_connections_deferred_total %llu\n",
            (unsigned long long)SUM(conn_refused));
    weft_stats_write_header(f, "weft_connections_evicted_total", "counter",
                            "Idle connections closed at limits.max_connections to admit new clients.");
    fprintf(f, "weft_connections_evicted_total %llu\n", (unsigned long long)SUM(conn_evicted));
    weft_stats_write_header(f, "weft_connections_refused_total", "counter",
                            "Connections closed at accept, by reason (per_ip: past limits.max_connections_per_ip; "
                            "proxy_protocol: no valid PROXY header on a listener that requires one).");
    fprintf(f, "weft_connections_refused_total{reason=\"per_ip\"} %llu\n",
            (unsigned long long)SUM(conn_per_ip_refused));
    fprintf(f, "weft_connections_refused_total{reason=\"proxy_protocol\"} %llu\n",
            (unsigned long long)SUM(conn_proxy_refused));
    weft_stats_write_header(f, "weft_connections_closed_abuse_total", "counter",
                            "Connections shut down past limits.max_resets or limits.max_inflight_per_conn.");
    fprintf(f, "weft_connections_closed_abuse_total %llu\n", (unsigned long long)SUM(conn_abuse_closed));
}

static void loop_metrics(FILE *f)
{
    weft_stats_write_header(f, "weft_coroutines_live", "gauge", "Coroutines running or suspended.");
    fprintf(f, "weft_coroutines_live %lld\n", (long long)SUM(coros_live));
    weft_stats_write_header(f, "weft_coroutine_stack_bytes", "gauge", "Coroutine stack memory mapped (live and cached, guard pages included).");
    fprintf(f, "weft_coroutine_stack_bytes %lld\n", (long long)SUM(coro_bytes));
    weft_stats_write_header(f, "weft_event_loop_lag_seconds", "gauge", "How late each event loop ran its last 100 ms tick.");
    for (int i = 0; i < weft_stats_loop_count(); i++)
        fprintf(f, "weft_event_loop_lag_seconds{loop=\"%d\"} %.6f\n", i,
                (double)atomic_load_explicit(&weft_stats_loop_at(i)->lag_ns, memory_order_relaxed) / 1e9);
    weft_stats_write_header(f, "weft_fd_waits", "gauge", "Plugin waits on their own file descriptors in progress (fd_wait).");
    fprintf(f, "weft_fd_waits %lld\n", (long long)SUM(fd_waits));
}

static void websocket_metrics(FILE *f)
{
    weft_stats_write_header(f, "weft_websockets_open", "gauge", "WebSockets open.");
    fprintf(f, "weft_websockets_open %lld\n", (long long)SUM(ws_open));
    weft_stats_write_header(f, "weft_websockets_accepted_total", "counter", "WebSocket upgrades accepted.");
    fprintf(f, "weft_websockets_accepted_total %llu\n", (unsigned long long)SUM(ws_accepted));
    weft_stats_write_header(f, "weft_websocket_messages_total", "counter", "WebSocket messages, by direction.");
    fprintf(f, "weft_websocket_messages_total{direction=\"in\"} %llu\n", (unsigned long long)SUM(ws_msgs[0]));
    fprintf(f, "weft_websocket_messages_total{direction=\"out\"} %llu\n", (unsigned long long)SUM(ws_msgs[1]));
    weft_stats_write_header(f, "weft_websocket_slow_closed_total", "counter",
                            "WebSockets closed (1008) because their peer did not read: its own send queue, or all "
                            "sockets' together (websocket.max_queued_total), was full.");
    fprintf(f, "weft_websocket_slow_closed_total %llu\n", (unsigned long long)SUM(ws_slow_closed));
}

static void memory_metrics(FILE *f)
{
    weft_stats_write_header(f, "weft_buffered_response_bytes", "gauge",
                            "Bytes of answers handed to h2o that their clients have not taken yet "
                            "(limits.max_buffered_response_total bounds them).");
    fprintf(f, "weft_buffered_response_bytes %zu\n", weft_backlog_bytes());
    weft_stats_write_header(f, "weft_slow_reader_closed_total", "counter",
                            "Connections closed because their client did not read its answers: its own "
                            "(limits.max_buffered_response) or all clients' together "
                            "(limits.max_buffered_response_total) were queued past the bound.");
    fprintf(f, "weft_slow_reader_closed_total %llu\n", (unsigned long long)weft_backlog_closed_total());
    weft_stats_write_header(f, "weft_buffered_body_bytes", "gauge",
                            "Bytes of request bodies collected for routes that do not stream them, until their "
                            "request ends (limits.max_buffered_body_total bounds them).");
    fprintf(f, "weft_buffered_body_bytes %zu\n", weft_bodybuf_bytes());
    weft_stats_write_header(f, "weft_buffered_body_refused_total", "counter",
                            "Request bodies refused with 503 because the bodies being collected held "
                            "limits.max_buffered_body_total.");
    fprintf(f, "weft_buffered_body_refused_total %llu\n", (unsigned long long)weft_bodybuf_refused_total());
    weft_compress_stats cs = weft_edge_compress_stats();
    weft_stats_write_header(f, "weft_compressing_responses", "gauge",
                            "Answers being compressed on the fly now, each holding a compressor "
                            "(limits.max_compressing_responses bounds them).");
    fprintf(f, "weft_compressing_responses %ld\n", cs.active);
    weft_stats_write_header(f, "weft_compress_skipped_total", "counter",
                            "Answers that qualified for compression and went out uncompressed because "
                            "limits.max_compressing_responses were being compressed.");
    fprintf(f, "weft_compress_skipped_total %ld\n", cs.skipped);
    weft_stats_write_header(f, "weft_memory_trimmed_bytes_total", "counter",
                            "Resident memory given back to the system after bursts (malloc_trim every 5 s when "
                            "the allocator holds over 4 MiB free).");
    fprintf(f, "weft_memory_trimmed_bytes_total %llu\n", (unsigned long long)weft_trim_bytes());
    weft_stats_write_header(f, "weft_memory_trims_total", "counter", "Times malloc_trim ran.");
    fprintf(f, "weft_memory_trims_total %llu\n", (unsigned long long)weft_trim_count());
}

static void outbound_metrics(FILE *f)
{
    static const char *const outcomes[12] = {"ok", "bad_request", "dns", "refused", "connect_timeout", "timeout",
                                             "tls", "reset", "too_large", "protocol", "no_resources", "cancelled"};
    weft_stats_write_header(f, "weft_outbound_requests_total", "counter",
                            "Outbound HTTP calls made by plugins, by outcome (ok: a response of any status).");
    for (int i = 0; i < 12; i++)
        fprintf(f, "weft_outbound_requests_total{outcome=\"%s\"} %llu\n", outcomes[i],
                (unsigned long long)SUM(outbound[i]));
}

static void reload_metrics(FILE *f, const weft_generation *gen)
{
    weft_reload_status rs;
    weft_reload_status_get(&rs);
    weft_stats_write_header(f, "weft_generation", "gauge", "The serving configuration generation.");
    fprintf(f, "weft_generation %lu\n", gen->id);
    weft_stats_write_header(f, "weft_reloads_total", "counter", "Reloads by outcome.");
    fprintf(f, "weft_reloads_total{outcome=\"ok\"} %lu\nweft_reloads_total{outcome=\"failed\"} %lu\n", rs.ok,
            rs.failed);
}

char *weft_metrics_render(const weft_generation *gen, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (f == NULL)
        return NULL;
    route_metrics(f);
    request_metrics(f);
    connection_metrics(f);

    pool_metrics(f, gen);
    route_policy_metrics(f, gen);
    weft_ratelimit_metrics(f);

    loop_metrics(f);
    websocket_metrics(f);
    weft_stats_write_header(f, "weft_outbound_retries_total", "counter",
                            "Idempotent outbound calls (http_fetch) sent once more because the upstream closed "
                            "the pooled keep-alive connection under them before answering.");
    fprintf(f, "weft_outbound_retries_total %llu\n", (unsigned long long)weft_fetch_retries());
    memory_metrics(f);
    outbound_metrics(f);
    weft_stats_write_header(f, "weft_blocked_handler_total", "counter", "Plugin code slices that held an event loop past blocking.threshold_ms.");
    fprintf(f, "weft_blocked_handler_total %llu\n", (unsigned long long)weft_blocking_total());

    weft_db_metrics_render(f);
    plugin_metrics(f);
    trace_metrics(f);

    reload_metrics(f, gen);

    weft_process_metrics_render(f);
    fclose(f);
    return buf;
}
