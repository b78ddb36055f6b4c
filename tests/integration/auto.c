/* dispatch = "auto": a route that blocks its loop moves to its pool, a fast
 * one stays on coroutine, a probe brings a reformed one back, and requests
 * in flight on either policy survive a reload. The stall fixture blocks the
 * way libraries do (usleep, nanosleep, recv, a CPU loop). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devserver.h"
#include "harness.h"

#define POLICY(route, p) "weft_route_policy{route=\"" route "\",policy=\"" p "\"}"
#define CHANGES(route) "weft_route_policy_changes_total{route=\"" route "\"}"

static void get_ok(const wt_server *s, const char *path, const char *want)
{
    wt_resp r;
    cr_assert_eq(wt_http(s, "GET", path, NULL, &r), 0, "%s", path);
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    cr_assert(strstr(r.body, want) != NULL, "%s: %s", path, r.body);
    wt_resp_free(&r);
}

/* ---- demotion: each way of blocking, and a fast route that stays ---- */

Test(auto_policy, blocking_routes_move_to_pool_fast_ones_stay, .timeout = 60)
{
    static const char *const blocking[] = {"/usleep", "/nanosleep", "/recv", "/spin"};
    wt_server s = {0};
    wt_start(&s, "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\n"
                 "blocking = { threshold_ms = 20; };\n"
                 "routes = (\n"
                 WT_ROUTE("/fast", "stall", "auto", "") ",\n"
                 WT_ROUTE("/usleep", "stall", "auto", " options = { mode = \"usleep\"; ms = 40; };") ",\n"
                 WT_ROUTE("/nanosleep", "stall", "auto", " options = { mode = \"nanosleep\"; ms = 40; };") ",\n"
                 WT_ROUTE("/recv", "stall", "auto", " options = { mode = \"recv\"; ms = 40; };") ",\n"
                 WT_ROUTE("/spin", "stall", "auto", " options = { mode = \"spin\"; ms = 40; };") ",\n"
                 WT_ROUTE("/async", "stall_async", "auto", "") "\n"
                 ");\n");
    for (int i = 0; i < 20; i++)
        get_ok(&s, "/fast", "mode=fast");
    get_ok(&s, "/async", "stall async");
    cr_assert_eq(wt_metric(&s, POLICY("/fast", "coroutine")), 1);
    cr_assert_eq(wt_metric(&s, POLICY("/fast", "pool")), 0);
    cr_assert_eq(wt_metric(&s, POLICY("/async", "reactive")), 1, "handle_async only: auto stays reactive");
    cr_assert_eq(wt_metric(&s, "weft_blocked_handler_total"), 0);

    for (size_t i = 0; i < sizeof(blocking) / sizeof(blocking[0]); i++) {
        char key[128], line[128];
        double blocked = wt_metric(&s, "weft_blocked_handler_total");
        /* The first request runs on a coroutine and holds the loop: one slow
         * slice alone moves nothing (it may be a one-off), the second within a
         * second does. */
        get_ok(&s, blocking[i], "ms=40");
        cr_assert_eq(wt_metric(&s, "weft_blocked_handler_total"), blocked + 1, "%s", blocking[i]);
        snprintf(key, sizeof(key), "weft_route_policy{route=\"%s\",policy=\"coroutine\"}", blocking[i]);
        cr_assert_eq(wt_metric(&s, key), 1, "%s left coroutine on one slow slice", blocking[i]);
        get_ok(&s, blocking[i], "ms=40");
        cr_assert_eq(wt_metric(&s, "weft_blocked_handler_total"), blocked + 2, "%s", blocking[i]);
        snprintf(key, sizeof(key), "weft_route_policy{route=\"%s\",policy=\"pool\"}", blocking[i]);
        cr_assert_eq(wt_metric(&s, key), 1, "%s is on pool right after its second slow slice", blocking[i]);
        /* The next ones run on pool workers: no slice of theirs is on a loop. */
        for (int k = 0; k < 5; k++)
            get_ok(&s, blocking[i], "ms=40");
        cr_assert_eq(wt_metric(&s, "weft_blocked_handler_total"), blocked + 2, "%s kept blocking its loop",
                     blocking[i]);
        snprintf(key, sizeof(key), "weft_route_policy_changes_total{route=\"%s\"}", blocking[i]);
        cr_assert_eq(wt_metric(&s, key), 1);
        snprintf(line, sizeof(line), "route %s: coroutine → pool: 2 of ", blocking[i]);
        char *log = wt_wait_log(&s, line, 2000);
        const char *l = strstr(log, line);
        cr_assert(strstr(l, "slices over 20 ms in the last") != NULL && strstr(l, "p99 ") != NULL, "%s", l);
        free(log);
    }
    cr_assert_eq(wt_metric(&s, CHANGES("/fast")), 0);
    cr_assert_eq(wt_metric(&s, POLICY("/fast", "coroutine")), 1);

    char *st = wt_admin_get(&s, "/status");
    cr_assert(strstr(st, "\"policy\": \"pool\"") != NULL || strstr(st, "\"policy\":\"pool\"") != NULL, "%s", st);
    cr_assert(strstr(st, "\"next_probe_in_s\"") != NULL, "%s", st);
    free(st);
    char *log = wt_read_log(&s);
    cr_assert_null(strstr(log, "route /fast: coroutine → pool"), "%s", log);
    cr_assert_eq(strstr(strstr(log, "route /usleep: coroutine → pool") + 1, "route /usleep: coroutine → pool"), NULL,
                 "one change, one line: %s", log);
    free(log);
    wt_finish(&s);
}

