/* The tests' Python servers (mock_upstream.py for the outbound-call tests, the OTLP collector), started and stopped; suite only, not in the test kit. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

int wt_mock_start(pid_t *pid) { return wt_mock_start_tls(pid, NULL, NULL); }

int wt_py_server_start(pid_t *pid, const char *script, const char *const *args)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/support/%s", WEFT_SOURCE_DIR, script);
    const char *argv[8] = {"python3", path};
    for (int i = 0; args != NULL && args[i] != NULL && i < 5; i++)
        argv[i + 2] = args[i];
    int out[2];
    cr_assert_eq(pipe(out), 0);
    *pid = fork();
    cr_assert_geq(*pid, 0);
    if (*pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        execv("/usr/bin/python3", (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    int port = 0;
    cr_assert(f != NULL && fscanf(f, "port %d", &port) == 1, "%s did not start", script);
    fclose(f);
    return port;
}

int wt_mock_start_tls(pid_t *pid, const char *cert, const char *key)
{
    const char *const tls[] = {"--tls", cert, key, NULL};
    return wt_py_server_start(pid, "mock_upstream.py", cert != NULL ? tls : NULL);
}

void wt_mock_stop(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}
