/*
 * Tests for server/base/spawn.c: a child weft starts with the descriptors it
 * was given where it was told, nothing else open, and no signal blocked even
 * when the parent blocks them all (as weft's threads do).
 */
#include "base/spawn.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static size_t run(const char *script, char *out, size_t size)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    int stray = open("/dev/null", O_RDONLY); /* not CLOEXEC: only closefrom keeps it from the child */
    cr_assert_geq(stray, 0);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    const int from[] = {p[1], p[1]}, to[] = {1, 5};
    pid_t pid = -1;
    int rc = weft_spawn(&pid, "/bin/sh", argv, envp, from, to, 2, 6);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    cr_assert_eq(rc, 0, "%s", strerror(rc));
    close(p[1]);
    close(stray);
    size_t len = 0;
    ssize_t n;
    while (len + 1 < size && (n = read(p[0], out + len, size - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = '\0';
    close(p[0]);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return len;
}

Test(spawn, descriptors_moved_the_rest_closed_no_signal_blocked)
{
    char out[512];
    run("grep '^SigBlk' /proc/self/status; echo five >&5 && echo fd5; "
        "for fd in 6 7 8 9; do [ -e /proc/self/fd/$fd ] && echo open$fd; done; true",
        out, sizeof out);
    cr_assert(strstr(out, "SigBlk:\t0000000000000000\n") != NULL, "%s", out);
    cr_assert(strstr(out, "five\nfd5\n") != NULL, "%s", out);
    cr_assert(strstr(out, "open") == NULL, "a descriptor above close_from leaked: %s", out);
}

Test(spawn, a_missing_program_is_an_errno)
{
    pid_t pid = -1;
    char *argv[] = {"nope", NULL};
    char *envp[] = {NULL};
    int rc = weft_spawn(&pid, "/nonexistent/weft", argv, envp, NULL, NULL, 0, 3);
    cr_assert_eq(rc, ENOENT, "%d", rc);
}
