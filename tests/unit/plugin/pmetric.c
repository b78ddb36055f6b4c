/*
 * Tests for server/plugin/pmetric.c and host_metric.c: a plugin's metric
 * calls as it makes them, through the host tables of both ABIs, on a
 * weft_init context (plugin/route_init.h) like the one its load() or init()
 * gets. The naming rules themselves are base/custom_stats.c's (tests in
 * tests/unit/custom_stats.c); what is checked here is the plugin-facing
 * half: the series belongs to the context's plugin, a refused name fails
 * that load or init with the config file and line, and a NULL handle (what
 * a refused declaration returned) is safe to update. The registry is
 * process-wide and every test runs in its own process.
 */
#include "plugin/pmetric.h"

#include <criterion/criterion.h>
#include <string.h>

#include "base/custom_stats.h"
#include "plugin/host.h"
#include "plugin/route_init.h"
#include "unit.h"

TestSuite(pmetric, .fini = wt_unit_teardown, .timeout = 30);

static const weft_route_cfg route_x = {.path = "/x", .plugin = "meter", .file = "/etc/weft/weft.conf", .line = 12};

/* An init context for route /x of plugin "meter", at weft.conf:12. */
static weft_init route_ctx(char *what, size_t size)
{
    return weft_route_init_for_route(&route_x, what, size, &wt_errs);
}

static const weft_cstat *series(const weft_metric *m) { return (const weft_cstat *)m; }

/* ---- the tables ---- */

Test(pmetric, both_tables_hand_out_these_functions)
{
    const weft_host_metric *g = weft_host_api2.metric;
    cr_assert_eq(g, &weft_host_metric_group, "API 2's table has no metric group");
    cr_assert_eq(g->struct_size, sizeof(weft_host_metric));
    cr_assert_eq(g->version, WEFT_HOST_METRIC_VERSION);
    cr_assert(g->counter == weft_pmetric_metric_counter && g->gauge == weft_pmetric_metric_gauge &&
              g->histogram == weft_pmetric_metric_histogram);
    cr_assert(g->add == weft_pmetric_metric_add && g->set == weft_pmetric_metric_set &&
              g->observe == weft_pmetric_metric_observe);

    const weft_host_v1 *v1 = weft_host_table.abi1;
    cr_assert_eq(v1, &weft_host_api1);
    cr_assert(v1->metric_counter == weft_pmetric_metric_counter && v1->metric_gauge == weft_pmetric_metric_gauge &&
              v1->metric_histogram == weft_pmetric_metric_histogram);
    cr_assert(v1->metric_add == weft_pmetric_metric_add && v1->metric_set == weft_pmetric_metric_set &&
              v1->metric_observe == weft_pmetric_metric_observe);
}

/* ---- declaring ---- */

Test(pmetric, a_series_belongs_to_the_contexts_plugin)
{
    char what[300];
    weft_init ctx = route_ctx(what, sizeof(what));
    const weft_host_metric *g = weft_host_api2.metric;
    int before = weft_cstat_count();

    weft_metric *c = g->counter(&ctx, "jobs_total", "jobs run");
    weft_metric *ga = g->gauge(&ctx, "queue_depth", "jobs waiting");
    weft_metric *h = g->histogram(&ctx, "job_seconds", "time per job");
    cr_assert(c != NULL && ga != NULL && h != NULL, "refused:%s", wt_errs_text(&wt_errs));
    cr_assert_eq(wt_errs.count, 0);
    cr_assert_eq(ctx.failed, 0);
    cr_assert_eq(weft_cstat_count(), before + 3);

    cr_assert_str_eq(series(c)->plugin, "meter");
    cr_assert_str_eq(series(c)->name, "jobs_total");
    cr_assert_str_eq(series(c)->help, "jobs run");
    cr_assert_eq(series(c)->type, WEFT_CSTAT_COUNTER);
    cr_assert_eq(series(ga)->type, WEFT_CSTAT_GAUGE);
    cr_assert_eq(series(h)->type, WEFT_CSTAT_HISTOGRAM);
    cr_assert_eq(weft_cstat_at(before), series(c), "not in declaration order");
}

/* A second route (or a reload) declaring the same name carries on with the
 * same series; another plugin's series of that name is its own. */
Test(pmetric, the_same_name_again_is_the_same_series)
{
    char what[300];
    weft_init a = route_ctx(what, sizeof(what));
    weft_metric *first = weft_pmetric_metric_counter(&a, "jobs_total", "jobs run");
    weft_pmetric_metric_add(first, 3);

    weft_route_cfg route_y = route_x;
    route_y.path = "/y";
    char what_y[300];
    weft_init b = weft_route_init_for_route(&route_y, what_y, sizeof(what_y), &wt_errs);
    weft_metric *again = weft_pmetric_metric_counter(&b, "jobs_total", "jobs run");
    cr_assert_eq(again, first);
    cr_assert_eq(weft_cstat_value(series(again)), 3);

    weft_route_cfg other = route_x;
    other.plugin = "other";
    weft_init o = weft_route_init_for_route(&other, what_y, sizeof(what_y), &wt_errs);
    weft_metric *theirs = weft_pmetric_metric_counter(&o, "jobs_total", "jobs run");
    cr_assert(theirs != NULL && theirs != first);
    cr_assert_str_eq(series(theirs)->plugin, "other");
    cr_assert_eq(weft_cstat_value(series(theirs)), 0);
    cr_assert_eq(wt_errs.count, 0, "%s", wt_errs_text(&wt_errs));
}

