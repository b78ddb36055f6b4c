/*
 * Tests for server/process/handover.c, both ends in this binary: the old
 * process's side (weft_handover_start/step) starts the file at
 * /proc/self/exe — this test binary — and a constructor below plays the new
 * process there before Criterion's main runs, as WT_HANDOVER_CHILD says:
 * checking that the listening sockets arrived at 3, 4, ... with LISTEN_FDS
 * and LISTEN_FDNAMES, the hand-over socket right after them and nothing
 * else, then answering (or dying, hanging, lying about its pid). The new
 * process's side (weft_handover_init/child_ready) also runs in-process on a
 * socket pair. Sockets pass by inheritance across posix_spawn (socket
 * activation's way), not SCM_RIGHTS.
 */
#include "process/handover.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "unit.h"

/* ---- the new process (a spawned copy of this binary) ---- */

static const char *child_check(void)
{
    static char why[300];
    const char *ports = getenv("WT_EXPECT_PORTS"), *fds = getenv("LISTEN_FDS"), *names = getenv("LISTEN_FDNAMES");
    const char *peer = getenv("WEFT_HANDOVER_FD");
    int n = fds != NULL ? atoi(fds) : -1;
    if (ports == NULL || n < 1)
        return "no LISTEN_FDS";
    char want[200] = "";
    for (int i = 0; i < n; i++)
        snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s", i ? ":" : "", "weft-handover");
    if (names == NULL || strcmp(names, want) != 0)
        return snprintf(why, sizeof(why), "LISTEN_FDNAMES=%s, want %s", names ? names : "(unset)", want), why;
    const char *p = ports;
    for (int i = 0; i < n; i++, p = strchr(p, ',') ? strchr(p, ',') + 1 : "") {
        struct sockaddr_in a;
        socklen_t al = sizeof(a);
        int listening = 0;
        socklen_t ll = sizeof(listening);
        if (getsockname(3 + i, (struct sockaddr *)&a, &al) != 0 ||
            getsockopt(3 + i, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) != 0 || !listening)
            return snprintf(why, sizeof(why), "fd %d is not a listening socket", 3 + i), why;
        if (ntohs(a.sin_port) != atoi(p))
            return snprintf(why, sizeof(why), "fd %d listens on %d, want %d", 3 + i, ntohs(a.sin_port), atoi(p)), why;
    }
    if (peer == NULL || atoi(peer) != 3 + n)
        return snprintf(why, sizeof(why), "WEFT_HANDOVER_FD=%s, want %d", peer ? peer : "(unset)", 3 + n), why;
    for (int fd = 3 + n + 1; fd < 256; fd++)
        if (fcntl(fd, F_GETFD) != -1)
            return snprintf(why, sizeof(why), "fd %d leaked into the new process", fd), why;
    return NULL;
}

static void child_report(const char *what)
{
    FILE *f = fopen(getenv("WT_RESULT"), "w");
    if (f != NULL) {
        fputs(what, f);
        fclose(f);
    }
}

__attribute__((constructor)) static void child_main(int argc, char **argv)
{
    const char *mode = getenv("WT_HANDOVER_CHILD");
    if (mode == NULL)
        return;
    unsetenv("WT_HANDOVER_CHILD");
    if (strcmp(mode, "exit7") == 0)
        _exit(7);
    if (strcmp(mode, "hang") == 0)
        for (;;)
            pause();
    const char *bad = child_check();
    if (strcmp(mode, "wrongpid") == 0) {
        int fd = atoi(getenv("WEFT_HANDOVER_FD"));
        ssize_t w = write(fd, "ready 1\n", 8);
        _exit(w == 8 ? 0 : 1);
    }
    weft_handover_init(argc, argv);
    char pid[24];
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    if (bad == NULL && !weft_handover_is_child())
        bad = "weft_handover_init did not take the hand-over socket";
    if (bad == NULL && (getenv("LISTEN_PID") == NULL || strcmp(getenv("LISTEN_PID"), pid) != 0))
        bad = "LISTEN_PID is not this process";
    int ready = weft_handover_child_ready();
    child_report(bad != NULL ? bad : ready == 0 ? "ok" : "child_ready failed");
    _exit(bad == NULL && ready == 0 ? 0 : 1);
}

/* ---- the old process ---- */

static char pid_file[300];

static void setup(void)
{
    wt_unit_setup("handover");
    snprintf(pid_file, sizeof(pid_file), "%s/weft.pid", wt_tmpdir);
}

