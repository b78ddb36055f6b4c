/*
 * `weft upgrade` (SIGUSR2): the serving process starts the binary on disk,
 * hands it its listening sockets and drains once that one serves, so an
 * upgrade under load refuses and fails nothing and the request in flight
 * on the old process is answered; a new process that cannot start changes
 * nothing. The test process is a child subreaper: the new process, a child
 * of the old one, becomes the test's own child when the old one exits, so
 * its exit status (sanitizer reports, leaks) is checked as any server's.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static wt_server srv;

static void conf_with(const char *plugin)
{
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\npid_file = \"%s/run/weft.pid\";\n"
             "routes = ( { path = \"/hello\"; plugin = \"%s\"; dispatch = \"reactive\"; },\n"
             "           { path = \"/slow\"; plugin = \"delay\"; dispatch = \"coroutine\";\n"
             "             options = { ms = 1500; }; } );\n",
             srv.dir, plugin);
    wt_write_conf(&srv, conf);
}

static int pid_in_file(void)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/run/weft.pid", srv.dir);
    char *text = wt_read_file(path);
    int pid = text != NULL ? atoi(text) : 0;
    free(text);
    return pid;
}

/* The old process's exit status, waited for with a deadline. */
static int old_exit(pid_t pid, double limit_ms)
{
    int status = 0;
    for (double t0 = wt_now_ms(); waitpid(pid, &status, WNOHANG) == 0; usleep(20000)) /* poll of the exit */
        if (wt_now_ms() - t0 > limit_ms) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            cr_assert_fail("the old process %d did not exit within %.0f ms of the hand-over; the log:\n%s", (int)pid,
                           limit_ms, wt_read_log(&srv));
        }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Test(handover, upgrade_under_load_refuses_nothing_and_the_old_process_finishes_its_request, .timeout = 120)
{
    cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    wt_write_conf(&srv, "");
    conf_with("hello");
    wt_start(&srv, NULL);
    int old = pid_in_file();
    cr_assert_eq(old, srv.pid, "the pid file names the server");
    const char *const paths[] = {"/hello"};
    wt_load *load = wt_load_start(&srv, 4, paths, 1);
    int slow = wt_send_get(&srv, "/slow");
    wt_wait_metric(&srv, "weft_inflight_requests", 1, 10000);

    const char *const args[] = {"upgrade", "-c", srv.conf, NULL};
    /* Bounded: a hand-over that hangs fails here with both processes' log, not at the test's timeout. */
    const char *const wait_env[] = {"WEFT_UPGRADE_WAIT_S=30", NULL};
    char *out = NULL;
    double t0 = wt_now_ms();
    int rc = wt_run(&out, args, wait_env);
    char *log = wt_read_log(&srv);
    cr_assert_eq(rc, 0, "weft upgrade (%.0f ms):\n%s\nthe server's log:\n%s", wt_now_ms() - t0, out, log);
    cr_assert(strstr(out, "handed its listening sockets to pid") != NULL, "%s", out);
    free(log);
    free(out);
    int now = pid_in_file();
    cr_assert(now > 0 && now != old, "the pid file names the new process (%d, was %d)", now, old);
    free(wt_wait_log(&srv, "is the socket", 10000));

    /* The request the old process had in flight is answered by it. */
    char buf[512] = "";
    struct pollfd p = {slow, POLLIN, 0};
    ssize_t got = poll(&p, 1, 20000) == 1 ? read(slow, buf, sizeof(buf) - 1) : -1;
    close(slow);
    log = wt_read_log(&srv);
    cr_assert(got > 0 && strncmp(buf, "HTTP/1.1 200", 12) == 0,
              "the request in flight at the hand-over: '%s'\nthe server's log:\n%s", got > 0 ? buf : "(nothing)", log);
    free(log);
    cr_assert_eq(old_exit(srv.pid, 30000), 0, "the old process drains and exits 0");
    srv.pid = now; /* our child now: the subreaper */

    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/hello", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    wt_resp_free(&r);
    long ok = 0, failed = 0;
    char last[256] = "";
    wt_load_stop(load, &ok, &failed, last, sizeof(last));
    cr_assert_eq(failed, 0, "%ld of %ld requests failed across the hand-over (last: %s)", failed, ok + failed, last);
    cr_assert_gt(ok, 0);
    log = wt_read_log(&srv);
    cr_assert(strstr(log, "hand-over: pid") != NULL && strstr(log, "is the service's main process now") != NULL,
              "%s", log);
    free(log);
    wt_finish(&srv);
    wt_rm_rf(srv.dir);
}

Test(handover, a_new_process_that_cannot_start_changes_nothing, .timeout = 120)
{
    wt_write_conf(&srv, "");
    conf_with("hello");
    wt_start(&srv, NULL);
    int old = pid_in_file();
    /* Parses, so `weft upgrade` signals; the new process cannot load it. */
    conf_with("nosuchplugin");
    const char *const args[] = {"upgrade", "-c", srv.conf, NULL};
    char *out = NULL;
    cr_assert_eq(wt_run(&out, args, NULL), 1, "a refused upgrade fails the command:\n%s", out);
    cr_assert(strstr(out, "upgrade refused: the new process (pid") != NULL &&
                  strstr(out, "exited with status 1 before it was ready") != NULL,
              "%s", out);
    free(out);
    cr_assert_eq(pid_in_file(), old, "the pid file still names the old process");
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/hello", NULL, &r), 0);
    cr_assert_eq(r.status, 200, "the old process serves");
    wt_resp_free(&r);

    /* A server that wrote no PIDFILE.upgrade (an older weft) is not signalled: exit 3. */
    char path[400];
    snprintf(path, sizeof(path), "%s/run/weft.pid.upgrade", srv.dir);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(wt_run(&out, args, NULL), 3, "%s", out);
    cr_assert(strstr(out, "does not take binary upgrades") != NULL, "%s", out);
    free(out);
    cr_assert_eq(pid_in_file(), old);
    wt_finish(&srv);
    wt_rm_rf(srv.dir);
}
