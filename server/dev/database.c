#include "dev/database.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "dev/project.h"
#include "version.h"

static const char *script(void)
{
    return getenv("WEFT_PGDEV") != NULL ? getenv("WEFT_PGDEV") : WEFT_PGDEV_SCRIPT;
}

/* "export PGHOST=... PGPORT=..." lines into this process's environment. */
static void import_env(FILE *p)
{
    char line[1024];
    while (fgets(line, sizeof(line), p) != NULL) {
        char *save = NULL;
        for (char *tok = strtok_r(line, " \n", &save); tok != NULL; tok = strtok_r(NULL, " \n", &save)) {
            char *eq = strchr(tok, '=');
            if (eq != NULL && strncmp(tok, "PG", 2) == 0) {
                *eq = '\0';
                setenv(tok, eq + 1, 1);
            }
        }
    }
}

void weft_dev_database_start(const char *state_dir, char *pgdir, size_t size)
{
    pgdir[0] = '\0';
    if (getenv("PGHOST") != NULL || getenv("PGSERVICE") != NULL || getenv("PGDATABASE") != NULL)
        return;
    if (access(script(), X_OK) != 0) {
        weft_log_info("dev: no private PostgreSQL (%s not found); set PG* variables to use one", script());
        return;
    }
    char cmd[3 * PATH_MAX];
    if (weft_dev_format(pgdir, size, "database directory", "%s/pg", state_dir) != 0 ||
        weft_dev_format(cmd, sizeof(cmd), "database command", "'%s' start '%s' >&2 && '%s' env '%s'", script(),
                        pgdir, script(), pgdir) != 0) {
        pgdir[0] = '\0';
        return;
    }
    FILE *p = popen(cmd, "r");
    if (p != NULL)
        import_env(p);
    if (p == NULL || pclose(p) != 0 || getenv("PGHOST") == NULL) {
        weft_log_warn("dev: the private PostgreSQL did not start; database routes will answer 503");
        pgdir[0] = '\0';
        return;
    }
    weft_log_info("dev: private PostgreSQL in %s (unix socket only); it stops with the server", pgdir);
}

void weft_dev_database_stop(const char *pgdir)
{
    char cmd[2 * PATH_MAX + 32];
    if (pgdir[0] == '\0' ||
        weft_dev_format(cmd, sizeof(cmd), "database command", "'%s' stop '%s' >&2", script(), pgdir) != 0)
        return;
    if (system(cmd) != 0)
        weft_log_warn("dev: could not stop the private PostgreSQL in %s", pgdir);
}
