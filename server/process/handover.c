#include "process/handover.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/spawn.h"
#include "base/timer.h"
#include "core/inherited.h"
#include "ops/notify.h"
#include "version.h"

extern char **environ;

#define FD_ENV "WEFT_HANDOVER_FD"

static char exe[4096];
static char **args;

/* The new process: the socket to the old one, until it is the main process. */
static int to_old = -1;

/* The old process: what it passes, and the hand-over under way. */
static const int *listeners;
static size_t n_listeners;
static pid_t new_pid = -1;
static int peer = -1;
static uint64_t deadline_ns;
static char answer[64];
static size_t answer_len;
static unsigned long attempts;

void weft_handover_init(int argc, char **argv)
{
    /* The path, not /proc/self/exe itself: after a package upgrade that path
     * is the new binary, while /proc/self/exe stays the old one's inode. */
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0)
        exe[n] = '\0';
    else
        snprintf(exe, sizeof(exe), "%s", argv[0]);
    args = calloc((size_t)argc + 1, sizeof(*args));
    if (args == NULL)
        weft_fatal("out of memory");
    memcpy(args, argv, (size_t)argc * sizeof(*args));
    const char *fd = getenv(FD_ENV);
    if (fd == NULL)
        return;
    to_old = atoi(fd);
    unsetenv(FD_ENV);
    if (to_old < 3 || fcntl(to_old, F_SETFD, FD_CLOEXEC) != 0) {
        to_old = -1;
        return;
    }
    /* The old process could not know this pid before the spawn. */
    char pid[24];
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    setenv("LISTEN_PID", pid, 1);
    /* systemd accepts only the main process's messages: none until then. */
    weft_notify_hold(1);
}

int weft_handover_is_child(void) { return to_old >= 0; }

int weft_handover_child_ready(void)
{
    if (to_old < 0)
        return 0;
    char msg[32];
    int len = snprintf(msg, sizeof(msg), "ready %d\n", (int)getpid());
    char buf[16] = "";
    ssize_t got = -1;
    int r = 0;
    if (write(to_old, msg, (size_t)len) == len) {
        struct pollfd p = {to_old, POLLIN, 0};
        /* The old process answers as soon as it reads this. */
        r = poll(&p, 1, 30000);
        got = r > 0 ? read(to_old, buf, sizeof(buf) - 1) : -1;
    }
    close(to_old);
    to_old = -1;
    if (got < 4 || strncmp(buf, "main", 4) != 0) {
        weft_log_error("hand-over: pid %d did not make this process the main one (%s); stopping", (int)getppid(),
                       r == 0 && got < 0 ? "no answer within 30 s" : "it closed the hand-over socket");
        return -1;
    }
    weft_notify_hold(0);
    weft_log_info("hand-over: pid %d is the service's main process now; pid %d drains its connections", (int)getpid(),
                  (int)getppid());
    return 0;
}

void weft_handover_set_listeners(const int *fds, size_t n)
{
    listeners = fds;
    n_listeners = n;
}

/* PIDFILE.upgrade: "WRITER ATTEMPTS OK NEWPID NOTIFY\nmessage\n", what `weft
 * upgrade` waits for; NOTIFY 1 when systemd supervises the writer
 * (NOTIFY_SOCKET: Type=notify). */
void weft_handover_outcome_path(const char *pid_file, char *out, size_t size)
{
    snprintf(out, size, "%s.upgrade", pid_file);
}

