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

/* One '_'-separated word of `name` at a time, lowercased, into `word`. */
static const char *next_word(const char *p, char *word, size_t size)
{
    size_t n = 0;
    for (; *p != '\0' && *p != '_'; p++)
        if (n + 1 < size)
            word[n++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    word[n] = '\0';
    return *p == '_' ? p + 1 : p;
}

/* 1 when `word` is a unit, SI-prefixed or not, with the unit Prometheus
 * wants instead in *base (the word itself when it is a base unit). */
static int unit_of(const char *word, const char **base)
{
    static const char *const units[][2] = {
        {"amperes", NULL}, {"bytes", NULL}, {"celsius", NULL}, {"grams", NULL}, {"joules", NULL},
        {"kelvin", NULL}, {"meters", NULL}, {"metres", NULL}, {"seconds", NULL}, {"volts", NULL},
        {"minutes", "seconds"}, {"hours", "seconds"}, {"days", "seconds"}, {"weeks", "seconds"},
        {"kelvins", "kelvin"}, {"fahrenheit", "celsius"}, {"rankine", "celsius"}, {"inches", "meters"},
        {"yards", "meters"}, {"miles", "meters"}, {"bits", "bytes"}, {"calories", "joules"},
        {"pounds", "grams"}, {"ounces", "grams"},
    };
    static const char *const prefixes[] = {"", "pico", "nano", "micro", "milli", "centi", "deci", "deca", "hecto",
                                           "kilo", "kibi", "mega", "mibi", "giga", "gibi", "tera", "tebi", "peta", "pebi"};
    for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
        size_t k = strlen(prefixes[p]);
        if (strncmp(word, prefixes[p], k) != 0)
            continue;
        for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++)
            if (strcmp(word + k, units[u][0]) == 0) {
                *base = units[u][1] != NULL ? units[u][1] : units[u][0];
                return 1;
            }
    }
    return 0;
}

/* What `promtool check metrics` (client_golang's promlint) would say of the
 * series plugin_NAME, so that no plugin can make /metrics fail it: snake
 * case, no unit abbreviation, the first unit named a base unit, and not
 * its own type in its name. */
static int check_lint(const char *name, weft_cstat_type type, char *why, size_t size)
{
    static const char *const abbrev[] = {"s", "ms", "us", "ns", "sec", "b", "kb", "mb", "gb", "tb", "pb", "m", "h", "d"};
    for (const char *p = name; p[0] != '\0' && p[1] != '\0'; p++)
        if (p[0] >= 'a' && p[0] <= 'z' && p[1] >= 'A' && p[1] <= 'Z') {
            snprintf(why, size, "metric name '%s': write it in snake_case, not camelCase", name);
            return -1;
        }
    char word[101];
    int unit_seen = 0;
    for (const char *p = name; *p != '\0';) {
        p = next_word(p, word, sizeof(word));
        for (size_t i = 0; i < sizeof(abbrev) / sizeof(abbrev[0]); i++)
            if (strcmp(word, abbrev[i]) == 0) {
                snprintf(why, size, "metric name '%s': spell the unit out ('%s' is an abbreviation: seconds, bytes)",
                         name, word);
                return -1;
            }
        const char *base;
        if (!unit_seen && unit_of(word, &base)) {
            unit_seen = 1;
            if (strcmp(word, base) != 0) {
                snprintf(why, size, "metric name '%s': use the base unit %s instead of %s", name, base, word);
                return -1;
            }
        }
        if (strcmp(word, weft_cstat_type_name(type)) == 0) {
            snprintf(why, size, "metric name '%s' must not name its own type (%s)", name, word);
            return -1;
        }
    }
    return 0;
}

weft_cstat *weft_cstat_declare(const char *plugin, const char *name, weft_cstat_type type, const char *help,
                               char *why, size_t size)
{
    if (check_name(name, type, why, size) != 0 || check_lint(name, type, why, size) != 0)
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
