/*
 * `weft dev` beyond the build loop (devloop.c has that):
 *   - continuous testing: after each good build the project's tests (the
 *     scaffold's tests/NAME_test.c, `make test`) run in the background; an
 *     edit that breaks the greeting shows the failing test by name in the
 *     terminal and the Dev UI while the new build serves, and the fix shows
 *     every test passing again;
 *   - the Dev UI: per-route totals under load, the effective configuration
 *     with where each route came from, the log tail, no external resources;
 *     and in headless Chromium, the live charts drawn (with a screenshot in
 *     <build>/artifacts/devui-charts.png), the log and the test results;
 *   - on a terminal (a pseudo-terminal here), the keys: p pauses and resumes
 *     testing, o shows each run's whole output, r re-runs.
 *
 * pkg-config is pointed at an empty directory, so the projects build and
 * link against this tree's SDK and test kit, never an installed weft-dev.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <fcntl.h>
#include <signal.h>
#include <libgen.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "devserver.h"
#include "harness.h"

#ifndef WEFT_SCAFFOLD_CFLAGS
#define WEFT_SCAFFOLD_CFLAGS "-O1 -g -Wall -Wextra"
#endif

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* Waits until the log holds `needle` `times` times; returns the log (malloc'd). */
static char *wait_log_n(const wt_server *s, const char *needle, int times, double limit_ms)
{
    for (double t0 = wt_now_ms();; usleep(50000)) {
        char *log = wt_read_log(s);
        if (count(log, needle) >= times)
            return log;
        if (wt_now_ms() - t0 > limit_ms)
            cr_assert_fail("'%s' did not appear %d time(s) in weft dev's log within %.0f ms:\n%s", needle, times,
                           limit_ms, log);
        free(log);
    }
}

/* Replaces `from` by `to` in the file, saved as an editor does (write, rename). */
static void edit(const char *path, const char *from, const char *to)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char text[16384];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    char *at = strstr(text, from);
    cr_assert_not_null(at, "'%s' not in %s", from, path);
    char out[17000];
    snprintf(out, sizeof(out), "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    wt_write_file_atomic(path, out);
}

/* A scaffolded project `name` under a fresh directory, served by `weft dev` on ephemeral ports. */
static void dev_start(wt_server *s, char *dir, const char *name)
{
    cr_assert_not_null(mkdtemp(dir));
    wt_dev_project(name, dir);
    /* the scaffold's tests link this tree's test kit, built like the server (sanitizers) */
    const char *const env[] = {"CFLAGS=" WEFT_SCAFFOLD_CFLAGS, NULL};
    wt_dev_start(s, dir, dir, env);
}

