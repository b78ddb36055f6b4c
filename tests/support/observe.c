/*
 * What a test reads about the server under test besides its answers: the
 * kernel's view of the process (/proc) and counts derived from /metrics.
 * Shared here so each suite does not carry its own copy.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A numeric field of /proc/PID/FILE ("status": "Threads:", "VmRSS:"; "io":
 * "syscw:"); -1 if absent. */
static long proc_field(pid_t pid, const char *file, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long v = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, field, n) == 0) {
            v = atol(line + n);
            break;
        }
    fclose(f);
    return v;
}

int wt_thread_count(pid_t pid) { return (int)proc_field(pid, "status", "Threads:"); }

long wt_rss_kib(pid_t pid) { return proc_field(pid, "status", "VmRSS:"); }

long wt_write_syscalls(pid_t pid) { return proc_field(pid, "io", "syscw:"); }

int wt_fd_count(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    cr_assert_not_null(d, "cannot list %s", path);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

double wt_cpu_seconds(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot read %s", path);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may contain spaces */
    cr_assert_not_null(p);
    unsigned long long utime = 0, stime = 0;
    /* after the command: state is the 3rd field; utime and stime the 14th and 15th */
    cr_assert_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime), 2);
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

double wt_dispatched(const wt_server *s, const char *answered_key)
{
    /* Answered first, then in flight: a request answered between the two
     * scrapes is missed (the caller polls again) rather than counted twice,
     * so the sum never runs ahead of the server. */
    double done = wt_metric(s, answered_key);
    double inflight = wt_metric(s, "weft_inflight_requests");
    return (done > 0 ? done : 0) + (inflight > 0 ? inflight : 0);
}

void wt_wait_dispatched(const wt_server *s, const char *answered_key, double n, double limit_ms)
{
    double t0 = wt_now_ms(), got;
    while ((got = wt_dispatched(s, answered_key)) < n) {
        cr_assert_lt(wt_now_ms() - t0, limit_ms, "only %g of %g requests reached the server in %.0f ms (%s)", got, n,
                     limit_ms, answered_key);
        usleep(2000); /* poll interval */
    }
}
