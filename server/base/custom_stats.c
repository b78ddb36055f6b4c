#include "base/custom_stats.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static weft_cstat series[WEFT_CSTAT_MAX];
static atomic_int n_series;

const char *weft_cstat_type_name(weft_cstat_type type)
{
    return type == WEFT_CSTAT_COUNTER ? "counter" : type == WEFT_CSTAT_GAUGE ? "gauge" : "histogram";
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Prometheus's [a-zA-Z_:][a-zA-Z0-9_:]*, without the colons it reserves for
 * recording rules, and the suffixes a scraper gives meaning to. */
static int check_name(const char *name, weft_cstat_type type, char *why, size_t size)
{
    size_t n = name != NULL ? strlen(name) : 0;
    int ok = n > 0 && n <= 100 && !(name[0] >= '0' && name[0] <= '9');
    for (size_t i = 0; ok && i < n; i++)
        ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
             (name[i] >= '0' && name[i] <= '9') || name[i] == '_';
    if (!ok) {
        snprintf(why, size,
                 "metric name '%s' is not valid: 1 to 100 characters of [a-zA-Z0-9_], not starting with a digit",
                 name != NULL ? name : "(null)");
        return -1;
    }
    if ((type == WEFT_CSTAT_COUNTER) != ends_with(name, "_total")) {
        snprintf(why, size, "metric name '%s': %s", name,
                 type == WEFT_CSTAT_COUNTER ? "a counter's name must end in _total"
                                            : "only a counter's name may end in _total");
        return -1;
    }
    if (ends_with(name, "_bucket") || ends_with(name, "_sum") || ends_with(name, "_count")) {
        snprintf(why, size, "metric name '%s' must not end in _bucket, _sum or _count (histogram series use them)",
                 name);
        return -1;
    }
    return 0;
}

weft_cstat *weft_cstat_declare(const char *plugin, const char *name, weft_cstat_type type, const char *help,
                               char *why, size_t size)
{
    if (check_name(name, type, why, size) != 0)
        return NULL;
    if (help == NULL)
        help = "";
    if (strpbrk(help, "\n\\") != NULL) {
        snprintf(why, size, "metric %s: the help text must not contain a newline or a backslash", name);
        return NULL;
    }
    pthread_mutex_lock(&mu);
    weft_cstat *found = NULL;
    int n = atomic_load(&n_series);
    for (int i = 0; i < n && found == NULL; i++) {
        weft_cstat *c = &series[i];
        if (strcmp(c->name, name) != 0)
            continue;
        if (c->type != type) {
            snprintf(why, size, "metric %s is already a %s (of plugin '%s'); it cannot also be a %s", name,
                     weft_cstat_type_name(c->type), c->plugin, weft_cstat_type_name(type));
            pthread_mutex_unlock(&mu);
            return NULL;
        }
        if (strcmp(c->plugin, plugin) == 0)
            found = c; /* the same series again: a reload, or a second declaration */
    }
    if (found == NULL && n == WEFT_CSTAT_MAX)
        snprintf(why, size, "metric %s: the server holds at most %d plugin series", name, WEFT_CSTAT_MAX);
    else if (found == NULL) {
        weft_cstat *c = &series[n];
        c->plugin = strdup(plugin);
        c->name = strdup(name);
        c->help = strdup(help);
        c->type = type;
        if (c->plugin == NULL || c->name == NULL || c->help == NULL) {
            free(c->plugin);
            free(c->name);
            free(c->help);
            memset(c, 0, sizeof(*c));
            snprintf(why, size, "metric %s: out of memory", name);
        } else {
            found = c;
            atomic_store(&n_series, n + 1); /* published once its key is written */
        }
    }
    pthread_mutex_unlock(&mu);
    return found;
}

static double as_double(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof(d));
    return d;
}

static uint64_t as_bits(double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof(bits));
    return bits;
}

/* Many writers on many threads: a compare-and-swap loop on the bits. */
static void add_double(atomic_uint_fast64_t *a, double v)
{
    uint64_t old = atomic_load_explicit(a, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(a, &old, as_bits(as_double(old) + v), memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

void weft_cstat_add(weft_cstat *c, double v)
{
    /* A counter only goes up: a negative or NaN step would break rate(). */
    if (c->type == WEFT_CSTAT_GAUGE || (c->type == WEFT_CSTAT_COUNTER && v >= 0))
        add_double(&c->value, v);
}

void weft_cstat_set(weft_cstat *c, double v)
{
    if (c->type == WEFT_CSTAT_GAUGE)
        atomic_store_explicit(&c->value, as_bits(v), memory_order_relaxed);
}

void weft_cstat_observe(weft_cstat *c, double v)
{
    if (c->type != WEFT_CSTAT_HISTOGRAM || v != v)
        return;
    int b = 0;
    while (b < WEFT_HIST_BUCKETS && v > weft_hist_bounds[b])
        b++;
    if (b < WEFT_HIST_BUCKETS)
        atomic_fetch_add_explicit(&c->bucket[b], 1, memory_order_relaxed);
    add_double(&c->value, v);
    atomic_fetch_add_explicit(&c->count, 1, memory_order_relaxed);
}

double weft_cstat_value(const weft_cstat *c)
{
    return as_double(atomic_load_explicit(&((weft_cstat *)c)->value, memory_order_relaxed));
}

int weft_cstat_count(void) { return atomic_load(&n_series); }

weft_cstat *weft_cstat_at(int i) { return &series[i]; }