static void remove_dir(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(devtests, a_broken_greeting_fails_its_test_by_name_while_the_build_serves, .timeout = 300)
{
    char dir[] = "/tmp/weft-devtests-XXXXXX", path[600];
    wt_server s;
    dev_start(&s, dir, "greeter");
    free(wait_log_n(&s, "dev: tests of greeter: 2 passed, 0 failed of 2", 1, 120000));
    char *stats = wt_admin_get(&s, "/dev/stats");
    cr_assert(strstr(stats, "\"greeter\":{\"state\":\"passed\"") != NULL, "%s", stats);
    free(stats);

    /* Break the greeting: the build is good, its test is not. */
    snprintf(path, sizeof(path), "%s/greeter/greeter.c", dir);
    double t0 = wt_now_ms();
    edit(path, "\"Hello from greeter\"", "\"Howdy from greeter\"");
    char *log = wait_log_n(&s, "dev: tests of greeter: 1 passed, 1 failed of 2", 1, 120000);
    cr_log_info("save → failing test reported in %.0f ms", wt_now_ms() - t0);
    const char *at = strstr(log, "1 passed, 1 failed of 2");
    cr_assert(strstr(at, "[FAIL] greeter::greets_under_coroutine_and_reactive") != NULL,
              "the terminal names the failing test:\n%s", at);
    cr_assert(strstr(at, "actual:   \"Howdy from greeter\\n\"") != NULL, "...and shows the diff:\n%s", at);
    free(log);
    /* The tests start as the build lands in the plugin directory; the
     * server swaps the plugin in on its own watch, which may come after. */
    wt_resp r;
    for (double t1 = wt_now_ms();; usleep(50000)) {
        cr_assert_eq(wt_http(&s, "GET", "/greeter", NULL, &r), 0);
        cr_assert_eq(r.status, 200, "a failing test does not hold the build back: %ld %s", r.status, r.body);
        int swapped = strcmp(r.body, "Howdy from greeter\n") == 0;
        if (!swapped && wt_now_ms() - t1 > 30000)
            cr_assert_str_eq(r.body, "Howdy from greeter\n", "the new build serves");
        wt_resp_free(&r);
        if (swapped)
            break;
    }
    /* The Dev UI's average latency (its sum over its count) is the requests'
     * own time: more than nothing for a route that answered (issue 39: it
     * read "0.00 ms" for a million requests). */
    stats = wt_admin_get(&s, "/dev/stats");
    double answered_in = 0;
    for (const char *c = strstr(stats, "\"count\":"); c != NULL; c = strstr(c + 1, "\"count\":")) {
        const char *sum = strstr(c, "\"sum\":");
        if (strtoll(c + 8, NULL, 10) > 0 && sum != NULL)
            answered_in += strtod(sum + 6, NULL);
    }
    cr_assert_gt(answered_in, 0, "/dev/stats says the answered requests took no time at all: %s", stats);
    free(stats);
    char *page = wt_admin_get(&s, "/dev");
    cr_assert(strstr(page, "<table id=\"tests\">") != NULL, "the Dev UI has the test results:\n%s", page);
    cr_assert(strstr(page, "class=\"state fail\">failed") != NULL, "%s", page);
    cr_assert(strstr(page, "[FAIL] greeter::greets_under_coroutine_and_reactive") != NULL, "%s", page);
    free(page);
    stats = wt_admin_get(&s, "/dev/stats");
    cr_assert(strstr(stats, "\"greeter\":{\"state\":\"failed\"") != NULL, "%s", stats);
    free(stats);

    /* Fix it: every test passes again. */
    edit(path, "\"Howdy from greeter\"", "\"Hello from greeter\"");
    free(wait_log_n(&s, "dev: tests of greeter: 2 passed, 0 failed of 2", 2, 120000));
    page = wt_admin_get(&s, "/dev");
    cr_assert(strstr(page, "class=\"state ok\">passed") != NULL, "%s", page);
    free(page);

    wt_finish(&s);
    remove_dir(dir);
}

Test(devtests, the_dev_ui_shows_traffic_the_log_tail_and_the_configuration, .timeout = 300)
{
    char dir[] = "/tmp/weft-devtests-XXXXXX", path[600];
    wt_server s;
    dev_start(&s, dir, "shown");
    /* an option, to see it in the effective configuration */
    snprintf(path, sizeof(path), "%s/shown/shown.routes", dir);
    wt_write_file_atomic(path, "routes = ( { path = \"/shown\"; plugin = \"shown\"; dispatch = \"coroutine\";\n"
                               "  options = { greeting = \"Shown here\"; }; },\n"
                               "  { path = \"/shown/auto\"; plugin = \"shown\"; dispatch = \"auto\"; } );\n");
    wt_resp r;
    for (double t0 = wt_now_ms(); wt_now_ms() - t0 < 30000; usleep(50000)) {
        cr_assert_eq(wt_http(&s, "GET", "/shown", NULL, &r), 0);
        int done = r.status == 200 && strcmp(r.body, "Shown here\n") == 0;
        wt_resp_free(&r);
        if (done)
            break;
    }

    /* traffic: the route's totals, from which the page draws its charts */
    long statuses[50];
    wt_http_many(&s, "/shown", 50, statuses, NULL);
    for (int i = 0; i < 50; i++)
        cr_assert_eq(statuses[i], 200);
    char *stats = wt_admin_get(&s, "/dev/stats");
    const char *c = strstr(stats, "\"count\":");
    long most = 0;
    for (; c != NULL; c = strstr(c + 1, "\"count\":"))
        most = atol(c + 8) > most ? atol(c + 8) : most;
    cr_assert_geq(most, 50, "a route counts its 50 requests:\n%s", stats);
    cr_assert(strstr(stats, "\"policy\":\"auto: coroutine\"") != NULL, "an auto route says where it runs now:\n%s",
              stats);
    free(stats);

    char *page = wt_admin_get(&s, "/dev");
    cr_assert(strstr(page, "<canvas class=\"chart rate-chart\"") != NULL, "a request-rate chart per route:\n%s", page);
    cr_assert(strstr(page, "<canvas class=\"chart lat-chart\"") != NULL, "a latency chart per route:\n%s", page);
    cr_assert(strstr(page, "src=") == NULL && strstr(page, "http://") == NULL && strstr(page, "https://") == NULL,
              "no external script or resource: the page works offline:\n%s", page);
    cr_assert(strstr(page, "<td class=\"policy\">coroutine</td>") != NULL, "a fixed route's policy:\n%s", page);
    cr_assert(strstr(page, "<td class=\"policy\">auto: coroutine</td>") != NULL, "an auto route's policy now:\n%s",
              page);
    const char *cfg = strstr(page, "<table id=\"config\">");
    cr_assert_not_null(cfg, "the effective configuration:\n%s", page);
    cr_assert(strstr(cfg, "<td>/shown</td><td>shown</td><td>coroutine</td><td class=\"options\">greeting = "
                          "\"Shown here\"</td>") != NULL,
              "routes with their policy and options:\n%s", cfg);
    cr_assert(strstr(cfg, "/.weft-dev/plugins/shown.routes:1</td>") != NULL, "and where each came from:\n%s", cfg);
    cr_assert(strstr(page, "<pre id=\"log\">") != NULL, "a log tail:\n%s", page);
    free(page);

    /* the log tail: what the terminal shows, numbered so the page asks only for what is new */
    char *log = wt_admin_get(&s, "/dev/log?after=0");
    cr_assert(strstr(log, "dev: built shown in ") != NULL, "%s", log);
    cr_assert(strstr(log, "\"next\":") != NULL, "%s", log);
    long next = atol(strstr(log, "\"next\":") + 7);
    free(log);
    cr_assert_gt(next, 0);
    char q[64];
    snprintf(q, sizeof(q), "/dev/log?after=%ld", next);
    log = wt_admin_get(&s, q);
    cr_assert(strstr(log, "dev: built shown in ") == NULL, "only the lines after %ld:\n%s", next, log);
    free(log);

    wt_finish(&s);
    remove_dir(dir);
}

/* ---- the Dev UI in headless Chromium ---- */

static atomic_int loading;

static void *load_main(void *arg)
{
    const wt_server *s = arg;
    long st[8];
    while (atomic_load(&loading)) {
        wt_http_many(s, "/shown", 8, st, NULL);
        usleep(20000); /* steady traffic, not a benchmark: the machine is shared */
    }
    return NULL;
}

/* chromium --headless, letting the page's script run 6 s (virtual time), with `what` (--dump-dom, --screenshot=...). */
static int chromium(const char *dir, const char *tag, const char *what, const char *url, const char *out)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "mkdir -p %s/bh && HOME=%s/bh XDG_CONFIG_HOME=%s/bh/.config XDG_CACHE_HOME=%s/bh/.cache timeout 120 "
             "chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run "
             "--disable-background-networking --disable-component-update --disable-sync --window-size=1200,900 "
             "--user-data-dir=%s/profile-%s --virtual-time-budget=6000 %s %s >%s 2>%s/chromium-%s.log",
             dir, dir, dir, dir, dir, tag, what, url, out, dir, tag);
    return system(cmd);
}

