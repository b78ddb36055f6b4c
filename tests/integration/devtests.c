/*
 * Continuous testing in `weft dev`: after each good build the project's
 * tests (the scaffold's tests/NAME_test.c, `make test`) run in the
 * background; an edit that breaks the greeting shows the failing test by
 * name in the terminal and the Dev UI while the new build serves, and the
 * fix shows every test passing again.
 *
 * pkg-config is pointed at an empty directory, so the projects build and
 * link against this tree's SDK and test kit, never an installed weft-dev.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "devserver.h"
#include "harness.h"

#ifndef WEFT_SCAFFOLD_CFLAGS
#define WEFT_SCAFFOLD_CFLAGS "-O1 -g -Wall -Wextra"
#endif

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

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
    for (double t0 = now_ms();; usleep(50000)) {
        char *log = wt_read_log(s);
        if (count(log, needle) >= times)
            return log;
        if (now_ms() - t0 > limit_ms)
            cr_assert_fail("'%s' did not appear %d time(s) in weft dev's log within %.0f ms:\n%s", needle, times,
                           limit_ms, log);
        free(log);
    }
}

static void write_atomic(const char *path, const char *text)
{
    char tmp[600];
    snprintf(tmp, sizeof(tmp), "%s.new", path);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    cr_assert_eq(rename(tmp, path), 0);
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
    write_atomic(path, out);
}

static char *admin_get(const wt_server *s, const char *path)
{
    wt_server a = *s;
    a.port = s->admin_port;
    wt_resp r;
    cr_assert_eq(wt_http(&a, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 200, "admin GET %s: %ld %s", path, r.status, r.body);
    return r.body;
}

Test(devtests, a_broken_greeting_fails_its_test_by_name_while_the_build_serves, .timeout = 300)
{
    char dir[] = "/tmp/weft-devtests-XXXXXX", path[600];
    cr_assert_not_null(mkdtemp(dir));
    char *out = NULL;
    const char *args[] = {"new-plugin", "greeter", dir, NULL};
    cr_assert_eq(wt_run(&out, args, NULL), 0, "%s", out);
    free(out);
    snprintf(path, sizeof(path), "%s/weft.dev.conf", dir);
    write_atomic(path, "listen = [\"127.0.0.1:0\"];\nadmin = { listen = \"127.0.0.1:0\"; };\n");
    wt_server s;
    const char *const env[] = {"CFLAGS=" WEFT_SCAFFOLD_CFLAGS, NULL};
    wt_dev_start(&s, dir, dir, env);
    free(wait_log_n(&s, "dev: tests of greeter: 2 passed, 0 failed of 2", 1, 120000));
    char *stats = admin_get(&s, "/dev/stats");
    cr_assert(strstr(stats, "\"greeter\":{\"state\":\"passed\"") != NULL, "%s", stats);
    free(stats);

    /* Break the greeting: the build is good, its test is not. */
    snprintf(path, sizeof(path), "%s/greeter/greeter.c", dir);
    double t0 = now_ms();
    edit(path, "\"Hello from greeter\"", "\"Howdy from greeter\"");
    char *log = wait_log_n(&s, "dev: tests of greeter: 1 passed, 1 failed of 2", 1, 120000);
    cr_log_info("save → failing test reported in %.0f ms", now_ms() - t0);
    const char *at = strstr(log, "1 passed, 1 failed of 2");
    cr_assert(strstr(at, "[FAIL] greeter::greets_under_coroutine_and_reactive") != NULL,
              "the terminal names the failing test:\n%s", at);
    cr_assert(strstr(at, "actual:   \"Howdy from greeter\\n\"") != NULL, "...and shows the diff:\n%s", at);
    free(log);
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/greeter", NULL, &r), 0);
    cr_assert_eq(r.status, 200, "a failing test does not hold the build back: %ld %s", r.status, r.body);
    cr_assert_str_eq(r.body, "Howdy from greeter\n");
    wt_resp_free(&r);
    char *page = admin_get(&s, "/dev");
    cr_assert(strstr(page, "<table id=\"tests\">") != NULL, "the Dev UI has the test results:\n%s", page);
    cr_assert(strstr(page, "class=\"state fail\">failed") != NULL, "%s", page);
    cr_assert(strstr(page, "[FAIL] greeter::greets_under_coroutine_and_reactive") != NULL, "%s", page);
    free(page);
    stats = admin_get(&s, "/dev/stats");
    cr_assert(strstr(stats, "\"greeter\":{\"state\":\"failed\"") != NULL, "%s", stats);
    free(stats);

    /* Fix it: every test passes again. */
    edit(path, "\"Howdy from greeter\"", "\"Hello from greeter\"");
    free(wait_log_n(&s, "dev: tests of greeter: 2 passed, 0 failed of 2", 2, 120000));
    page = admin_get(&s, "/dev");
    cr_assert(strstr(page, "class=\"state ok\">passed") != NULL, "%s", page);
    free(page);

    wt_finish(&s);
    snprintf(path, sizeof(path), "rm -rf %s", dir);
    cr_assert_eq(system(path), 0);
}
