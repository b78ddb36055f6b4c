/* Plugin timers (plugin API 1.1): started when the configuration serves,
 * stopped by the host before unload, and per load across reloads — under
 * every policy's routes. Waits on the server's log lines, never on sleeps. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char conf_fmt[] =
    "threads = 2; " WT_LISTEN "\n"
    "plugins = { ticker = { period_ms = %d; %s }; };\n"
    "routes = (\n" WT_EACH_POLICY("", "ticker", "") "\n);\n";

static void get(wt_server *s, const char *path, int *load, int *ticks, int *late)
{
    wt_resp r;
    cr_assert_eq(wt_http(s, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    cr_assert_eq(sscanf(r.body, "load=%d ticks=%d late=%d", load, ticks, late), 3, "%s", r.body);
    wt_resp_free(&r);
}

Test(timers, periodic_timer_runs_stops_before_unload_and_restarts_with_a_reload, .timeout = 60)
{
    wt_server s = {0};
    char conf[1024];
    snprintf(conf, sizeof(conf), conf_fmt, 5, "");
    wt_start(&s, conf);
    free(wt_wait_log(&s, "ticker #1 ticked 3", 10000));
    free(wt_wait_log(&s, "ticker #1 one-shot", 10000));
    static const char *const paths[] = {"/pool", "/coroutine", "/reactive"};
    for (int i = 0; i < 3; i++) {
        int load, ticks, late;
        get(&s, paths[i], &load, &ticks, &late);
        cr_assert(load == 1 && ticks >= 3 && late == 0, "%s: load=%d ticks=%d late=%d", paths[i], load, ticks, late);
    }

    snprintf(conf, sizeof(conf), conf_fmt, 7, "");
    wt_write_conf(&s, conf);
    cr_assert_eq(kill(s.pid, SIGHUP), 0);
    free(wt_wait_log(&s, "ticker unload #1 stopped_by_host=1 late=0", 10000));
    free(wt_wait_log(&s, "ticker #2 ticked 3", 10000));
    for (int i = 0; i < 3; i++) {
        int load, ticks, late;
        get(&s, paths[i], &load, &ticks, &late);
        cr_assert(load == 2 && ticks >= 3 && late == 0, "%s: load=%d ticks=%d late=%d", paths[i], load, ticks, late);
    }
    wt_finish(&s);
    char *log = wt_read_log(&s);
    cr_assert(strstr(log, "ticker unload #2 stopped_by_host=1 late=0"), "unload at shutdown:\n%s", log);
    free(log);
}

Test(timers, check_mode_starts_no_timer, .timeout = 30)
{
    wt_server s = {0};
    char conf[1024];
    snprintf(conf, sizeof(conf), conf_fmt, 1, "");
    wt_write_conf(&s, conf);
    char *out = NULL;
    const char *args[] = {"-t", "-c", s.conf, NULL};
    cr_assert_eq(wt_run(&out, args, NULL), 0, "%s", out);
    cr_assert(strstr(out, "ticked") == NULL && strstr(out, "one-shot") == NULL, "%s", out);
    free(out);
}

Test(timers, a_callback_that_blocks_its_loop_is_reported, .timeout = 30)
{
    wt_server s = {0};
    char conf[1024];
    snprintf(conf, sizeof(conf), conf_fmt, 5, "block_ms = 80;");
    wt_start(&s, conf);
    char *line = wt_wait_log(&s, "a timer of plugin 'ticker' blocked its event-loop thread", 10000);
    free(line);
    free(wt_wait_log(&s, "ticker #1 ticked 3", 10000));
    wt_finish(&s);
}
