/* Custom plugin metrics (plugin API 1.1): declared at load, counted from
 * every policy's routes, shown in /metrics with the plugin label, kept
 * across a reload; a bad name refused at load with the plugin named. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char conf_fmt[] =
    "threads = 2; " WT_LISTEN "\n"
    "plugins = { metered = { %s }; };\n"
    "routes = (\n" WT_EACH_POLICY("", "metered", "") "\n);\n";

static double series(const char *text, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = text; p != NULL && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, key, n) == 0 && p[n] == ' ')
            return atof(p + n + 1);
    cr_assert_fail("series %s not found in\n%s", key, text);
    return -1;
}

static char *scrape(const wt_server *s)
{
    wt_resp r;
    cr_assert_eq(wt_http(s, "GET", "/metrics", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    return r.body; /* the caller frees it */
}

static void hit(const wt_server *s, const char *path)
{
    wt_resp r;
    cr_assert_eq(wt_http(s, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    wt_resp_free(&r);
}

Test(plugin_metrics, counted_under_every_policy_labelled_and_kept_across_a_reload, .timeout = 60)
{
    wt_server s = {0};
    char conf[1024];
    snprintf(conf, sizeof(conf), conf_fmt, "");
    wt_start(&s, conf);
    static const char *const paths[] = {"/pool", "/coroutine", "/reactive"};
    for (int i = 0; i < 6; i++)
        hit(&s, paths[i % 3]);
    char *m = scrape(&s);
    cr_assert(strstr(m, "# TYPE plugin_metered_requests_total counter\n"), "%s", m);
    cr_assert(strstr(m, "# TYPE plugin_metered_work_seconds histogram\n"), "%s", m);
    cr_assert(strstr(m, "# TYPE plugin_metered_last_len gauge\n"), "%s", m);
    cr_assert_eq(series(m, "plugin_metered_requests_total{plugin=\"metered\"}"), 6);
    cr_assert_eq(series(m, "plugin_metered_work_seconds_count{plugin=\"metered\"}"), 6);
    cr_assert_eq(series(m, "plugin_metered_work_seconds_bucket{plugin=\"metered\",le=\"0.001\"}"), 0);
    cr_assert_eq(series(m, "plugin_metered_work_seconds_bucket{plugin=\"metered\",le=\"0.0025\"}"), 6);
    cr_assert_float_eq(series(m, "plugin_metered_work_seconds_sum{plugin=\"metered\"}"), 0.012, 1e-9);
    cr_assert(strstr(m, "plugin_metered_last_len{plugin=\"metered\"} "), "%s", m);
    free(m);

    /* a reload loads the plugin again; its series carry on */
    wt_write_conf(&s, conf);
    cr_assert_eq(kill(s.pid, SIGHUP), 0);
    free(wt_wait_log(&s, "generation 2 serving", 10000));
    hit(&s, "/coroutine");
    m = scrape(&s);
    cr_assert_eq(series(m, "plugin_metered_requests_total{plugin=\"metered\"}"), 7);
    cr_assert_eq(series(m, "plugin_metered_last_len{plugin=\"metered\"}"), 10);
    free(m);
    wt_finish(&s);
}

static void expect_refused(const char *opts, const char *needle)
{
    wt_server s = {0};
    char conf[1024], *out = NULL;
    snprintf(conf, sizeof(conf), conf_fmt, opts);
    wt_write_conf(&s, conf);
    const char *args[] = {"-t", "-c", s.conf, NULL};
    cr_assert_neq(wt_run(&out, args, NULL), 0, "%s", out);
    cr_assert(strstr(out, needle) != NULL, "expected \"%s\" in:\n%s", needle, out);
    free(out);
}

Test(plugin_metrics, a_bad_name_is_refused_at_load_naming_the_plugin, .timeout = 30)
{
    expect_refused("bad_name = \"9lives_total\";",
                   "plugins.metered: plugin 'metered' load failed: metric name '9lives_total' is not valid");
    expect_refused("bad_name = \"bad-name_total\";", "metric name 'bad-name_total' is not valid");
    expect_refused("bad_name = \"hits\";", "plugin 'metered' load failed: metric name 'hits': a counter's name must end in _total");
}
