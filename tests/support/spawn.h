/*
 * Child processes for the tests: the one spawner behind wt_start, wt_run and
 * whatever else a test runs (make, chromium, chromedriver, `weft dev`).
 */
#ifndef WEFT_TEST_SPAWN_H
#define WEFT_TEST_SPAWN_H

#include <sys/types.h>

enum {
    WT_SPAWN_GROUP = 1,    /* the child leads its own process group (killed as a group) */
    WT_SPAWN_TRUNCATE = 2, /* start `log` empty instead of appending to it */
};

/**
 * This process's environment minus the variables named in `drop` ("NAME="
 * prefixes, NULL-terminated, may be NULL) and those `set` redefines, plus
 * `set` ("NAME=value", may be NULL). Free the array, not its strings.
 */
char **wt_env(const char *const *drop, const char *const *set);

/**
 * fork + exec of `path` (PATH is searched when it has no '/') with `argv` and
 * `env`: stdin from /dev/null, stdout into `out` (truncated) or, when `out` is
 * NULL, into `log`, stderr into `log`. The child dies with the test process
 * (PR_SET_PDEATHSIG), so a test killed by its timeout leaves nothing behind.
 */
pid_t wt_spawn(const char *path, const char *const *argv, char *const *env, const char *out, const char *log,
               int flags);

/**
 * Waits up to `timeout_ms` (< 0: for ever); on timeout kills the child (its
 * group with WT_SPAWN_GROUP, which is also killed afterwards in any case, for
 * helpers it left behind) and sets *timed_out. Returns the exit status, or
 * 128 + the signal.
 */
int wt_wait(pid_t pid, double timeout_ms, int flags, int *timed_out);

/**
 * Runs `argv` (argv[0] searched in PATH) to completion in its own group with
 * environment `env`; stdout and stderr come back in *output (malloc'd). Fails
 * the test when it takes longer than `timeout_ms`. Returns the exit status.
 */
int wt_run_cmd(const char *const *argv, char *const *env, char **output, double timeout_ms);

#endif
