#include "base/stats.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

const double weft_hist_bounds[WEFT_HIST_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                     0.1,    0.25,  0.5,    1,     2.5,  5,     10};

static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char *path;
    const char *policy; /* a static string */
} slots[WEFT_STAT_SLOTS];
static atomic_int n_slots;

/* Loop blocks are added before the loops start and freed after they stop;
 * scrapes in between only read the array. */
static weft_loop_stats **loops;
static atomic_int n_loops;

int weft_hist_index(uint64_t ns)
{
    double s = (double)ns / 1e9;
    for (int i = 0; i < WEFT_HIST_BUCKETS; i++)
        if (s <= weft_hist_bounds[i])
            return i;
    return WEFT_HIST_BUCKETS;
}

weft_loop_stats *weft_stats_loop_new(void)
{
    int n = atomic_load(&n_loops);
    weft_loop_stats **grown = realloc(loops, (size_t)(n + 1) * sizeof(*loops));
    if (grown == NULL)
        return NULL;
    loops = grown;
    if ((loops[n] = calloc(1, sizeof(weft_loop_stats))) == NULL)
        return NULL;
    atomic_store(&n_loops, n + 1);
    return loops[n];
}

void weft_stats_loops_free(void)
{
    int n = atomic_exchange(&n_loops, 0);
    for (int i = 0; i < n; i++)
        free(loops[i]);
    free(loops);
    loops = NULL;
}

int weft_stats_loop_count(void) { return atomic_load(&n_loops); }

const weft_loop_stats *weft_stats_loop_at(int i) { return loops[i]; }

uint64_t weft_stats_sum(size_t offset)
{
    uint64_t total = 0;
    int n = atomic_load(&n_loops);
    for (int i = 0; i < n; i++)
        total += atomic_load_explicit((atomic_uint_fast64_t *)((char *)loops[i] + offset), memory_order_relaxed);
    return total;
}

int weft_stats_slot(const char *path, const char *policy)
{
    pthread_mutex_lock(&slots_mu);
    int found = -1, n = atomic_load(&n_slots);
    for (int i = 0; i < n && found < 0; i++)
        if (strcmp(slots[i].policy, policy) == 0 && strcmp(slots[i].path, path) == 0)
            found = i;
    if (found < 0 && n < WEFT_STAT_SLOTS && (slots[n].path = strdup(path)) != NULL) {
        slots[n].policy = policy;
        found = n;
        atomic_store(&n_slots, n + 1); /* published after the key is written */
    }
    pthread_mutex_unlock(&slots_mu);
    return found;
}

int weft_stats_slot_count(void) { return atomic_load(&n_slots); }

void weft_stats_slot_key(int slot, const char **path, const char **policy)
{
    *path = slots[slot].path;
    *policy = slots[slot].policy;
}

void weft_stats_request(weft_loop_stats *s, int slot, int status, uint64_t elapsed_ns)
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

void weft_stats_inflight(weft_loop_stats *s, int_fast64_t n, uint64_t now_ns)
{
    int_fast64_t was = atomic_load_explicit(&s->inflight, memory_order_relaxed);
    if (now_ns > s->inflight_at_ns) {
        if (s->inflight_at_ns != 0 && was > 0)
            weft_stat_add(&s->inflight_ns, (uint64_t)was * (now_ns - s->inflight_at_ns));
        s->inflight_at_ns = now_ns;
    }
    atomic_store_explicit(&s->inflight, n, memory_order_relaxed);
}

void weft_stats_cancelled(weft_loop_stats *s, int slot)
{
    if (slot >= 0)
        weft_stat_add(&s->slots[slot].cancelled, 1);
}

void weft_stats_refused(weft_loop_stats *s, int slot, int why)
{
    if (slot >= 0 && why >= 0 && why < 2)
        weft_stat_add(&s->slots[slot].refused[why], 1);
}

void weft_stats_slot_totals(int slot, uint64_t *count, double *sum_seconds)
{
    *count = 0;
    *sum_seconds = 0;
    if (slot < 0)
        return;
    size_t base = offsetof(weft_loop_stats, slots) + (size_t)slot * sizeof(weft_slot_stats);
    for (int c = 1; c <= 5; c++)
        *count += weft_stats_sum(base + offsetof(weft_slot_stats, code) + (size_t)c * sizeof(atomic_uint_fast64_t));
    *sum_seconds = (double)weft_stats_sum(base + offsetof(weft_slot_stats, sum_ns)) / 1e9;
}

void weft_stats_write_header(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void weft_stats_write_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\n') {
            fputs("\\n", f);
            continue;
        }
        if (*s == '\\' || *s == '"')
            fputc('\\', f);
        fputc(*s, f);
    }
}

void weft_stats_write_histogram(FILE *f, const char *name, const char *labels, const uint64_t *buckets,
                                uint64_t count, double sum)
{
    const char *sep = *labels ? "," : "";
    uint64_t cum = 0;
    for (int b = 0; b < WEFT_HIST_BUCKETS; b++) {
        cum += buckets[b];
        fprintf(f, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, weft_hist_bounds[b], (unsigned long long)cum);
    }
    fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, (unsigned long long)count);
    fprintf(f, "%s_sum%s%s%s %.9f\n", name, *labels ? "{" : "", labels, *labels ? "}" : "", sum);
    fprintf(f, "%s_count%s%s%s %llu\n", name, *labels ? "{" : "", labels, *labels ? "}" : "", (unsigned long long)count);
}
