#include "dev/database.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "dev/pgcluster.h"
#include "dev/project.h"
#include "version.h"

/* The cluster's PG* variables go into this process's environment, so the
 * dev server (a child) and the project's tests reach it. */
static void set_env(void *ud, const char *name, const char *value)
{
    (void)ud;
    setenv(name, value, 1);
}

void weft_dev_database_start(const char *state_dir, char *pgdir, size_t size)
{
    pgdir[0] = '\0';
    if (getenv("PGHOST") != NULL || getenv("PGSERVICE") != NULL || getenv("PGDATABASE") != NULL)
        return;
    if (weft_dev_format(pgdir, size, "database directory", "%s/pg", state_dir) != 0) {
        pgdir[0] = '\0';
        return;
    }
    char why[1024];
    int rc = weft_pgcluster_start(weft_pgcluster_script(WEFT_PGDEV_SCRIPT), pgdir, NULL, NULL, set_env, NULL, why,
                                  sizeof(why));
    if (rc != WEFT_PGCLUSTER_OK) {
        if (rc == WEFT_PGCLUSTER_NO_SERVER)
            weft_log_info("dev: no private PostgreSQL (%s); set PG* variables to use one", why);
        else
            weft_log_warn("dev: the private PostgreSQL did not start (%s); database routes will answer 503", why);
        pgdir[0] = '\0';
        return;
    }
    weft_log_info("dev: private PostgreSQL in %s (unix socket only); it stops with the server", pgdir);
}

void weft_dev_database_stop(const char *pgdir)
{
    if (pgdir[0] != '\0' && weft_pgcluster_stop(weft_pgcluster_script(WEFT_PGDEV_SCRIPT), pgdir, NULL) != 0)
        weft_log_warn("dev: could not stop the private PostgreSQL in %s", pgdir);
}
