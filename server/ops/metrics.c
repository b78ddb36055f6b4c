#include "ops/metrics.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dispatch/blocking.h"
#include "db/db.h"
#include "reload/generation.h"
#include "reload/reload.h"
#include "process/server.h"
#include "dispatch/workpool.h"

const double weft_hist_bounds[WEFT_HIST_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                     0.1,    0.25,  0.5,    1,     2.5,  5,     10};

static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char *path;
    weft_dispatch dispatch;
} slots[WEFT_STAT_SLOTS];
static int n_slots;

int weft_hist_index(uint64_t ns)
{
    double s = (double)ns / 1e9;
    for (int i = 0; i < WEFT_HIST_BUCKETS; i++)
        if (s <= weft_hist_bounds[i])
            return i;
    return WEFT_HIST_BUCKETS;
}

int weft_metrics_slot(const char *path, weft_dispatch dispatch)
{
    pthread_mutex_lock(&slots_mu);
    int found = -1;
    for (int i = 0; i < n_slots && found < 0; i++)
        if (slots[i].dispatch == dispatch && strcmp(slots[i].path, path) == 0)
            found = i;
    if (found < 0 && n_slots < WEFT_STAT_SLOTS && (slots[n_slots].path = strdup(path)) != NULL) {
        slots[n_slots].dispatch = dispatch;
        found = n_slots++;
    }
    pthread_mutex_unlock(&slots_mu);
    return found;
}

void weft_metrics_request(weft_loop_stats *s, int slot, int status, uint64_t elapsed_ns)
{
    if (slot < 0)
        return;
    weft_slot_stats *st = &s->slots[slot];
    int cls = status / 100;
    weft_stat_add(&st->code[cls >= 1 && cls <= 5 ? cls : 5], 1);
    int b = weft_hist_index(elapsed_ns);
    if (b < WEFT_HIST_BUCKETS)
        weft_stat_add(&st->bucket[b], 1);
    weft_stat_add(&st->sum_ns, elapsed_ns);
}

/* ---- exposition ---- */

typedef struct out {
    FILE *f;
} out;

static void escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fputc('\\', f);
        if (*s == '\n') {
            fputs("\\n", f);
            continue;
        }
        fputc(*s, f);
    }
}

static void header(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static uint64_t sum_loops(size_t offset)
{
    uint64_t total = 0;
    for (int i = 0; i < weft_srv.n_loops; i++)
        total += atomic_load_explicit((atomic_uint_fast64_t *)((char *)weft_srv.loops[i].stats + offset),
                                      memory_order_relaxed);
    return total;
}

void weft_metrics_slot_totals(int slot, uint64_t *count, double *sum_seconds)
{
    *count = 0;
    *sum_seconds = 0;
    if (slot < 0)
        return;
    size_t base = offsetof(weft_loop_stats, slots) + (size_t)slot * sizeof(weft_slot_stats);
    for (int c = 1; c <= 5; c++)
        *count += sum_loops(base + offsetof(weft_slot_stats, code) + (size_t)c * sizeof(atomic_uint_fast64_t));
    *sum_seconds = (double)sum_loops(base + offsetof(weft_slot_stats, sum_ns)) / 1e9;
}

static void histogram(FILE *f, const char *name, const char *labels, const uint64_t *buckets, uint64_t count,
                      double sum)
{
    uint64_t cum = 0;
    for (int b = 0; b < WEFT_HIST_BUCKETS; b++) {
        cum += buckets[b];
        fprintf(f, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, *labels ? "," : "", weft_hist_bounds[b],
                (unsigned long long)cum);
    }
    fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, *labels ? "," : "", (unsigned long long)count);
    fprintf(f, "%s_sum%s%s%s %.9f\n", name, *labels ? "{" : "", labels, *labels ? "}" : "", sum);
    fprintf(f, "%s_count%s%s%s %llu\n", name, *labels ? "{" : "", labels, *labels ? "}" : "",
            (unsigned long long)count);
}

static void route_metrics(FILE *f)
{
    static const char *const classes[] = {"", "1xx", "2xx", "3xx", "4xx", "5xx"};
    pthread_mutex_lock(&slots_mu);
    int n = n_slots;
    pthread_mutex_unlock(&slots_mu);
    header(f, "weft_requests_total", "counter", "Requests answered, by route, dispatch policy and status class.");
    for (int i = 0; i < n; i++)
        for (int c = 1; c <= 5; c++) {
            uint64_t v = sum_loops(offsetof(weft_loop_stats, slots) + (size_t)i * sizeof(weft_slot_stats) +
                                   offsetof(weft_slot_stats, code) + (size_t)c * sizeof(atomic_uint_fast64_t));
            fputs("weft_requests_total{route=\"", f);
            escape(f, slots[i].path);
            fprintf(f, "\",policy=\"%s\",code=\"%s\"} %llu\n", weft_dispatch_name(slots[i].dispatch), classes[c],
                    (unsigned long long)v);
        }
    header(f, "weft_request_duration_seconds", "histogram", "Time from dispatch to response, by route and policy.");
    for (int i = 0; i < n; i++) {
        uint64_t buckets[WEFT_HIST_BUCKETS], count = 0;
        size_t base = offsetof(weft_loop_stats, slots) + (size_t)i * sizeof(weft_slot_stats);
        for (int b = 0; b < WEFT_HIST_BUCKETS; b++)
            buckets[b] = sum_loops(base + offsetof(weft_slot_stats, bucket) + (size_t)b * sizeof(atomic_uint_fast64_t));
        for (int c = 1; c <= 5; c++)
            count += sum_loops(base + offsetof(weft_slot_stats, code) + (size_t)c * sizeof(atomic_uint_fast64_t));
        double sum = (double)sum_loops(base + offsetof(weft_slot_stats, sum_ns)) / 1e9;
        char *labels = NULL;
        size_t ll = 0;
        FILE *lf = open_memstream(&labels, &ll);
        fputs("route=\"", lf);
        escape(lf, slots[i].path);
        fprintf(lf, "\",policy=\"%s\"", weft_dispatch_name(slots[i].dispatch));
        fclose(lf);
        histogram(f, "weft_request_duration_seconds", labels, buckets, count, sum);
        free(labels);
    }
}

