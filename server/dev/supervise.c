/*
 * `weft dev` keeps serving through a crash: the dev server runs in a child,
 * and a child killed by a fatal signal (a plugin under development crashed
 * it) is started again. Its crash record then quarantines the crashing
 * build, which the new child shows as an error page (dev.c) until the next
 * good build -- the plugin author's loop never stops at a segfault.
 */
#include "dev/supervise.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

int weft_dev_supervise(int (*serve)(void *ctx), void *ctx)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    /* main() blocked every asynchronous signal: they queue for sigwaitinfo */
    time_t last_start = 0;
    int stopping = 0;
    for (;;) {
        if (!stopping && time(NULL) - last_start < 1)
            sleep(1); /* a server crashing at start must not spin */
        last_start = time(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            weft_log_error("dev: cannot start the dev server: %s", strerror(errno));
            return 1;
        }
        if (pid == 0)
            _exit(serve(ctx));
        int status = 0;
        for (;;) {
            siginfo_t si;
            int sig = sigwaitinfo(&set, &si);
            if (sig == SIGTERM || sig == SIGINT) {
                stopping = 1;
                kill(pid, sig);
                continue;
            }
            if (sig == SIGCHLD && waitpid(pid, &status, WNOHANG) == pid)
                break;
        }
        if (stopping || !WIFSIGNALED(status))
            return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        const char *name = sigabbrev_np(WTERMSIG(status));
        weft_log_error("dev: the dev server died of SIG%s (the crash line above names the route and plugin); "
                       "restarting it: that plugin's routes show the crash until its next good build",
                       name != NULL ? name : "?");
    }
}