/* ---- refusals fail the load or init that asked ---- */

Test(pmetric, a_refused_name_fails_the_routes_init_with_file_and_line)
{
    char what[300];
    weft_init ctx = route_ctx(what, sizeof(what));
    weft_metric *m = weft_host_api2.metric->counter(&ctx, "hits", "no _total");
    cr_assert_null(m);
    cr_assert_eq(ctx.failed, 1, "the init would go on as if it had its counter");
    cr_assert_eq(wt_errs.count, 1, "%s", wt_errs_text(&wt_errs));
    wt_expect_msg(&wt_errs, "/etc/weft/weft.conf:12: route /x: plugin 'meter' init failed: ", "hits",
                  "must end in _total");

    /* the NULL it got is harmless to use, as a plugin that does not check would */
    weft_pmetric_metric_add(NULL, 1);
    weft_pmetric_metric_set(NULL, 1);
    weft_pmetric_metric_observe(NULL, 1);
    weft_host_api1.metric_add(NULL, 1);
}

Test(pmetric, a_refused_name_in_load_says_load)
{
    weft_init ctx = {.plugin = "meter", .what = "plugins.meter", .file = "/etc/weft/weft.conf", .line = 30,
                     .errs = &wt_errs};
    cr_assert_null(weft_pmetric_metric_gauge(&ctx, "level_total", "a gauge named like a counter"));
    cr_assert_eq(ctx.failed, 1);
    wt_expect_msg(&wt_errs, "/etc/weft/weft.conf:30: plugins.meter: plugin 'meter' load failed: ",
                  "only a counter");
}

Test(pmetric, a_name_taken_by_another_type_names_its_owner)
{
    char what[300];
    weft_init ctx = route_ctx(what, sizeof(what));
    cr_assert_not_null(weft_pmetric_metric_gauge(&ctx, "queue", "depth"));
    cr_assert_null(weft_pmetric_metric_histogram(&ctx, "queue", "depth"));
    cr_assert_eq(ctx.failed, 1);
    wt_expect_msg(&wt_errs, "route /x: plugin 'meter' init failed", "is already a gauge (of plugin 'meter')");

    /* one refusal does not undo what the context declared before it */
    weft_init again = route_ctx(what, sizeof(what));
    weft_metric *g = weft_pmetric_metric_gauge(&again, "queue", "depth");
    cr_assert_not_null(g);
    cr_assert_eq(again.failed, 0);
}

/* ---- updating ---- */

Test(pmetric, updates_reach_the_series)
{
    char what[300];
    weft_init ctx = route_ctx(what, sizeof(what));
    weft_metric *c = weft_pmetric_metric_counter(&ctx, "sent_bytes_total", "bytes sent");
    weft_metric *g = weft_pmetric_metric_gauge(&ctx, "workers", "busy workers");
    weft_metric *h = weft_pmetric_metric_histogram(&ctx, "fill_seconds", "fill time");
    cr_assert(c && g && h, "%s", wt_errs_text(&wt_errs));

    weft_pmetric_metric_add(c, 1.5);
    weft_pmetric_metric_add(c, 2);
    weft_pmetric_metric_add(c, -10); /* a counter never goes down */
    cr_assert_float_eq(weft_cstat_value(series(c)), 3.5, 1e-9);

    weft_pmetric_metric_set(g, 7);
    weft_pmetric_metric_add(g, -2);
    cr_assert_float_eq(weft_cstat_value(series(g)), 5, 1e-9);

    weft_pmetric_metric_observe(h, 0.003);
    weft_pmetric_metric_observe(h, 0.25);
    cr_assert_eq(atomic_load(&series(h)->count), 2);
    cr_assert_float_eq(weft_cstat_value(series(h)), 0.253, 1e-9);
    uint64_t in_buckets = 0;
    for (int i = 0; i < WEFT_HIST_BUCKETS; i++)
        in_buckets += atomic_load(&series(h)->bucket[i]);
    cr_assert_eq(in_buckets, 2);
    cr_assert_eq(atomic_load(&series(h)->bucket[weft_hist_index(250000000)]), 1, "0.25 s is not in its bucket");

    /* ABI 1's calls update the same series */
    weft_host_api1.metric_set(g, 1);
    cr_assert_float_eq(weft_cstat_value(series(g)), 1, 1e-9);
}
