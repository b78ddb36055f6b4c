/*
 * Tests for server/base/custom_stats.c: the Prometheus naming rules for
 * plugin series, one series per (plugin, name) across declarations, one
 * type per name, and lock-free updates from many threads.
 */
#include "base/custom_stats.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

static weft_cstat *declare(const char *plugin, const char *name, weft_cstat_type type, char *why)
{
    return weft_cstat_declare(plugin, name, type, "help", why, 300);
}

Test(custom_stats, names_follow_the_prometheus_rules)
{
    char why[300];
    cr_assert_not_null(declare("p", "good_total", WEFT_CSTAT_COUNTER, why));
    cr_assert_not_null(declare("p", "Good_2", WEFT_CSTAT_GAUGE, why));
    cr_assert_not_null(declare("p", "fill_seconds", WEFT_CSTAT_HISTOGRAM, why), "%s", why);
    cr_assert_not_null(declare("p", "sent_bytes_total", WEFT_CSTAT_COUNTER, why), "%s", why);
    cr_assert_not_null(declare("p", "queue_counter", WEFT_CSTAT_GAUGE, why), "another type's word: %s", why);
    static const struct {
        const char *name;
        weft_cstat_type type;
        const char *says;
    } bad[] = {
        {"", WEFT_CSTAT_GAUGE, "is not valid"},
        {"9x", WEFT_CSTAT_GAUGE, "is not valid"},
        {"a-b", WEFT_CSTAT_GAUGE, "is not valid"},
        {"a:b", WEFT_CSTAT_GAUGE, "is not valid"},
        {"hits", WEFT_CSTAT_COUNTER, "must end in _total"},
        {"level_total", WEFT_CSTAT_GAUGE, "only a counter"},
        {"lat_bucket", WEFT_CSTAT_HISTOGRAM, "_bucket, _sum or _count"},
        {"lat_count", WEFT_CSTAT_GAUGE, "_bucket, _sum or _count"},
        /* what promtool check metrics would flag in /metrics */
        {"cacheHits_total", WEFT_CSTAT_COUNTER, "snake_case"},
        {"fill_ms", WEFT_CSTAT_HISTOGRAM, "abbreviation"},
        {"size_kb", WEFT_CSTAT_GAUGE, "abbreviation"},
        {"fill_milliseconds", WEFT_CSTAT_HISTOGRAM, "base unit seconds instead of milliseconds"},
        {"cache_kilobytes", WEFT_CSTAT_GAUGE, "base unit bytes instead of kilobytes"},
        {"uptime_days", WEFT_CSTAT_GAUGE, "base unit seconds instead of days"},
        {"queue_gauge", WEFT_CSTAT_GAUGE, "its own type"},
        {"hits_counter_total", WEFT_CSTAT_COUNTER, "its own type"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_null(declare("p", bad[i].name, bad[i].type, why), "%s accepted", bad[i].name);
        cr_assert(strstr(why, bad[i].says) != NULL, "%s: %s", bad[i].name, why);
    }
    cr_assert_null(weft_cstat_declare("p", "level", WEFT_CSTAT_GAUGE, "two\nlines", why, sizeof(why)));
    cr_assert(strstr(why, "newline") != NULL, "%s", why);
}

Test(custom_stats, a_name_is_one_series_per_plugin_and_one_type)
{
    char why[300];
    weft_cstat *a = declare("p", "jobs_total", WEFT_CSTAT_COUNTER, why);
    weft_cstat_add(a, 2);
    cr_assert_eq(declare("p", "jobs_total", WEFT_CSTAT_COUNTER, why), a, "a reload must find the same series");
    weft_cstat *b = declare("q", "jobs_total", WEFT_CSTAT_COUNTER, why);
    cr_assert(b != NULL && b != a);
    cr_assert_not_null(declare("q", "queue", WEFT_CSTAT_GAUGE, why));
    cr_assert_null(declare("r", "queue", WEFT_CSTAT_HISTOGRAM, why));
    cr_assert(strstr(why, "is already a gauge (of plugin 'q')") != NULL, "%s", why);
    weft_cstat_add(a, -1); /* a counter never goes down */
    cr_assert_eq(weft_cstat_value(a), 2);
}

static weft_cstat *shared_hist;

static void *observe_many(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10000; i++)
        weft_cstat_observe(shared_hist, 0.003);
    return NULL;
}

Test(custom_stats, histogram_observations_from_threads_all_count)
{
    char why[300];
    shared_hist = declare("p", "work_seconds", WEFT_CSTAT_HISTOGRAM, why);
    cr_assert_not_null(shared_hist, "%s", why);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, observe_many, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(atomic_load(&shared_hist->count), 40000);
    cr_assert_eq(atomic_load(&shared_hist->bucket[3]), 40000); /* 0.003 <= 0.005 */
    cr_assert_float_eq(weft_cstat_value(shared_hist), 120.0, 1e-6);
}