TestSuite(handover, .init = setup, .fini = wt_unit_teardown, .timeout = 60);

static int listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 8) == 0 &&
              getsockname(fd, (struct sockaddr *)&a, &al) == 0);
    *port = ntohs(a.sin_port);
    return fd;
}

typedef struct outcome {
    int writer, ok, to;
    unsigned long attempts;
    char message[900];
} outcome;

/* PIDFILE.upgrade, "WRITER ATTEMPTS OK NEWPID NOTIFY\nmessage\n". */
static outcome read_outcome(void)
{
    char path[400];
    weft_handover_outcome_path(pid_file, path, sizeof(path));
    cr_assert(strcmp(path + strlen(path) - 8, ".upgrade") == 0, "%s", path);
    char *text = wt_read_file(path);
    cr_assert_not_null(text, "no %s", path);
    outcome o = {0};
    int notify, used = 0;
    cr_assert_eq(sscanf(text, "%d %lu %d %d %d\n%n", &o.writer, &o.attempts, &o.ok, &o.to, &notify, &used), 5,
                 "%s", text);
    snprintf(o.message, sizeof(o.message), "%s", text + used);
    free(text);
    cr_assert_eq(o.writer, (int)getpid(), "the old process writes the outcome");
    return o;
}

/* Starts a hand-over of `n` fresh listeners to a child in `mode`; returns the socket to it. */
static int start(const char *mode, int n, int fds[])
{
    char ports[100] = "", result[300];
    for (int i = 0; i < n; i++) {
        int port;
        fds[i] = listener(&port);
        snprintf(ports + strlen(ports), sizeof(ports) - strlen(ports), "%s%d", i ? "," : "", port);
    }
    snprintf(result, sizeof(result), "%s/result", wt_tmpdir);
    setenv("WT_HANDOVER_CHILD", mode, 1);
    setenv("WT_EXPECT_PORTS", ports, 1);
    setenv("WT_RESULT", result, 1);
    /* once per test process: the module keeps the arguments for good */
    static char *args[] = {"handover-child", NULL};
    weft_handover_init(1, args);
    weft_handover_set_listeners(fds, (size_t)n);
    /* Criterion's sandbox variable would make the copy of this binary a test worker */
    char *bxfi = getenv("BXFI_MAP") ? strdup(getenv("BXFI_MAP")) : NULL;
    unsetenv("BXFI_MAP");
    int peer = weft_handover_start(pid_file);
    if (bxfi != NULL)
        setenv("BXFI_MAP", bxfi, 1);
    free(bxfi);
    unsetenv("WT_HANDOVER_CHILD");
    cr_assert_geq(peer, 0, "the hand-over did not start");
    cr_assert_gt(weft_handover_timeout_ms(), 0, "a started hand-over has a deadline");
    return peer;
}

/* Polls the socket until the hand-over is decided; its verdict. */
static int finish(int peer)
{
    for (;;) {
        struct pollfd p = {peer, POLLIN, 0};
        cr_assert_eq(poll(&p, 1, 30000), 1, "no word from the new process in 30 s");
        int r = weft_handover_step(pid_file, 0);
        if (r != -1)
            return r;
    }
}

Test(handover, the_listening_sockets_arrive_in_order_and_nothing_else_does)
{
    int fds[3];
    int peer = start("ok", 3, fds);
    cr_assert_eq(finish(peer), 1, "the new process took over: %s", read_outcome().message);
    cr_assert_eq(weft_handover_timeout_ms(), -1, "no hand-over under way any more");
    outcome o = read_outcome();
    cr_assert_eq(o.ok, 1);
    cr_assert_eq(o.attempts, 1);
    cr_assert(o.to > 0 && strstr(o.message, "handed its listening sockets to pid") != NULL, "%s", o.message);
    int st;
    cr_assert_eq(waitpid(o.to, &st, 0), o.to, "NEWPID is the child started");
    char path[400];
    snprintf(path, sizeof(path), "%s/result", wt_tmpdir);
    char *said = wt_read_file(path);
    cr_assert(said != NULL && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the new process: %s",
              said ? said : "(no result)");
    cr_assert_str_eq(said, "ok");
    free(said);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(fcntl(fds[i], F_GETFD), FD_CLOEXEC, "the old process keeps its sockets");
}

