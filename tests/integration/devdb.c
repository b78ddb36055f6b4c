/*
 * `weft dev` starts a private PostgreSQL for the projects it serves and, as
 * docs/PLUGINS.md says, stops it when it stops: on Ctrl-C (SIGINT) and on
 * SIGTERM. Checked against the postmaster itself (its pid in
 * postmaster.pid), not against `pgdev.sh status`, which can be wrong when
 * the directory's permissions keep postgres out.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devserver.h"
#include "harness.h"
#include "spawn.h"

static int have_postgres(void)
{
    return system("ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1") == 0 || getenv("PG_BINDIR") != NULL;
}

static long postmaster_pid(const char *tmp)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/.weft-dev/pg/data/postmaster.pid", tmp);
    char *text = wt_read_file(path);
    long pid = text != NULL ? strtol(text, NULL, 10) : 0;
    free(text);
    return pid;
}

/* Running, not a zombie waiting for a slow init to reap it. */
static int running(long pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    char *st = wt_read_file(path);
    const char *rp = st != NULL ? strrchr(st, ')') : NULL;
    int alive = rp != NULL && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
    free(st);
    return alive;
}

/* A leftover would outlive the test: stop it whatever happened. */
static void stop_leftover(const char *tmp)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "chmod o+x '%s/.weft-dev' 2>/dev/null; '%s' stop '%s/.weft-dev/pg' >/dev/null 2>&1",
             tmp, WEFT_PGDEV_SCRIPT, tmp);
    int ignored = system(cmd);
    (void)ignored;
}

static void stops_with(int sig)
{
    if (!have_postgres())
        cr_skip_test("PostgreSQL's server programs are not installed (Debian: postgresql-15)");
    char tmp[128];
    wt_dev_tmpdir(tmp, sizeof(tmp));
    char conf[300];
    snprintf(conf, sizeof(conf), "%s/weft.dev.conf", tmp);
    wt_write_file_atomic(conf, "listen = [\"127.0.0.1:0\"];\nadmin = { listen = \"127.0.0.1:0\"; };\n");
    /* Twice in the same directory: the second run finds the cluster made by the first. */
    for (int run = 0; run < 2; run++) {
        wt_server s = {0};
        snprintf(s.log, sizeof(s.log), "%s/weft-dev-%d.log", tmp, run);
        const char *argv[] = {WEFT_BIN, "dev", tmp, NULL};
        char **env = wt_dev_env((const char *const[]){wt_no_pkgconfig_env(tmp), NULL});
        s.pid = wt_spawn(WEFT_BIN, argv, env, NULL, s.log, 0);
        free(env);
        char *log = wt_wait_log(&s, " serving ", 90000);
        cr_assert(strstr(log, "dev: private PostgreSQL in") != NULL, "weft dev started its database:\n%s", log);
        free(log);
        long pm = postmaster_pid(tmp);
        cr_assert_gt(pm, 0, "no postmaster.pid");
        cr_assert(running(pm), "the postmaster %ld runs", pm);
        kill(s.pid, sig);
        int status = 0;
        for (double t0 = wt_now_ms(); waitpid(s.pid, &status, WNOHANG) == 0; usleep(20000)) /* poll of the exit */
            if (wt_now_ms() - t0 > 60000) {
                kill(s.pid, SIGKILL);
                waitpid(s.pid, &status, 0);
                stop_leftover(tmp);
                cr_assert_fail("weft dev did not stop within 60 s of SIG%s", sigabbrev_np(sig));
            }
        /* weft dev has returned: the database must be gone already (pg_ctl stop -w waited for it). */
        int alive = running(pm);
        if (alive) {
            log = wt_read_log(&s);
            stop_leftover(tmp);
            cr_assert_fail("run %d: the private PostgreSQL (pid %ld) outlived weft dev after SIG%s:\n%s", run + 1,
                           pm, sigabbrev_np(sig), log);
        }
    }
    wt_rm_rf(tmp);
}

Test(devdb, sigterm_stops_the_private_database, .timeout = 300) { stops_with(SIGTERM); }

Test(devdb, sigint_stops_the_private_database, .timeout = 300) { stops_with(SIGINT); }
