/*
 * `weft upgrade` (SIGUSR2): the serving process starts the binary on disk,
 * hands it its listening sockets and drains once that one serves, so an
 * upgrade under load refuses and fails nothing and the request in flight
 * on the old process is answered; a new process that cannot start changes
 * nothing; a new process with fewer threads answers the connections queued
 * on every socket of the old one's. The test process is a child subreaper: the new process, a child
 * of the old one, becomes the test's own child when the old one exits, so
 * its exit status (sanitizer reports, leaks) is checked as any server's.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "rawhttp.h"

static wt_server srv;

static void conf_for(const char *plugin, const char *extra, int slow_ms)
{
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "%s\n" WT_LISTEN "\n" WT_ADMIN "\npid_file = \"%s/run/weft.pid\";\n"
             "routes = ( { path = \"/hello\"; plugin = \"%s\"; dispatch = \"reactive\"; },\n"
             "           { path = \"/slow\"; plugin = \"delay\"; dispatch = \"coroutine\";\n"
             "             options = { ms = %d; }; } );\n",
             extra, srv.dir, plugin, slow_ms);
    wt_write_conf(&srv, conf);
}

static void conf_with(const char *plugin) { conf_for(plugin, "threads = 2;", 1500); }

static int pid_in_file(void)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/run/weft.pid", srv.dir);
    char *text = wt_read_file(path);
    int pid = text != NULL ? atoi(text) : 0;
    free(text);
    return pid;
}

/* The listening sockets of 127.0.0.1:port in /proc/net/tcp: each one's
 * inode and how many connections the kernel accepted that wait for
 * accept() (a listener's rx_queue is its accept queue's length). */
typedef struct lsock {
    unsigned long inode;
    int queued;
} lsock;

static int listeners_of(int port, lsock *out, int max)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    cr_assert_not_null(f);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof(line), f) != NULL && n < max) {
        unsigned addr, lport, st, tx, rx;
        unsigned long inode;
        if (sscanf(line, " %*d: %x:%x %*x:%*x %x %x:%x %*x:%*x %*x %*u %*u %lu", &addr, &lport, &st, &tx, &rx,
                   &inode) == 6 &&
            st == 0x0A && (int)lport == port && addr == 0x0100007F)
            out[n++] = (lsock){inode, (int)rx};
    }
    fclose(f);
    return n;
}

static int queued_on(int port, int *sockets)
{
    lsock ls[16];
    int sum = 0;
    *sockets = listeners_of(port, ls, 16);
    for (int i = 0; i < *sockets; i++)
        sum += ls[i].queued;
    return sum;
}

/* Of fds, how many have their answer waiting (accepted and served already). */
static int answered_already(const int *fds, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        struct pollfd p = {fds[i], POLLIN, 0};
        k += poll(&p, 1, 0) == 1;
    }
    return k;
}

/* Until `want` connections wait in the accept queues, counting those of
 * fds (if any) that were answered instead: at limits.max_connections a loop
 * may still take one while another loop's count of the last one is not yet
 * visible (the limit's documented slack). */
static void wait_queued(int port, int want, const int *fds, int n_fds, int *sockets)
{
    double t0 = wt_now_ms();
    while (queued_on(port, sockets) + answered_already(fds, n_fds) != want) {
        cr_assert(wt_now_ms() - t0 < 20000, "%d connection(s) queued on port %d's %d socket(s), %d answered, want %d",
                  queued_on(port, sockets), port, *sockets, answered_already(fds, n_fds), want);
        usleep(10000); /* poll of the kernel's accept queues */
    }
}

/* SIGSTOP takes effect thread by thread: a loop still running could accept. */
static void wait_stopped(int pid)
{
    double t0 = wt_now_ms();
    for (;;) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task", pid);
        DIR *d = opendir(path);
        cr_assert_not_null(d);
        int running = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char stat[400], buf[512] = "";
            snprintf(stat, sizeof(stat), "%s/%s/stat", path, e->d_name);
            FILE *f = fopen(stat, "r");
            if (f == NULL)
                continue;
            size_t len = fread(buf, 1, sizeof(buf) - 1, f);
            fclose(f);
            buf[len] = '\0';
            const char *st = strrchr(buf, ')');
            running += st == NULL || (st[2] != 'T' && st[2] != 't');
        }
        closedir(d);
        if (running == 0)
            return;
        cr_assert(wt_now_ms() - t0 < 10000, "pid %d: %d thread(s) not stopped", pid, running);
        usleep(1000); /* poll of the threads' state */
    }
}

/* The inodes of pid's listening sockets on port, in descriptor order: a
 * process started by a hand-over has them at 3, 4, ... in the order they
 * were passed (the order of their SO_REUSEPORT group). */
static int listen_fds_of(int pid, int port, unsigned long *inodes, int max)
{
    lsock ls[16];
    int nl = listeners_of(port, ls, 16), n = 0;
    for (int fd = 0; fd < 256 && n < max; fd++) {
        char path[64], link[64];
        snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
        ssize_t len = readlink(path, link, sizeof(link) - 1);
        unsigned long inode;
        if (len <= 0)
            continue;
        link[len] = '\0';
        if (sscanf(link, "socket:[%lu]", &inode) != 1)
            continue;
        for (int i = 0; i < nl; i++)
            if (ls[i].inode == inode)
                inodes[n++] = inode;
    }
    return n;
}

