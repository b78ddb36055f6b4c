/*
 * A pool's `nice`: its worker threads run below the event loops, which stay
 * at the process's own priority (read back from /proc/PID/task/TID/stat).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* How many of the process's threads have nice value `nice`. */
static int threads_with_nice(pid_t pid, int nice)
{
    char dir[64];
    snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char path[384];
        snprintf(path, sizeof(path), "%s/%s/stat", dir, e->d_name);
        char *stat = wt_read_file(path);
        if (stat == NULL)
            continue; /* the thread has left */
        /* After "(comm)" come fields 3..; nice is field 19. */
        const char *p = strrchr(stat, ')');
        int field = 2;
        for (; p != NULL && *p != '\0' && field < 19; p++)
            if (*p == ' ')
                field++;
        if (p != NULL && atoi(p) == nice)
            n++;
        free(stat);
    }
    closedir(d);
    return n;
}

Test(poolnice, workers_run_at_the_pools_nice_the_loops_do_not, .timeout = 60)
{
    wt_server s = {0};
    wt_start(&s, "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\n"
                 "pools = ({ name = \"low\"; size = 4; nice = 7; });\n"
                 "routes = (" WT_ROUTE("/low", "hello", "pool", " pool = \"low\";") ",\n"
                 WT_ROUTE("/hello", "hello", "reactive", "") ");\n");
    cr_assert_eq(threads_with_nice(s.pid, 7), 0, "no worker before the first request");
    long statuses[8];
    wt_http_many(&s, "/low", 8, statuses, NULL);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(statuses[i], 200);
    int low = threads_with_nice(s.pid, 7);
    cr_assert(low >= 1 && low <= 4, "the pool's started workers, and only they, at nice 7: %d", low);
    cr_assert_geq(threads_with_nice(s.pid, 0), 2, "the two loops keep the process's priority");
    wt_finish(&s);
}

Test(poolnice, a_nice_out_of_range_names_file_and_line, .timeout = 30)
{
    wt_server s = {0};
    wt_write_conf(&s, WT_LISTEN "\npools = ({ name = \"low\"; nice = -5; });\n" WT_HELLO_ROUTES "\n");
    char *out;
    const char *args[] = {"-t", "-c", s.conf, NULL};
    cr_assert_eq(wt_run(&out, args, NULL), 1, "%s", out);
    cr_assert(strstr(out, "weft.conf:2: pools[0].nice") != NULL, "%s", out);
    free(out);
    wt_rm_rf(s.dir);
}
