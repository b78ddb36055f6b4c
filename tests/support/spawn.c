#include "spawn.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

extern char **environ;

char **wt_env(const char *const *drop, const char *const *set)
{
    size_t n = 0, k = 0;
    while (environ[n] != NULL)
        n++;
    while (set != NULL && set[k] != NULL)
        k++;
    char **env = calloc(n + k + 1, sizeof(char *));
    cr_assert_not_null(env);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int skip = 0;
        for (size_t d = 0; drop != NULL && drop[d] != NULL && !skip; d++)
            skip = strncmp(environ[i], drop[d], strlen(drop[d])) == 0;
        for (size_t e = 0; e < k && !skip; e++) {
            const char *eq = strchr(set[e], '=');
            size_t len = eq != NULL ? (size_t)(eq - set[e]) + 1 : strlen(set[e]);
            skip = strncmp(environ[i], set[e], len) == 0;
        }
        if (!skip)
            env[o++] = environ[i];
    }
    for (size_t e = 0; e < k; e++)
        env[o++] = (char *)set[e];
    return env;
}

pid_t wt_spawn(const char *path, const char *const *argv, char *const *env, const char *out, const char *log,
               int flags)
{
    pid_t parent = getpid();
    /* Truncated here, before the fork: a caller that polls the log for the
     * new process's lines must never read the previous one's, which the
     * child would only truncate once it runs (a restart's "serving" seen
     * early: the watchdog test in the slower Debian 13 root). */
    if (flags & WT_SPAWN_TRUNCATE) {
        int tfd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        cr_assert_geq(tfd, 0, "%s: %s", log, strerror(errno));
        close(tfd);
    }
    pid_t pid = fork();
    cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
    if (pid == 0) {
        if (flags & WT_SPAWN_GROUP)
            setpgid(0, 0);
        /* A test process that dies (a crash, a timeout's kill) must not leave
         * a server holding ports for the rest of the run: SIGKILL, because a
         * SIGTERM'd weft may drain for its whole grace period. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int lfd = open(log, O_WRONLY | O_CREAT | (flags & WT_SPAWN_TRUNCATE ? O_TRUNC : O_APPEND), 0644);
        int ofd = out != NULL ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644) : lfd;
        int nul = open("/dev/null", O_RDONLY);
        dup2(nul, STDIN_FILENO);
        dup2(ofd, STDOUT_FILENO);
        dup2(lfd, STDERR_FILENO);
        execvpe(path, (char *const *)argv, env);
        dprintf(lfd, "cannot run %s: %s\n", path, strerror(errno));
        _exit(127);
    }
    if (flags & WT_SPAWN_GROUP)
        setpgid(pid, pid); /* also from here: no race with the child's own call */
    return pid;
}

int wt_wait(pid_t pid, double timeout_ms, int flags, int *timed_out)
{
    int group = flags & WT_SPAWN_GROUP;
    int status = 0;
    double deadline = wt_now_ms() + timeout_ms;
    *timed_out = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (timeout_ms >= 0 && wt_now_ms() > deadline) {
            *timed_out = 1;
            kill(group ? -pid : pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        usleep(10000);
    }
    if (group)
        kill(-pid, SIGKILL); /* helpers the command left behind (a browser's zygote, ...) */
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int wt_run_cmd(const char *const *argv, char *const *env, char **output, double timeout_ms)
{
    char log[] = "/tmp/weft-run-XXXXXX";
    int fd = mkstemp(log);
    cr_assert_neq(fd, -1, "mkstemp: %s", strerror(errno));
    close(fd);
    int timed_out;
    pid_t pid = wt_spawn(argv[0], argv, env, NULL, log, WT_SPAWN_GROUP);
    int status = wt_wait(pid, timeout_ms, WT_SPAWN_GROUP, &timed_out);
    *output = wt_read_file(log);
    if (*output == NULL)
        *output = strdup("");
    unlink(log);
    cr_assert(!timed_out, "%s did not finish within %.0f s:\n%s", argv[0], timeout_ms / 1000, *output);
    return status;
}
