#include "ops/process_metrics.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <weft/plugin.h>

#include "base/h2o_glue.h"
#include "base/stats.h"
#include "db/pq.h"
#include "version.h"

static long count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    long n = 0;
    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n - 3; /* ".", ".." and the directory's own fd */
}

/* The kernel's own start time of the process, as the Go and Python clients
 * give it: /proc/self/stat's starttime (clock ticks after boot) plus the
 * boot time of /proc/stat. Read once: neither changes. */
static double start_time_s;

static void read_start_time(void)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f != NULL)
        fclose(f);
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: fields count from
     * the last ')', which ends field 2; starttime is field 22. */
    const char *p = strrchr(buf, ')');
    for (int field = 2; p != NULL && field < 22; field++)
        p = strchr(p + 1, ' ');
    unsigned long long ticks = 0;
    if (p == NULL || sscanf(p + 1, "%llu", &ticks) != 1)
        return;
    unsigned long long btime = 0;
    char line[256];
    if ((f = fopen("/proc/stat", "r")) == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL && sscanf(line, "btime %llu", &btime) != 1)
        ;
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (btime != 0 && hz > 0)
        start_time_s = (double)btime + (double)ticks / (double)hz;
}

/* "15.20" from PQlibVersion()'s 150020 (PostgreSQL 10 and later); "none"
 * before libpq is loaded (no database configured yet). */
static void libpq_version(char *out, size_t size)
{
    int v = weft_pq_version();
    if (v <= 0)
        snprintf(out, size, "none");
    else
        snprintf(out, size, "%d.%d", v / 10000, v % 100);
}

static void build_info(FILE *f)
{
    char pq[32];
    libpq_version(pq, sizeof(pq));
    weft_stats_write_header(f, "weft_build_info", "gauge",
                            "Always 1: weft's version, the plugin ABI it serves, the h2o it embeds and the libpq it "
                            "loaded, as labels.");
    /* h2o's own form of a version built from a commit: base@commit (third_party/h2o/UPSTREAM). */
    fprintf(f, "weft_build_info{version=\"%s\",abi=\"%u\",h2o=\"%s@%s\",libpq=\"%s\"} 1\n", WEFT_VERSION,
            WEFT_PLUGIN_ABI, H2O_VERSION_BASE, WEFT_H2O_COMMIT, pq);
}

void weft_process_metrics_render(FILE *f)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_start_time);
    long page = sysconf(_SC_PAGESIZE);
    long vsize = 0, rss = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    if (statm != NULL) {
        if (fscanf(statm, "%ld %ld", &vsize, &rss) != 2)
            vsize = rss = 0;
        fclose(statm);
    }
    struct rusage ru = {0};
    (void)getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    struct rlimit nofile = {0};
    (void)getrlimit(RLIMIT_NOFILE, &nofile);

    weft_stats_write_header(f, "process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.");
    fprintf(f, "process_cpu_seconds_total %.6f\n", cpu);
    weft_stats_write_header(f, "process_resident_memory_bytes", "gauge", "Resident memory size, in bytes.");
    fprintf(f, "process_resident_memory_bytes %ld\n", rss * page);
    weft_stats_write_header(f, "process_virtual_memory_bytes", "gauge", "Virtual memory size, in bytes.");
    fprintf(f, "process_virtual_memory_bytes %ld\n", vsize * page);
    weft_stats_write_header(f, "process_open_fds", "gauge", "Open file descriptors.");
    fprintf(f, "process_open_fds %ld\n", count_fds());
    weft_stats_write_header(f, "process_max_fds", "gauge", "The open file descriptor limit (RLIMIT_NOFILE, soft).");
    fprintf(f, "process_max_fds %.17g\n", nofile.rlim_cur == RLIM_INFINITY ? 1.8446744073709552e19 : (double)nofile.rlim_cur);
    weft_stats_write_header(f, "process_start_time_seconds", "gauge",
                            "Start time of the process since the Unix epoch, in seconds.");
    fprintf(f, "process_start_time_seconds %.2f\n", start_time_s);
    build_info(f);
}
