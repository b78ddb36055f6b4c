/* The mock upstream (mock_upstream.py) for the outbound-call tests; suite only, not in the test kit. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

int wt_mock_start(pid_t *pid) { return wt_mock_start_tls(pid, NULL, NULL); }

int wt_mock_start_tls(pid_t *pid, const char *cert, const char *key)
{
    int out[2];
    cr_assert_eq(pipe(out), 0);
    *pid = fork();
    cr_assert_geq(*pid, 0);
    if (*pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        const char *script = WEFT_SOURCE_DIR "/tests/support/mock_upstream.py";
        if (cert != NULL)
            execl("/usr/bin/python3", "python3", script, "--tls", cert, key, (char *)NULL);
        else
            execl("/usr/bin/python3", "python3", script, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    int port = 0;
    cr_assert(f != NULL && fscanf(f, "port %d", &port) == 1, "the mock upstream did not start");
    fclose(f);
    return port;
}

void wt_mock_stop(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}