/* ---- prefer pins; bad settings are refused with FILE:LINE ---- */

Test(auto_policy, prefer_pool_pins_the_route, .timeout = 30)
{
    wt_server s = {0};
    wt_start(&s, "threads = 1;\n" WT_LISTEN "\n" WT_ADMIN "\n"
                 "routes = (\n"
                 WT_ROUTE("/pinned", "stall", "auto", " auto = { prefer = \"pool\"; };") "\n"
                 ");\n");
    for (int i = 0; i < 5; i++)
        get_ok(&s, "/pinned", "mode=fast");
    cr_assert_eq(wt_metric(&s, POLICY("/pinned", "pool")), 1);
    cr_assert_eq(wt_metric(&s, CHANGES("/pinned")), 0);
    char *st = wt_admin_get(&s, "/status");
    cr_assert(strstr(st, "\"pinned\": true") != NULL || strstr(st, "\"pinned\":true") != NULL, "%s", st);
    free(st);
    wt_finish(&s);
}

/* A reload that changes only a route's auto group (or its limits) must still
 * say so: the summary used to count plugin and option changes alone. */
static const char *pin_conf(const char *autogroup)
{
    static char conf[512];
    snprintf(conf, sizeof(conf),
             "threads = 1;\n" WT_LISTEN "\n" WT_ADMIN "\n"
             "routes = (\n" WT_ROUTE("/pin", "stall", "auto", "%s") "\n);\n",
             autogroup);
    return conf;
}

Test(auto_policy, a_reload_that_only_pins_the_route_names_the_change, .timeout = 30)
{
    wt_server s = {0};
    wt_start(&s, pin_conf(""));
    get_ok(&s, "/pin", "mode=fast");
    cr_assert_eq(wt_metric(&s, POLICY("/pin", "coroutine")), 1);
    wt_write_conf(&s, pin_conf(" auto = { prefer = \"pool\"; min_dwell_s = 5; }; timeout_ms = 900;"));
    cr_assert_eq(kill(s.pid, SIGHUP), 0);
    char *log = wt_wait_log(&s, "generation 2 serving 1 route(s): 0 added, 0 removed, 1 changed", 10000);
    cr_assert(strstr(log, "reload: route /pin changed: timeout_ms 0 -> 900, auto.prefer measure -> pool, "
                          "auto.min_dwell_s 60 -> 5") != NULL,
              "%s", log);
    free(log);
    get_ok(&s, "/pin", "mode=fast");
    cr_assert_eq(wt_metric(&s, POLICY("/pin", "pool")), 1, "the pin took effect");
    wt_finish(&s);
}

static char *check(wt_server *s, const char *conf, int *rc)
{
    char *out;
    wt_write_conf(s, conf);
    const char *args[] = {"-t", "-c", s->conf, NULL};
    *rc = wt_run(&out, args, NULL);
    return out;
}

Test(auto_policy, config_errors_name_file_and_line, .timeout = 30)
{
    wt_server s = {0};
    int rc;
    char *out = check(&s,
                      WT_LISTEN "\n"
                      "routes = (\n"
                      WT_ROUTE("/a", "stall", "coroutine", " auto = { min_dwell_s = 5; };") ",\n"
                      WT_ROUTE("/b", "stall", "auto", " auto = { prefer = \"sometimes\"; probe_s = 0; };") "\n"
                      ");\n",
                      &rc);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "weft.conf:3: routes[0]: auto is only meaningful with dispatch = \"auto\"") != NULL, "%s",
              out);
    cr_assert(strstr(out, "weft.conf:4: routes[1].auto.prefer: 'sometimes' is not one of measure, coroutine, pool") !=
                  NULL,
              "%s", out);
    cr_assert(strstr(out, "routes[1].auto.probe_s") != NULL, "%s", out);
    free(out);

    out = check(&s, WT_LISTEN "\nroutes = (\n" WT_ROUTE("/n", "stall_none", "auto", "") "\n);\n", &rc);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "weft.conf:3: route /n: plugin 'stall_none' could not be loaded") != NULL, "%s", out);
    cr_assert(strstr(out, "neither handle nor handle_async") != NULL, "%s", out);
    free(out);
    wt_rm_rf(s.dir);
}