Test(devtests, the_dev_ui_draws_live_charts_and_the_log_in_chromium, .timeout = 300)
{
    cr_assert_eq(system("command -v chromium >/dev/null"), 0,
                 "chromium is not installed: this test needs Debian's chromium (packaging/install-deps.sh test)");
    char dir[] = "/tmp/weft-devtests-XXXXXX", url[128], out[700], shot[700], arg[800];
    wt_server s;
    dev_start(&s, dir, "shown");
    free(wait_log_n(&s, "dev: tests of shown: 2 passed", 1, 120000));
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/dev", s.admin_port);

    atomic_store(&loading, 1);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, load_main, &s), 0);
    snprintf(out, sizeof(out), "%s/dom.html", dir);
    int rc = chromium(dir, "dom", "--dump-dom", url, out);
    /* the screenshot goes with the build's other artifacts, for people to look at */
    char bin[] = WEFT_BIN;
    snprintf(shot, sizeof(shot), "%s/artifacts", dirname(dirname(bin)));
    mkdir(shot, 0755);
    strcat(shot, "/devui-charts.png");
    snprintf(arg, sizeof(arg), "--screenshot=%s", shot);
    int rc2 = chromium(dir, "shot", arg, url, "/dev/null");
    atomic_store(&loading, 0);
    pthread_join(t, NULL);
    cr_assert_eq(rc, 0, "chromium --dump-dom failed (%d); see %s/chromium-dom.log", rc, dir);
    cr_assert_eq(rc2, 0, "chromium --screenshot failed (%d); see %s/chromium-shot.log", rc2, dir);

    FILE *f = fopen(out, "r");
    cr_assert_not_null(f);
    static char dom[262144];
    dom[fread(dom, 1, sizeof(dom) - 1, f)] = '\0';
    fclose(f);
    const char *row = strstr(dom, "<td>/shown</td>");
    cr_assert_not_null(row, "the route in the DOM:\n%s", dom);
    const char *rate = strstr(row, "<canvas class=\"chart rate-chart\"");
    const char *lat = strstr(row, "<canvas class=\"chart lat-chart\"");
    cr_assert(rate != NULL && lat != NULL, "%s", row);
    cr_assert(strstr(rate, "data-drawn=\"") != NULL && strstr(rate, "data-drawn=\"") < lat,
              "the request-rate chart was drawn:\n%.600s", rate);
    const char *max = strstr(lat, "data-max=\"");
    cr_assert_not_null(max, "the latency chart was drawn:\n%.600s", lat);
    cr_assert_gt(atof(max + 10), 0, "with non-zero latency:\n%.600s", lat);
    max = strstr(rate, "data-max=\"");
    cr_assert(max != NULL && atof(max + 10) > 0.5, "and a non-zero request rate under load:\n%.600s", rate);
    const char *ms = strstr(row, "<td class=\"lat\"");
    cr_assert(ms != NULL && strstr(ms, " ms</td>") != NULL, "the latency in numbers:\n%.600s", row);
    const char *log = strstr(dom, "<pre id=\"log\">");
    cr_assert(log != NULL && strstr(log, "dev: built shown in ") != NULL, "the log tail:\n%s", dom);
    const char *tests = strstr(dom, "<table id=\"tests\">");
    cr_assert(tests != NULL && strstr(tests, "2 passed, 0 failed of 2") != NULL, "the test results:\n%s", dom);

    f = fopen(shot, "rb");
    cr_assert_not_null(f, "no screenshot %s", shot);
    unsigned char png[24];
    cr_assert_eq(fread(png, 1, sizeof(png), f), sizeof(png));
    fclose(f);
    cr_assert(memcmp(png, "\x89PNG", 4) == 0, "%s is a PNG", shot);
    cr_log_info("Dev UI with charts: %s", shot);

    wt_finish(&s);
    remove_dir(dir);
}

