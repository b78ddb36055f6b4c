/*
 * New plugin code runs first in a probe child: an init that segfaults or
 * never returns is refused (by `weft -t` and by a reload) naming the plugin,
 * its version and the route, and the server keeps serving throughout.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static const char *conf_with(const char *plugin)
{
    static char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n"
             "routes = (\n"
             WT_HELLO_ROUTE "%s%s%s\n"
             ");\n",
             plugin ? ",\n  { path = \"/bad\"; plugin = \"" : "", plugin ? plugin : "",
             plugin ? "\"; dispatch = \"pool\"; }" : "");
    return conf;
}

static void check_refuses(const char *plugin, const char *const *env, const char *want)
{
    wt_server s = {0};
    wt_write_conf(&s, conf_with(plugin));
    const char *args[] = {"-t", "-c", s.conf, NULL};
    char *out;
    cr_assert_eq(wt_run(&out, args, env), 1, "%s", out);
    char where[400];
    snprintf(where, sizeof(where), "%s:5: plugin %s (version ", s.conf, plugin);
    cr_assert(strstr(out, where) != NULL, "want '%s' in:\n%s", where, out);
    cr_assert(strstr(out, want) != NULL, "want '%s' in:\n%s", want, out);
    cr_assert(strstr(out, "test failed") != NULL, "%s", out);
    free(out);
}

Test(probe, check_refuses_an_init_that_segfaults, .timeout = 60)
{
    check_refuses("init_crash", NULL, "0.0.1): init of route /bad crashed with SIGSEGV in a probe process");
}

Test(probe, check_refuses_an_init_that_never_returns, .timeout = 60)
{
    const char *env[] = {"WEFT_PROBE_TIMEOUT_MS=700", NULL};
    check_refuses("init_hangs", env, "0.0.2): init of route /bad did not return within 700 ms");
}

/* The server's own start probes in a fork (still single-threaded then)
 * and must refuse the crash just as `weft -t` does. */
Test(probe, start_refuses_an_init_that_segfaults, .timeout = 60)
{
    wt_server s = {0};
    wt_write_conf(&s, conf_with("init_crash"));
    const char *args[] = {"-c", s.conf, NULL};
    char *out;
    cr_assert_eq(wt_run(&out, args, NULL), 1, "%s", out);
    cr_assert(strstr(out, "init of route /bad crashed with SIGSEGV in a probe process") != NULL, "%s", out);
    cr_assert(strstr(out, "not starting") != NULL, "%s", out);
    free(out);
}

/* Forking is only safe while a single thread runs: at start-up. A reload
 * (loops and the control thread running) execs the probe instead. */
Test(probe, start_forks_the_probe_and_a_reload_execs_it, .timeout = 60)
{
    wt_server srv = {0};
    wt_write_conf(&srv, conf_with(NULL));
    wt_start(&srv, NULL);
    char *log = wt_wait_log(&srv, "initialised in a forked child process", 10000);
    cr_assert(strstr(log, "initialised in a forked child process") != NULL, "%s", log);
    free(log);
    wt_write_conf(&srv, conf_with("delay"));
    cr_assert_eq(kill(srv.pid, SIGHUP), 0);
    log = wt_wait_log(&srv, "initialised in an exec'd child process", 20000);
    cr_assert(strstr(log, "1 of 1 new plugin version(s) loaded and initialised in an exec'd child process") != NULL, "%s",
              log);
    free(log);
    wt_finish(&srv);
}

/* A crash must be told from a hang however slow the machine: only the hang
 * tests shorten the probe's deadline (which they always reach). */
static void reload_refuses(const char *plugin, const char *want, const char *timeout)
{
    wt_server srv = {0};
    const char *env[] = {timeout, NULL};
    wt_write_conf(&srv, conf_with(NULL));
    wt_start_env(&srv, NULL, env);
    const char *paths[] = {"/hello"};
    wt_load *load = wt_load_start(&srv, 4, paths, 1);
    wt_write_conf(&srv, conf_with(plugin));
    cr_assert_eq(kill(srv.pid, SIGHUP), 0);
    char *log = wt_wait_log(&srv, "keeps serving", 20000);
    cr_assert(strstr(log, want) != NULL, "want '%s' in:\n%s", want, log);
    char where[400];
    snprintf(where, sizeof(where), "%s:5: plugin %s (version ", srv.conf, plugin);
    cr_assert(strstr(log, where) != NULL, "want '%s' in:\n%s", where, log);
    free(log);
    long ok, failed;
    char last[1024];
    wt_load_stop(load, &ok, &failed, last, sizeof(last));
    cr_assert_eq(failed, 0, "%ld of %ld failed (last: %s)", failed, ok + failed, last);
    cr_assert_gt(ok, 0);
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/hello", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    wt_resp_free(&r);
    wt_finish(&srv);
}

Test(probe, reload_refuses_an_init_that_segfaults, .timeout = 60)
{
    reload_refuses("init_crash", "init of route /bad crashed with SIGSEGV in a probe process", NULL);
}

Test(probe, reload_refuses_an_init_that_never_returns, .timeout = 60)
{
    reload_refuses("init_hangs", "init of route /bad did not return within 700 ms", "WEFT_PROBE_TIMEOUT_MS=700");
}