/* ---- a route that changes behaviour on reload: demoted, then promoted by a probe ---- */

static const char *switch_conf(const char *mode)
{
    static char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n"
             "blocking = { threshold_ms = 20; };\n"
             "pools = ({ name = \"default\"; size = 8; queue = 1000; });\n"
             "routes = (\n"
             WT_ROUTE("/switch", "stall", "auto",
                      " options = { mode = \"%s\"; ms = 30; }; auto = { min_dwell_s = 1; probe_s = 1; probe_max_s = 2; };")
             "\n);\n",
             mode);
    return conf;
}

Test(auto_policy, reload_to_blocking_demotes_and_back_to_fast_promotes, .timeout = 90)
{
    wt_server s = {0};
    wt_start(&s, switch_conf("fast"));

    const char *paths[] = {"/switch"};
    wt_load *load = wt_load_start(&s, 4, paths, 1);
    wt_wait_metric(&s, "weft_requests_total{route=\"/switch\",policy=\"auto\",code=\"2xx\"}", 50, 10000);
    if (wt_metric(&s, POLICY("/switch", "coroutine")) != 1) {
        char *log = wt_read_log(&s);
        cr_assert_fail("a fast route left coroutine:\n%s", log);
    }

    wt_write_conf(&s, switch_conf("usleep"));
    cr_assert_eq(kill(s.pid, SIGHUP), 0);
    free(wt_wait_log(&s, "generation 2 serving", 10000));
    double t0 = wt_now_ms();
    wt_wait_metric_eq(&s, POLICY("/switch", "pool"), 1, 1000);
    double demote_ms = wt_now_ms() - t0;
    free(wt_wait_log(&s, "route /switch: coroutine → pool: ", 1000));
    /* Still blocking: a probe blocks again, the route stays on pool and the interval backs off. */
    free(wt_wait_log(&s, "route /switch: probe on a coroutine blocked the loop", 5000));
    free(wt_wait_log(&s, "stays on pool; next probe in 2 s", 5000));
    cr_assert_eq(wt_metric(&s, CHANGES("/switch")), 1, "a failed probe is not a change");
    cr_assert_eq(wt_metric(&s, POLICY("/switch", "pool")), 1);

    wt_write_conf(&s, switch_conf("fast"));
    cr_assert_eq(kill(s.pid, SIGHUP), 0);
    free(wt_wait_log(&s, "generation 3 serving", 10000));
    t0 = wt_now_ms();
    wt_wait_metric_eq(&s, POLICY("/switch", "coroutine"), 1, 2000 + 3000); /* the probe cap, and slack */
    double promote_ms = wt_now_ms() - t0;
    char *log = wt_wait_log(&s, "route /switch: pool → coroutine: a probe request ran ", 1000);
    free(log);
    cr_assert_eq(wt_metric(&s, CHANGES("/switch")), 2);

    long ok, failed;
    char last[256];
    wt_load_stop(load, &ok, &failed, last, sizeof(last));
    cr_assert_eq(failed, 0, "%ld of %ld failed (last: %s)", failed, ok + failed, last);
    cr_log_info("demoted %.0f ms after the reload, promoted %.0f ms after the next", demote_ms, promote_ms);
    wt_finish(&s);
}

/* ---- the switch itself: requests in flight on both policies across a reload ---- */

typedef struct batch {
    const wt_server *s;
    int n;
    long status[8];
    char *body[8];
} batch;

static void *run_batch(void *arg)
{
    batch *b = arg;
    wt_http_many(b->s, "/inflight", b->n, b->status, b->body);
    return NULL;
}

static const char *inflight_conf(int ms)
{
    static char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 1;\n" WT_LISTEN "\n"
             "blocking = { threshold_ms = 20; };\n"
             "pools = ({ name = \"default\"; size = 8; queue = 100; });\n"
             "routes = (\n"
             WT_ROUTE("/inflight", "stall", "auto",
                      " options = { mode = \"usleep\"; ms = %d; sleep_ms = 3000; }; auto = { probe_s = 600; probe_max_s = 600; };")
             "\n);\n",
             ms);
    return conf;
}