/* ---- the terminal's keys ---- */

static int count_in_log(const char *log_path, const char *needle)
{
    char *log = wt_read_file(log_path);
    int n = log != NULL ? count(log, needle) : 0;
    free(log);
    return n;
}

Test(devtests, keys_pause_resume_rerun_and_show_whole_output_on_a_terminal, .timeout = 300)
{
    char dir[] = "/tmp/weft-devtests-XXXXXX", path[600], log[256];
    cr_assert_not_null(mkdtemp(dir));
    wt_dev_project("keyed", dir);
    snprintf(log, sizeof(log), "%s/weft-dev.log", dir);

    /* weft dev with a pseudo-terminal for stdin, as a person runs it */
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    cr_assert(m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0);
    const char *slave = ptsname(m);
    cr_assert_not_null(slave);
    const char *set[] = {"PGHOST=/nonexistent", wt_no_pkgconfig_env(dir), "CFLAGS=" WEFT_SCAFFOLD_CFLAGS, NULL};
    char **env = wt_dev_env(set);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        setsid();
        int in = open(slave, O_RDWR), out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
            _exit(126);
        char *const argv[] = {"weft", "dev", dir, NULL};
        execve(WEFT_BIN, argv, env);
        _exit(127);
    }
    free(env);
    wt_server s = {.pid = pid};
    snprintf(s.log, sizeof(s.log), "%s", log);
    free(wait_log_n(&s, "dev: keys: r re-runs the tests", 1, 120000));
    free(wait_log_n(&s, "dev: tests of keyed: 2 passed", 1, 120000));

    /* p: a save builds, but its tests wait */
    cr_assert_eq(write(m, "p", 1), 1);
    free(wait_log_n(&s, "dev: continuous testing paused", 1, 30000));
    snprintf(path, sizeof(path), "%s/keyed/keyed.c", dir);
    edit(path, "\"Hello from keyed\"", "\"Hullo from keyed\"");
    free(wait_log_n(&s, "dev: tests of keyed wait: testing is paused", 1, 60000));
    cr_assert_eq(count_in_log(log, "dev: tests of keyed:"), 1, "no run while paused");

    /* p again: they run, and fail on the new greeting */
    cr_assert_eq(write(m, "p", 1), 1);
    free(wait_log_n(&s, "dev: tests of keyed: 1 passed, 1 failed of 2", 1, 120000));

    /* o, then r: a re-run with make's whole output */
    cr_assert_eq(write(m, "o", 1), 1);
    free(wait_log_n(&s, "dev: test runs show their whole output", 1, 30000));
    cr_assert_eq(write(m, "r", 1), 1);
    char *text = wait_log_n(&s, "dev: tests of keyed: 1 passed, 1 failed of 2", 2, 120000);
    const char *last = strstr(strstr(text, "re-running every project's tests"), "their output:");
    cr_assert(last != NULL && strstr(last, "WEFT_TEST_BIN=") != NULL, "the whole output of make:\n%s", text);
    free(text);

    int status = wt_stop(&s);
    close(m);
    text = wt_read_file(log);
    cr_assert_eq(status, 0, "weft dev exited %d:\n%s", status, text);
    free(text);
    remove_dir(dir);
}