static int queued_at(int port, unsigned long inode)
{
    lsock ls[16];
    int n = listeners_of(port, ls, 16);
    for (int i = 0; i < n; i++)
        if (ls[i].inode == inode)
            return ls[i].queued;
    return -1;
}

static const char get_hello[] = "GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";

/* n connections, each with its request sent: they wait in the kernel until accepted. */
static void connect_many(int *fds, int n)
{
    for (int i = 0; i < n; i++) {
        fds[i] = wt_raw_connect(srv.port);
        cr_assert_eq(write(fds[i], get_hello, sizeof(get_hello) - 1), (ssize_t)sizeof(get_hello) - 1);
    }
}

/* How many of them got a 200; *first_bad: what the first other one got. */
static int answered(int *fds, int n, char *first_bad, size_t size)
{
    int ok = 0;
    snprintf(first_bad, size, "(none)");
    for (int i = 0; i < n; i++) {
        char buf[256] = "";
        struct pollfd p = {fds[i], POLLIN, 0};
        ssize_t got = poll(&p, 1, 20000) == 1 ? read(fds[i], buf, sizeof(buf) - 1) : -2;
        int good = got > 0 && strncmp(buf, "HTTP/1.1 200", 12) == 0;
        if (!good && ok == i)
            snprintf(first_bad, size, "%.40s", got > 0 ? buf : got == -2 ? "(no answer in 20 s)" : "(reset)");
        ok += good;
        close(fds[i]);
    }
    return ok;
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

/* Four loops at limits.max_connections (four slow requests) leave new
 * connections in the accept queues of all four SO_REUSEPORT sockets; the
 * new process runs two loops. Every queued connection is answered: the
 * sockets beyond the new process's loops are accepted on too, not closed
 * (which reset what was queued on them), and new connections go to the
 * loops' own two only (seen while the new process is stopped). */
#define QUEUED 24
Test(handover, a_handover_to_fewer_threads_answers_what_is_queued_on_every_socket, .timeout = 120)
{
    cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    wt_write_conf(&srv, "");
    conf_for("hello", "threads = 4; limits = { max_connections = 4; };", 600000);
    wt_start(&srv, NULL);
    int old = srv.pid, sockets = 0;
    int slow[4];
    for (int i = 0; i < 4; i++)
        slow[i] = wt_send_get(&srv, "/slow");
    /* Accepted (the limit counts them from accept on): nothing queued. */
    wait_queued(srv.port, 0, NULL, 0, &sockets);
    cr_assert_eq(sockets, 4, "one socket per loop");
    int fds[QUEUED];
    connect_many(fds, QUEUED);
    wait_queued(srv.port, QUEUED, fds, QUEUED, &sockets);

    conf_for("hello", "threads = 2;", 600000);
    /* The signal itself: `weft upgrade` would wait for the old process to
     * end, and its slow requests end only with their clients, below. */
    cr_assert_eq(kill(old, SIGUSR2), 0);
    char *log = wt_wait_log(&srv, "is the service's main process now", 30000);
    const char *at = strstr(log, "hand-over: pid ");
    int now = at != NULL ? atoi(at + strlen("hand-over: pid ")) : 0;
    free(log);
    cr_assert(now > 0 && now != old);

    char bad[64];
    int ok = answered(fds, QUEUED, bad, sizeof(bad));
    log = wt_read_log(&srv);
    cr_assert_eq(ok, QUEUED, "%d of %d queued connections answered (first failure: %s)\nthe server's log:\n%s", ok,
                 QUEUED, bad, log);
    cr_assert(strstr(log, "2 more socket(s) of the previous process's loops are accepted on by this one's 2") != NULL,
              "%s", log);
    free(log);
    /* The old process's slow requests leave with their clients: it drains. */
    for (int i = 0; i < 4; i++)
        close(slow[i]);
    cr_assert_eq(old_exit(old, 30000), 0, "the old process drains and exits 0");
    srv.pid = now;

    free(wt_wait_log(&srv, "new connections go to this process's 2 loop socket(s) only", 10000));
    unsigned long inodes[8];
    cr_assert_eq(listen_fds_of(now, srv.port, inodes, 8), 4, "the new process holds all four sockets");
    cr_assert_eq(kill(now, SIGSTOP), 0);
    wait_stopped(now);
    connect_many(fds, QUEUED);
    wait_queued(srv.port, QUEUED, NULL, 0, &sockets);
    int on_surplus = queued_at(srv.port, inodes[2]) + queued_at(srv.port, inodes[3]);
    cr_assert_eq(kill(now, SIGCONT), 0);
    cr_assert_eq(on_surplus, 0, "new connections go to the two loops' own sockets, not the two drained ones");
    ok = answered(fds, QUEUED, bad, sizeof(bad));
    cr_assert_eq(ok, QUEUED, "%d of %d answered after the stop (first failure: %s)", ok, QUEUED, bad);
    wt_finish(&srv);
    wt_rm_rf(srv.dir);
}
