#include "dev/pgcluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* pgdev.sh's exit status when PostgreSQL's server programs are missing. */
#define PGDEV_NO_SERVER 5

const char *weft_pgcluster_script(const char *built_in)
{
    const char *e = getenv("WEFT_PGDEV");
    return e != NULL && *e != '\0' ? e : built_in;
}

/* Every path goes into a shell command between single quotes. */
static int quotable(const char *s) { return s == NULL || strchr(s, '\'') == NULL; }

/* " >>'log' 2>&1", or " >&2" without a log: the script's chatter never reaches the pipe we read. */
static char *redirect(const char *log)
{
    char *r = NULL;
    if (log == NULL)
        return strdup(" >&2");
    return asprintf(&r, " >>'%s' 2>&1", log) < 0 ? NULL : r;
}

/* "export PGHOST=/x PGPORT=5432 ..." lines, as `pgdev.sh env` prints them. */
static void read_env(FILE *p, void (*set)(void *ud, const char *name, const char *value), void *ud)
{
    char line[4200];
    while (fgets(line, sizeof(line), p) != NULL) {
        char *save = NULL;
        for (char *tok = strtok_r(line, " \n", &save); tok != NULL; tok = strtok_r(NULL, " \n", &save)) {
            char *eq = strchr(tok, '=');
            if (eq != NULL && strncmp(tok, "PG", 2) == 0) {
                *eq = '\0';
                set(ud, tok, eq + 1);
            }
        }
    }
}

int weft_pgcluster_start(const char *script, const char *dir, const char *sql, const char *log,
                         void (*set)(void *ud, const char *name, const char *value), void *ud, char *why,
                         size_t size)
{
    if (access(script, X_OK) != 0) {
        snprintf(why, size, "the pgdev script %s is not there", script);
        return WEFT_PGCLUSTER_NO_SERVER;
    }
    if (!quotable(script) || !quotable(dir) || !quotable(sql) || !quotable(log)) {
        snprintf(why, size, "a path of the database (%s, %s) contains a single quote", dir, sql ? sql : "-");
        return WEFT_PGCLUSTER_FAILED;
    }
    char *to_log = redirect(log), *apply = NULL, *cmd = NULL;
    if (to_log == NULL ||
        (sql != NULL && asprintf(&apply, "'%s' apply '%s' '%s'%s && ", script, dir, sql, to_log) < 0) ||
        asprintf(&cmd, "'%s' start '%s'%s && %s'%s' env '%s'", script, dir, to_log, apply ? apply : "", script,
                 dir) < 0) {
        free(to_log);
        free(apply);
        snprintf(why, size, "out of memory");
        return WEFT_PGCLUSTER_FAILED;
    }
    free(to_log);
    free(apply);
    FILE *p = popen(cmd, "r");
    free(cmd);
    if (p == NULL) {
        snprintf(why, size, "cannot run %s", script);
        return WEFT_PGCLUSTER_FAILED;
    }
    read_env(p, set, ud);
    int st = pclose(p);
    if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return WEFT_PGCLUSTER_OK;
    if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == PGDEV_NO_SERVER) {
        snprintf(why, size, "PostgreSQL's server programs are not installed (Debian: postgresql-15; or set PG_BINDIR)");
        return WEFT_PGCLUSTER_NO_SERVER;
    }
    snprintf(why, size, "%s start %s%s%s failed (exit %d); its messages are in %s", script, dir,
             sql ? " or applying " : "", sql ? sql : "", st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1,
             log != NULL ? log : "the terminal");
    return WEFT_PGCLUSTER_FAILED;
}

int weft_pgcluster_stop(const char *script, const char *dir, const char *log)
{
    char *to_log = quotable(script) && quotable(dir) && quotable(log) ? redirect(log) : NULL, *cmd = NULL;
    if (to_log == NULL || asprintf(&cmd, "'%s' stop '%s'%s", script, dir, to_log) < 0) {
        free(to_log);
        return -1;
    }
    free(to_log);
    int st = system(cmd);
    free(cmd);
    return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}