Test(auto_policy, requests_in_flight_on_both_policies_survive_a_reload, .timeout = 90)
{
    wt_server s = {0};
    wt_start(&s, inflight_conf(30));

    /* Two requests on coroutines: each blocks 30 ms (on the second the route
     * moves to pool), then sleeps in the host, suspended, in flight. */
    batch coro = {.s = &s, .n = 2}, pool = {.s = &s, .n = 4};
    pthread_t tc, tp;
    pthread_create(&tc, NULL, run_batch, &coro);
    wt_wait_metric_eq(&s, POLICY("/inflight", "pool"), 1, 5000);
    wt_wait_metric(&s, "weft_coroutines_live", 2, 5000);
    /* Four more on pool workers. */
    pthread_create(&tp, NULL, run_batch, &pool);
    wt_wait_metric(&s, "weft_pool_busy_workers{pool=\"default\"}", 4, 5000);
    cr_assert_geq(wt_metric(&s, "weft_coroutines_live"), 1, "the coroutine request is still in flight");

    wt_write_conf(&s, inflight_conf(31));
    cr_assert_eq(kill(s.pid, SIGHUP), 0);
    free(wt_wait_log(&s, "generation 2 serving", 10000));
    cr_assert_geq(wt_metric(&s, "weft_inflight_requests"), 6, "the reload swapped with all six in flight");

    pthread_join(tc, NULL);
    pthread_join(tp, NULL);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(coro.status[i], 200, "%s", coro.body[i]);
        cr_assert(strstr(coro.body[i], "ms=30") != NULL, "%s", coro.body[i]);
        free(coro.body[i]);
    }
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(pool.status[i], 200, "%s", pool.body[i]);
        cr_assert(strstr(pool.body[i], "ms=30") != NULL, "finished on the old generation: %s", pool.body[i]);
        free(pool.body[i]);
    }
    /* The new generation inherits the verdict: straight to the pool. */
    double blocked = wt_metric(&s, "weft_blocked_handler_total");
    get_ok(&s, "/inflight", "ms=31");
    cr_assert_eq(wt_metric(&s, "weft_blocked_handler_total"), blocked);
    free(wt_wait_log(&s, "generation 1 retired", 10000));
    cr_assert_eq(wt_metric(&s, CHANGES("/inflight")), 1);
    wt_finish(&s);
}

/* ---- hysteresis: a route that blocks now and then does not flap ---- */

/* Seconds of day of each log line containing `needle`, in order; returns how many. */
static int line_times(const char *log, const char *needle, double *t, int max)
{
    int n = 0;
    for (const char *p = strstr(log, needle); p != NULL && n < max; p = strstr(p + 1, needle)) {
        const char *bol = p;
        while (bol > log && bol[-1] != '\n')
            bol--;
        int h, m;
        double sec;
        cr_assert_eq(sscanf(bol + 11, "%d:%d:%lfZ", &h, &m, &sec), 3, "%.40s", bol);
        t[n++] = h * 3600 + m * 60 + sec;
    }
    return n;
}

Test(auto_policy, a_route_that_blocks_now_and_then_does_not_flap, .timeout = 90)
{
    enum { DWELL_S = 2 };
    wt_server s = {0};
    wt_start(&s, "threads = 1;\n" WT_LISTEN "\n"
                 "blocking = { threshold_ms = 20; };\n"
                 "routes = (\n"
                 WT_ROUTE("/flaky", "stall", "auto",
                          " options = { mode = \"usleep\"; ms = 25; every = 4; };"
                          " auto = { min_dwell_s = 2; probe_s = 1; probe_max_s = 8; };") "\n"
                 ");\n");
    const char *paths[] = {"/flaky"};
    wt_load *load = wt_load_start(&s, 2, paths, 1);
    /* Steady load until the probe interval reached its cap: by then every
     * probe, lucky or not, has had its say. */
    free(wt_wait_log(&s, "next probe in 8 s", 60000));
    long ok, failed;
    char last[256];
    wt_load_stop(load, &ok, &failed, last, sizeof(last));
    cr_assert_eq(failed, 0, "%s", last);

    char *log = wt_read_log(&s);
    double down[16], up[16];
    int nd = line_times(log, "route /flaky: coroutine → pool", down, 16);
    int nu = line_times(log, "route /flaky: pool → coroutine", up, 16);
    cr_assert_geq(nd, 1, "%s", log);
    /* A promotion waits a dwell after the last change, and after a flap two. */
    for (int i = 0; i < nu; i++) {
        cr_assert_geq(up[i] - down[i], DWELL_S - 0.05, "promotion %d came %.2f s after a demotion:\n%s", i,
                      up[i] - down[i], log);
        if (i > 0)
            cr_assert_geq(up[i] - up[i - 1], 2 * DWELL_S - 0.05, "promotions %.2f s apart:\n%s", up[i] - up[i - 1],
                          log);
    }
    cr_log_info("%d demotions, %d promotions, %ld requests", nd, nu, ok);
    cr_assert_eq(wt_metric(&s, CHANGES("/flaky")), nd + nu);
    free(log);
    wt_finish(&s);
}
