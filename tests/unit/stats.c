/*
 * Tests for server/base/stats.c: route series, per-loop blocks summed by a
 * scrape, histogram buckets, and the one Prometheus writer.
 */
#include "base/stats.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static char *render(void (*write)(FILE *f))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    write(f);
    fclose(f);
    return buf;
}

Test(stats, a_route_series_is_found_again_by_path_and_policy)
{
    int a = weft_stats_slot("/s/a", "pool");
    int b = weft_stats_slot("/s/a", "coroutine");
    cr_assert_geq(a, 0);
    cr_assert_neq(a, b, "the same path under another policy is another series");
    cr_assert_eq(weft_stats_slot("/s/a", "pool"), a, "a reload finds the series it had");
    const char *path, *policy;
    weft_stats_slot_key(b, &path, &policy);
    cr_assert_str_eq(path, "/s/a");
    cr_assert_str_eq(policy, "coroutine");
    cr_assert_geq(weft_stats_slot_count(), 2);
}

Test(stats, slots_run_out_without_harm)
{
    char path[32];
    int last = 0;
    for (int i = 0; i < WEFT_STAT_SLOTS + 5; i++) {
        snprintf(path, sizeof(path), "/many/%d", i);
        last = weft_stats_slot(path, "reactive");
    }
    cr_assert_eq(last, -1, "past WEFT_STAT_SLOTS a route has no series, and recording for it does nothing");
    weft_loop_stats *s = weft_stats_loop_new();
    weft_stats_request(s, -1, 200, 1000);
    weft_stats_loops_free();
}

Test(stats, requests_are_summed_over_every_loop)
{
    int slot = weft_stats_slot("/sum", "pool");
    weft_loop_stats *l0 = weft_stats_loop_new(), *l1 = weft_stats_loop_new();
    cr_assert(l0 != NULL && l1 != NULL);
    weft_stats_request(l0, slot, 200, 300000);     /* 0.3 ms: first bucket */
    weft_stats_request(l1, slot, 503, 2000000000); /* 2 s */
    weft_stats_request(l1, slot, 404, 20000000);   /* 20 ms */
    uint64_t count;
    double sum;
    weft_stats_slot_totals(slot, &count, &sum);
    cr_assert_eq(count, 3);
    cr_assert_float_eq(sum, 2.0203, 1e-9);
    cr_assert_eq(atomic_load(&l0->slots[slot].code[2]), 1);
    cr_assert_eq(atomic_load(&l1->slots[slot].code[5]), 1);
    cr_assert_eq(atomic_load(&l1->slots[slot].code[4]), 1);
    cr_assert_eq(atomic_load(&l0->slots[slot].bucket[0]), 1);
    weft_stat_add(&l0->conn_refused, 2);
    weft_stat_add(&l1->conn_refused, 5);
    cr_assert_eq(weft_stats_sum(offsetof(weft_loop_stats, conn_refused)), 7);
    cr_assert_eq(weft_stats_loop_count(), 2);
    weft_stats_loops_free();
    cr_assert_eq(weft_stats_loop_count(), 0);
    cr_assert_eq(weft_stats_sum(offsetof(weft_loop_stats, conn_refused)), 0);
}

Test(stats, the_inflight_integral_is_the_time_each_count_lasted)
{
    weft_loop_stats *l = weft_stats_loop_new();
    cr_assert(l != NULL);
    weft_stats_inflight(l, 2, 1000000000);  /* 2 from 1 s */
    weft_stats_inflight(l, 2, 2000000000);  /* a tick: the same count, folded in */
    weft_stats_inflight(l, 1, 3000000000);  /* 2 for 2 s */
    weft_stats_inflight(l, 0, 2500000000);  /* a time before the last one's counts as that one's */
    weft_stats_inflight(l, 3, 4000000000);  /* 0 for 1 s */
    weft_stats_inflight(l, 0, 4500000000);  /* 3 for 0.5 s */
    cr_assert_eq(atomic_load(&l->inflight_ns), 5500000000u);
    cr_assert_eq(atomic_load(&l->inflight), 0);
    cr_assert_eq(weft_stats_sum(offsetof(weft_loop_stats, inflight_ns)), 5500000000u);
    weft_stats_loops_free();
}

Test(stats, bucket_index_follows_the_bounds)
{
    cr_assert_eq(weft_hist_index(0), 0);
    cr_assert_eq(weft_hist_index(500000), 0, "a bound is inclusive (le)");
    cr_assert_eq(weft_hist_index(500001), 1);
    cr_assert_eq(weft_hist_index(10000000000ull), WEFT_HIST_BUCKETS - 1);
    cr_assert_eq(weft_hist_index(10000000001ull), WEFT_HIST_BUCKETS, "past the last bound only +Inf counts it");
}

static void write_hist(FILE *f)
{
    uint64_t buckets[WEFT_HIST_BUCKETS] = {1, 0, 2};
    weft_stats_write_header(f, "x_seconds", "histogram", "A test.");
    weft_stats_write_histogram(f, "x_seconds", "route=\"/a\"", buckets, 4, 1.5);
}

Test(stats, histograms_are_cumulative_with_inf_sum_and_count)
{
    char *out = render(write_hist);
    cr_assert(strstr(out, "# HELP x_seconds A test.\n# TYPE x_seconds histogram\n") == out);
    cr_assert(strstr(out, "x_seconds_bucket{route=\"/a\",le=\"0.0005\"} 1\n") != NULL);
    cr_assert(strstr(out, "x_seconds_bucket{route=\"/a\",le=\"0.0025\"} 3\n") != NULL, "%s", out);
    cr_assert(strstr(out, "x_seconds_bucket{route=\"/a\",le=\"10\"} 3\n") != NULL);
    cr_assert(strstr(out, "x_seconds_bucket{route=\"/a\",le=\"+Inf\"} 4\n") != NULL, "+Inf is the count");
    cr_assert(strstr(out, "x_seconds_sum{route=\"/a\"} 1.500000000\n") != NULL);
    cr_assert(strstr(out, "x_seconds_count{route=\"/a\"} 4\n") != NULL);
    free(out);
}

static void write_unlabelled(FILE *f)
{
    uint64_t buckets[WEFT_HIST_BUCKETS] = {0};
    weft_stats_write_histogram(f, "y", "", buckets, 0, 0);
}

Test(stats, a_histogram_without_labels_has_no_empty_braces)
{
    char *out = render(write_unlabelled);
    cr_assert(strstr(out, "y_bucket{le=\"+Inf\"} 0\n") != NULL, "%s", out);
    cr_assert(strstr(out, "y_sum 0.000000000\n") != NULL);
    cr_assert(strstr(out, "y_count 0\n") != NULL);
    cr_assert(strstr(out, "{}") == NULL);
    free(out);
}

static void write_escaped(FILE *f) { weft_stats_write_escaped(f, "a\"b\\c\nd"); }

Test(stats, label_values_are_escaped)
{
    char *out = render(write_escaped);
    cr_assert_str_eq(out, "a\\\"b\\\\c\\nd");
    free(out);
}
