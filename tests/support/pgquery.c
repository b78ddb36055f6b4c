/* psql from the suite's tests, against the PostgreSQL in PG*; suite only, not in the test kit. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

void wt_need_pg(void)
{
    const char *pghost = getenv("PGHOST");
    cr_assert(pghost != NULL && pghost[0] != '\0',
              "PGHOST is not set: this test needs PostgreSQL with sql/ applied, e.g.\n"
              "  packaging/pgdev.sh start /tmp/wpg && eval \"$(packaging/pgdev.sh env /tmp/wpg)\"");
}

long long wt_sql_value(const char *sql)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "psql -XAtqc \"%s\"", sql);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    long long v = -1;
    int n = fscanf(f, "%lld", &v);
    int st = pclose(f);
    cr_assert(n == 1 && st == 0, "psql -c '%s' failed (%d)", sql, st);
    return v;
}
