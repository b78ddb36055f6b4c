/* `weft upgrade`: the client side of process/handover.c. It signals the
 * server of the pid file, waits for the verdict in PIDFILE.upgrade and then
 * for the old process to end; under systemd it then has systemd re-read
 * its state (daemon-reload), so that the new process, now systemd's own
 * child, is supervised as one: until then systemd calls it "not our child"
 * and, on cgroup v1 in a container, would not wait for it to drain when the
 * service is stopped. */
#include "process/handover.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "base/log.h"

extern char **environ;

typedef struct {
    int writer;
    unsigned long attempts;
    int ok, to, notify;
    char message[1000];
} outcome;

static int outcome_read(const char *pid_file, outcome *o)
{
    char path[4200];
    weft_handover_outcome_path(pid_file, path, sizeof(path));
    char *text = weft_file_read(path, NULL);
    memset(o, 0, sizeof(*o));
    int n = 0;
    if (text == NULL ||
        sscanf(text, "%d %lu %d %d %d\n%n", &o->writer, &o->attempts, &o->ok, &o->to, &o->notify, &n) != 5) {
        free(text);
        return -1;
    }
    snprintf(o->message, sizeof(o->message), "%s", text + n);
    size_t len = strlen(o->message);
    while (len > 0 && o->message[len - 1] == '\n')
        o->message[--len] = '\0';
    free(text);
    return 0;
}

static int read_pid(const char *pid_file)
{
    FILE *f = fopen(pid_file, "r");
    int pid = 0;
    if (f != NULL) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return pid;
}

/* Running, not a zombie its parent has yet to reap. */
static int running(int pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    char *st = weft_file_read(path, NULL);
    const char *rp = st != NULL ? strrchr(st, ')') : NULL;
    int alive = rp != NULL && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
    free(st);
    return alive;
}

static void daemon_reload(int pid)
{
    char *const argv[] = {"systemctl", "daemon-reload", NULL};
    pid_t child;
    int status = 0;
    if (posix_spawnp(&child, "systemctl", NULL, NULL, argv, environ) != 0 || waitpid(child, &status, 0) != child ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        weft_say(WEFT_LOG_WARN, "systemctl daemon-reload failed: systemd still calls pid %d 'not our child' (run it "
                                "by hand, as root)",
                 pid);
}

/* After the verdict: the old process drains, then systemd adopts the new one. */
static int finish(int old, int now, int systemd, long wait_s)
{
    struct timespec poll = {0, 20 * 1000 * 1000};
    for (long i = 0; running(old); i++, nanosleep(&poll, NULL))
        if (i >= wait_s * 50) {
            weft_say(WEFT_LOG_WARN, "pid %d still drains after %ld s (WEFT_UPGRADE_WAIT_S); pid %d serves", old, wait_s,
                     now);
            return 0;
        }
    if (systemd && getuid() == 0)
        daemon_reload(now);
    weft_say(WEFT_LOG_INFO, "pid %d has drained and exited; pid %d serves", old, now);
    return 0;
}

int weft_handover_request(const char *pid_file)
{
    errno = 0;
    int pid = read_pid(pid_file);
    if (pid <= 0) {
        weft_say(WEFT_LOG_WARN, "cannot read a pid from %s (%s): no running weft to hand over from; restart it instead",
                 pid_file, errno ? strerror(errno) : "no number in it");
        return 3;
    }
    outcome before;
    if (outcome_read(pid_file, &before) != 0 || before.writer != pid) {
        weft_say(WEFT_LOG_WARN, "pid %d (from %s) does not take binary upgrades (it wrote no %s.upgrade: an older "
                                "weft); restart it instead",
                 pid, pid_file, pid_file);
        return 3;
    }
    /* Supervised by systemd (it wrote NOTIFY 1): systemd re-reads its state at the end. */
    int systemd = before.notify && access("/run/systemd/system", F_OK) == 0;
    if (kill(pid, SIGUSR2) != 0) {
        weft_say(WEFT_LOG_ERROR, "cannot signal pid %d (from %s): %s", pid, pid_file, strerror(errno));
        return 1;
    }
    weft_say(WEFT_LOG_INFO, "asked pid %d to hand its listening sockets to a new process", pid);
    const char *w = getenv("WEFT_UPGRADE_WAIT_S");
    long wait_s = w != NULL && atol(w) > 0 ? atol(w) : 90;
    struct timespec poll = {0, 20 * 1000 * 1000};
    for (long i = 0; i < wait_s * 50; i++, nanosleep(&poll, NULL)) {
        outcome now;
        if (outcome_read(pid_file, &now) != 0)
            continue;
        /* The new process rewrites the file as its own once it is the main one. */
        int taken = now.writer != pid && now.writer == read_pid(pid_file) && kill(now.writer, 0) == 0;
        if (taken || (now.writer == pid && now.attempts > before.attempts && now.ok)) {
            int to = taken ? now.writer : now.to;
            weft_say(WEFT_LOG_INFO, "pid %d handed its listening sockets to pid %d, which serves; pid %d drains", pid,
                     to, pid);
            return finish(pid, to, systemd, wait_s);
        }
        if (now.writer == pid && now.attempts > before.attempts) {
            weft_say(WEFT_LOG_ERROR, "%s", now.message);
            return 1;
        }
    }
    if (kill(pid, 0) != 0) {
        weft_say(WEFT_LOG_ERROR, "pid %d is gone: it did not report the upgrade", pid);
        return 1;
    }
    weft_say(WEFT_LOG_ERROR, "pid %d reported no upgrade within %ld s (WEFT_UPGRADE_WAIT_S); see its log", pid, wait_s);
    return 1;
}