Test(handover, no_sockets_or_too_many_are_refused_before_anything_starts)
{
    weft_handover_set_listeners(NULL, 0);
    cr_assert_eq(weft_handover_start(pid_file), -1);
    outcome o = read_outcome();
    cr_assert(o.ok == 0 && o.attempts == 1, "%d %lu", o.ok, o.attempts);
    cr_assert(strstr(o.message, "no listening sockets to hand over") != NULL, "%s", o.message);
    static int many[1001];
    weft_handover_set_listeners(many, 1001);
    cr_assert_eq(weft_handover_start(pid_file), -1, "past 1000 sockets");
    o = read_outcome();
    cr_assert_eq(o.attempts, 2, "every attempt is counted");
    cr_assert(strstr(o.message, "no listening sockets to hand over") != NULL, "%s", o.message);
    cr_assert_eq(weft_handover_timeout_ms(), -1);
}

Test(handover, a_new_process_that_dies_before_ready_changes_nothing)
{
    int fds[1];
    int peer = start("exit7", 1, fds);
    cr_assert_eq(finish(peer), 0);
    outcome o = read_outcome();
    cr_assert_eq(o.ok, 0);
    cr_assert(strstr(o.message, "exited with status 7 before it was ready") != NULL, "%s", o.message);
    cr_assert(strstr(o.message, "keeps serving") != NULL, "%s", o.message);
    cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1, "the new process was reaped");
}

Test(handover, an_answer_from_another_pid_is_not_believed)
{
    int fds[1];
    int peer = start("wrongpid", 1, fds);
    cr_assert_eq(finish(peer), 0, "'ready 1' is not the new process's pid");
    outcome o = read_outcome();
    cr_assert(o.ok == 0 && strstr(o.message, "exited with status 0 before it was ready") != NULL, "%s", o.message);
}

Test(handover, one_at_a_time_and_a_silent_new_process_is_killed_at_the_deadline)
{
    int fds[1];
    start("hang", 1, fds);
    cr_assert_eq(weft_handover_start(pid_file), -1, "a second SIGUSR2 while one is under way");
    cr_assert_eq(weft_handover_step(pid_file, 1), 0);
    outcome o = read_outcome();
    cr_assert_eq(o.attempts, 2);
    cr_assert(strstr(o.message, "was killed by SIGKILL after not becoming ready in time") != NULL, "%s", o.message);
    cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1, "the new process was reaped");
}

/* ---- the new process's side, in this process ---- */

static int old_end;

static void become_child(void)
{
    /* as weft_server_run does before its control thread says ready: a closed peer is EPIPE, not death */
    signal(SIGPIPE, SIG_IGN);
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    old_end = sv[0];
    char fd[16];
    snprintf(fd, sizeof(fd), "%d", sv[1]);
    setenv("WEFT_HANDOVER_FD", fd, 1);
    static char *args[] = {"weft", NULL};
    weft_handover_init(1, args);
    cr_assert(weft_handover_is_child());
    cr_assert_null(getenv("WEFT_HANDOVER_FD"), "not passed on to a later hand-over");
    cr_assert_eq(fcntl(sv[1], F_GETFD), FD_CLOEXEC, "nor inherited by what this process starts");
    char pid[24];
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    cr_assert_str_eq(getenv("LISTEN_PID"), pid, "the sockets are claimed as this process's");
}

Test(handover, the_new_process_says_ready_and_becomes_main)
{
    become_child();
    cr_assert_eq(write(old_end, "main\n", 5), 5);
    cr_assert_eq(weft_handover_child_ready(), 0);
    cr_assert_not(weft_handover_is_child(), "the main process now");
    char buf[64] = "", want[64];
    cr_assert_gt(read(old_end, buf, sizeof(buf) - 1), 0);
    snprintf(want, sizeof(want), "ready %d\n", (int)getpid());
    cr_assert_str_eq(buf, want);
    close(old_end);
}

Test(handover, the_new_process_stops_when_the_old_one_closes_early)
{
    become_child();
    close(old_end);
    cr_assert_eq(weft_handover_child_ready(), -1, "nobody made it the main process");
    cr_assert_not(weft_handover_is_child());
}

Test(handover, a_bad_handover_fd_is_ignored)
{
    setenv("WEFT_HANDOVER_FD", "2", 1);
    static char *args[] = {"weft", NULL};
    unsetenv("LISTEN_PID");
    weft_handover_init(1, args);
    cr_assert_not(weft_handover_is_child(), "stderr is not a hand-over socket");
    cr_assert_null(getenv("LISTEN_PID"));
    cr_assert_eq(weft_handover_child_ready(), 0, "a plain start is ready at once");
}