static long count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    long n = 0;
    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n - 3; /* ".", ".." and the directory's own fd */
}

char *weft_metrics_render(const weft_generation *gen, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    route_metrics(f);

    header(f, "weft_unmatched_requests_total", "counter", "Requests no route matched (404) or allowed (405).");
    fprintf(f, "weft_unmatched_requests_total{code=\"404\"} %llu\n",
            (unsigned long long)sum_loops(offsetof(weft_loop_stats, unmatched)));
    fprintf(f, "weft_unmatched_requests_total{code=\"405\"} %llu\n",
            (unsigned long long)sum_loops(offsetof(weft_loop_stats, unmatched) + sizeof(atomic_uint_fast64_t)));
    header(f, "weft_inflight_requests", "gauge", "Requests dispatched and not yet answered.");
    fprintf(f, "weft_inflight_requests %lld\n", (long long)sum_loops(offsetof(weft_loop_stats, inflight)));
    header(f, "weft_connections_open", "gauge", "Client connections open.");
    fprintf(f, "weft_connections_open %lld\n", (long long)sum_loops(offsetof(weft_loop_stats, connections)));
    header(f, "weft_connections_deferred_total", "counter",
           "Times accepting paused at limits.max_connections or for lack of file descriptors.");
    fprintf(f, "weft_connections_deferred_total %llu\n",
            (unsigned long long)sum_loops(offsetof(weft_loop_stats, conn_refused)));

    header(f, "weft_pool_size", "gauge", "Worker threads per pool.");
    for (size_t i = 0; i < gen->n_pools; i++) {
        weft_workpool_stats ps;
        weft_workpool_stats_get(gen->pools[i], &ps);
        fprintf(f, "weft_pool_size{pool=\"%s\"} %d\n", weft_workpool_name(gen->pools[i]), ps.size);
    }
    header(f, "weft_pool_busy_workers", "gauge", "Workers running a handler.");
    for (size_t i = 0; i < gen->n_pools; i++) {
        weft_workpool_stats ps;
        weft_workpool_stats_get(gen->pools[i], &ps);
        fprintf(f, "weft_pool_busy_workers{pool=\"%s\"} %d\n", weft_workpool_name(gen->pools[i]), ps.busy);
    }
    header(f, "weft_pool_queue_length", "gauge", "Requests waiting for a worker.");
    for (size_t i = 0; i < gen->n_pools; i++) {
        weft_workpool_stats ps;
        weft_workpool_stats_get(gen->pools[i], &ps);
        fprintf(f, "weft_pool_queue_length{pool=\"%s\"} %zu\n", weft_workpool_name(gen->pools[i]), ps.queued);
    }
    header(f, "weft_pool_rejected_total", "counter", "Requests refused with 503 because the pool queue was full.");
    for (size_t i = 0; i < gen->n_pools; i++) {
        weft_workpool_stats ps;
        weft_workpool_stats_get(gen->pools[i], &ps);
        fprintf(f, "weft_pool_rejected_total{pool=\"%s\"} %llu\n", weft_workpool_name(gen->pools[i]), ps.rejected);
    }

    header(f, "weft_coroutines_live", "gauge", "Coroutines running or suspended.");
    fprintf(f, "weft_coroutines_live %lld\n", (long long)sum_loops(offsetof(weft_loop_stats, coros_live)));
    header(f, "weft_coroutine_stack_bytes", "gauge", "Coroutine stack memory mapped (live and cached, guard pages included).");
    fprintf(f, "weft_coroutine_stack_bytes %lld\n", (long long)sum_loops(offsetof(weft_loop_stats, coro_bytes)));
    header(f, "weft_event_loop_lag_seconds", "gauge", "How late each event loop ran its last 100 ms tick.");
    for (int i = 0; i < weft_srv.n_loops; i++)
        fprintf(f, "weft_event_loop_lag_seconds{loop=\"%d\"} %.6f\n", i,
                (double)atomic_load_explicit(&weft_srv.loops[i].stats->lag_ns, memory_order_relaxed) / 1e9);
    header(f, "weft_blocked_handler_total", "counter", "Plugin code slices that held an event loop past blocking.threshold_ms.");
    fprintf(f, "weft_blocked_handler_total %llu\n", (unsigned long long)weft_blocking_total());

    weft_db_metrics_render(f);

    weft_reload_status rs;
    weft_reload_status_get(&rs);
    header(f, "weft_generation", "gauge", "The serving configuration generation.");
    fprintf(f, "weft_generation %lu\n", gen->id);
    header(f, "weft_reloads_total", "counter", "Reloads by outcome.");
    fprintf(f, "weft_reloads_total{outcome=\"ok\"} %lu\nweft_reloads_total{outcome=\"failed\"} %lu\n", rs.ok,
            rs.failed);

    long pages = 0, rss = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    if (statm != NULL) {
        if (fscanf(statm, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(statm);
    }
    header(f, "weft_process_resident_memory_bytes", "gauge", "Resident set size.");
    fprintf(f, "weft_process_resident_memory_bytes %ld\n", rss * sysconf(_SC_PAGESIZE));
    header(f, "weft_process_open_fds", "gauge", "Open file descriptors.");
    fprintf(f, "weft_process_open_fds %ld\n", count_fds());
    fclose(f);
    return buf;
}
