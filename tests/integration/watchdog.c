/* A loop wedged by a plugin is aborted by weft itself before systemd's
 * watchdog would kill the process (at 3/4 of WATCHDOG_USEC), on the stuck
 * thread, so the crash line names the route and plugin, the crash record
 * is written and the build is quarantined at the restart: the same
 * handler does not wedge the next process again. systemd is played by
 * WATCHDOG_USEC alone (no notify socket: the pings go nowhere). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "rawhttp.h"

/* 4 s: the loop is aborted after 3 s without a turn; an idle loop turns every second. */
static const char *const env[] = {"WATCHDOG_USEC=4000000", NULL};

Test(watchdog, a_stuck_loop_is_aborted_attributed_and_quarantined, .timeout = 120)
{
    wt_server s = {0};
    wt_write_conf(&s, "");
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\nstate_dir = \"%s\";\n"
             "routes = (\n" WT_HELLO_ROUTE ",\n" WT_ROUTE("/stuck", "blocker", "reactive",
                                                          " options = { ms = 60000; };") "\n);\n",
             s.dir);
    wt_start_env(&s, conf, env);
    /* Sent, not awaited: the loop that takes it sleeps for a minute. */
    int c = wt_raw_connect(s.port);
    const char get[] = "GET /stuck HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    cr_assert_eq(write(c, get, sizeof(get) - 1), (ssize_t)(sizeof(get) - 1));
    double t0 = wt_now_ms();
    int status;
    while (waitpid(s.pid, &status, WNOHANG) == 0) {
        cr_assert_lt(wt_now_ms() - t0, 30000.0, "weft still runs 30 s after a loop got stuck for a minute");
        usleep(20000);
    }
    double took = wt_now_ms() - t0;
    s.pid = 0;
    close(c);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "status %d", status);
    /* Before systemd would have: the last ping is at least 1/4 period
     * after the loop stopped, and systemd waits a whole period after it. */
    cr_assert_lt(took, 5000.0, "aborted after %.0f ms, not before systemd's 5 s", took);
    char *log = wt_read_log(&s);
    cr_assert(strstr(log, "has not turned for") != NULL && strstr(log, "aborting it before systemd's watchdog") != NULL,
              "%s", log);
    char want[512];
    snprintf(want, sizeof(want), "weft: FATAL: SIGABRT (weft's watchdog: event loop ");
    cr_assert(strstr(log, want) != NULL, "want '%s' in:\n%s", want, log);
    snprintf(want, sizeof(want), " ms) in route /stuck (plugin blocker 1.0.0, sha256 ");
    cr_assert(strstr(log, want) != NULL, "want '%s' in:\n%s", want, log);
    snprintf(want, sizeof(want), ", dispatch=reactive) handling GET /stuck; crash record %s/crash-blocker.rec", s.dir);
    cr_assert(strstr(log, want) != NULL, "want '%s' in:\n%s", want, log);
    free(log);

    wt_start_env(&s, NULL, env);
    log = wt_read_log(&s);
    cr_assert(strstr(log, "plugin blocker 1.0.0 (sha256 ") != NULL && strstr(log, "is QUARANTINED since") != NULL,
              "%s", log);
    free(log);
    wt_resp r;
    cr_assert_eq(wt_http(&s, "GET", "/stuck", NULL, &r), 0);
    cr_assert_eq(r.status, 503, "%ld %s", r.status, r.body);
    cr_assert(strstr(r.body, "plugin blocker is quarantined") != NULL, "%s", r.body);
    wt_resp_free(&r);
    cr_assert_eq(wt_http(&s, "GET", "/hello", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    wt_resp_free(&r);
    wt_finish(&s);
}