static void outcome_write(const char *pid_file, int ok, int to, const char *message)
{
    if (pid_file == NULL)
        return;
    char path[4200], tmp[4300];
    weft_handover_outcome_path(pid_file, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    int notify = getenv("NOTIFY_SOCKET") != NULL;
    if (f == NULL || fprintf(f, "%d %lu %d %d %d\n%s\n", (int)getpid(), attempts, ok, to, notify, message) < 0 ||
        fclose(f) != 0 || rename(tmp, path) != 0) {
        weft_log_warn("cannot write %s (weft upgrade then cannot report the outcome): %s", path, strerror(errno));
        if (f == NULL && fd >= 0)
            close(fd);
    }
}

void weft_handover_outcome_init(const char *pid_file) { outcome_write(pid_file, 1, 0, "serving"); }

static long timeout_s(void)
{
    const char *v = getenv("WEFT_UPGRADE_TIMEOUT_S");
    long s = v != NULL ? atol(v) : 0;
    return s > 0 ? s : 60;
}

static void refuse(const char *pid_file, const char *fmt, ...) WEFT_PRINTF(2, 3);
static void refuse(const char *pid_file, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    weft_log_error("%s", msg);
    outcome_write(pid_file, 0, 0, msg);
}

/* The environment of the new process: this one's, with the sockets described as socket activation does. */
static char **child_env(size_t n, int peer_at, char *fds_var, size_t fds_size, char *names_var, size_t names_size,
                        char *peer_var, size_t peer_size)
{
    size_t n_env = 0;
    while (environ[n_env] != NULL)
        n_env++;
    char **env = calloc(n_env + 4, sizeof(*env));
    if (env == NULL)
        return NULL;
    size_t o = 0;
    static const char *const drop[] = {"LISTEN_PID=", "LISTEN_FDS=", "LISTEN_FDNAMES=", "WATCHDOG_PID=", FD_ENV "="};
    for (size_t i = 0; i < n_env; i++) {
        int keep = 1;
        for (size_t d = 0; d < sizeof(drop) / sizeof(drop[0]) && keep; d++)
            keep = strncmp(environ[i], drop[d], strlen(drop[d])) != 0;
        if (keep)
            env[o++] = environ[i];
    }
    snprintf(fds_var, fds_size, "LISTEN_FDS=%zu", n);
    size_t at = (size_t)snprintf(names_var, names_size, "LISTEN_FDNAMES=");
    for (size_t i = 0; i < n && at + 16 < names_size; i++)
        at += (size_t)snprintf(names_var + at, names_size - at, "%s%s", i ? ":" : "", WEFT_HANDOVER_FD_NAME);
    snprintf(peer_var, peer_size, FD_ENV "=%d", peer_at);
    env[o++] = fds_var;
    env[o++] = names_var;
    env[o++] = peer_var;
    return env;
}

int weft_handover_start(const char *pid_file)
{
    attempts++;
    if (peer >= 0) {
        weft_log_warn("SIGUSR2: the hand-over to pid %d is still under way", (int)new_pid);
        return -1;
    }
    if (n_listeners == 0 || n_listeners > 1000) {
        refuse(pid_file, "upgrade refused: no listening sockets to hand over; pid %d keeps serving", (int)getpid());
        return -1;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        refuse(pid_file, "upgrade refused: socketpair: %s; pid %d keeps serving", strerror(errno), (int)getpid());
        return -1;
    }
    /* The sockets go to 3, 4, ... in the new process, its end of the pair
     * right after them; copies above all those first, so that no dup2
     * overwrites a source still to be moved. */
    size_t n = n_listeners;
    int top = 3 + (int)n + 1;
    int *high = calloc(n + 1, sizeof(*high));
    int ok = high != NULL;
    for (size_t i = 0; ok && i <= n; i++) {
        high[i] = fcntl(i < n ? listeners[i] : sv[1], F_DUPFD_CLOEXEC, top);
        ok = high[i] >= 0;
    }
    char fds_var[32], names_var[16 * 1024], peer_var[48];
    char **env = ok ? child_env(n, 3 + (int)n, fds_var, sizeof(fds_var), names_var, sizeof(names_var), peer_var,
                                sizeof(peer_var))
                    : NULL;
    pid_t pid = -1;
    int rc = env == NULL ? errno : 0;
    int *to = env != NULL ? calloc(n + 1, sizeof(*to)) : NULL;
    if (to != NULL) {
        for (size_t i = 0; i <= n; i++)
            to[i] = 3 + (int)i;
        rc = weft_spawn(&pid, exe, args, env, high, to, n + 1, top);
    } else if (env != NULL) {
        rc = ENOMEM;
    }
    free(to);
    for (size_t i = 0; high != NULL && i <= n; i++)
        if (high[i] >= 0)
            close(high[i]);
    free(high);
    free(env);
    close(sv[1]);
    if (rc != 0 || pid <= 0) {
        close(sv[0]);
        refuse(pid_file, "upgrade refused: cannot start %s: %s; pid %d keeps serving", exe, strerror(rc ? rc : EINVAL),
               (int)getpid());
        return -1;
    }
    new_pid = pid;
    peer = sv[0];
    answer_len = 0;
    deadline_ns = weft_now_ns() + (uint64_t)timeout_s() * 1000000000u;
    weft_log_info("SIGUSR2: started %s as pid %d with the %zu listening socket(s); pid %d serves until it is ready "
                  "(WEFT_UPGRADE_TIMEOUT_S: %ld s)",
                  exe, (int)pid, n, (int)getpid(), timeout_s());
    return peer;
}

int weft_handover_timeout_ms(void)
{
    if (peer < 0)
        return -1;
    uint64_t now = weft_now_ns();
    return now >= deadline_ns ? 0 : (int)((deadline_ns - now) / 1000000u) + 1;
}

/* The new process failed: reaped (killed first if it does not end in 5 s), described. */
static void reap(char *how, size_t size)
{
    int status = 0;
    pid_t r = 0;
    for (int i = 0; i < 100 && (r = waitpid(new_pid, &status, WNOHANG)) == 0; i++) {
        struct timespec ts = {0, 50 * 1000000};
        nanosleep(&ts, NULL);
    }
    if (r == 0) {
        kill(new_pid, SIGKILL);
        r = waitpid(new_pid, &status, 0);
        snprintf(how, size, "was killed: it did not end within 5 s of giving up");
    } else if (r > 0 && WIFEXITED(status)) {
        snprintf(how, size, "exited with status %d", WEXITSTATUS(status));
    } else if (r > 0 && WIFSIGNALED(status)) {
        const char *name = sigabbrev_np(WTERMSIG(status));
        snprintf(how, size, "was killed by SIG%s", name != NULL ? name : "?");
    } else {
        snprintf(how, size, "ended (%s)", strerror(errno));
    }
}

int weft_handover_step(const char *pid_file, int timed_out)
{
    if (peer < 0)
        return -1;
    int pid = 0;
    if (!timed_out) {
        ssize_t r = read(peer, answer + answer_len, sizeof(answer) - 1 - answer_len);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            return -1;
        if (r > 0) {
            answer_len += (size_t)r;
            answer[answer_len] = '\0';
            if (strchr(answer, '\n') == NULL && answer_len < sizeof(answer) - 1)
                return -1;
            if (sscanf(answer, "ready %d", &pid) != 1 || pid != new_pid)
                pid = 0;
        }
    }
    if (pid > 0) {
        char msg[300];
        snprintf(msg, sizeof(msg), "pid %d handed its listening sockets to pid %d, which serves; pid %d drains",
                 (int)getpid(), pid, (int)getpid());
        weft_notify_mainpid(pid);
        /* From here on systemd hears only the new process. */
        weft_notify_hold(1);
        /* Before the answer: the new process then writes the file as its own. */
        outcome_write(pid_file, 1, pid, msg);
        ssize_t w = write(peer, "main\n", 5);
        close(peer);
        peer = -1;
        if (w != 5)
            weft_log_error("hand-over: cannot answer pid %d (%s); it stops, and so does this process", pid,
                           strerror(errno));
        weft_log_info("upgrade: %s", msg);
        return 1;
    }
    if (timed_out)
        kill(new_pid, SIGKILL);
    char how[128];
    reap(how, sizeof(how));
    close(peer);
    peer = -1;
    refuse(pid_file,
           "upgrade refused: the new process (pid %d, %s) %s %s; pid %d keeps serving (the new process's own lines "
           "above say why)",
           (int)new_pid, exe, how, timed_out ? "after not becoming ready in time" : "before it was ready",
           (int)getpid());
    new_pid = -1;
    return 0;
}
