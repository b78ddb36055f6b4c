#include "base/cpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* CPUs this process may use: the online count, capped by a cgroup v2 CPU
 * limit (a 2-CPU pod on a 64-core node must not start 64 loops). */
long weft_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
    char quota[32] = "";
    long period = 0;
    if (f != NULL) {
        if (fscanf(f, "%31s %ld", quota, &period) == 2 && strcmp(quota, "max") != 0 && period > 0) {
            long limit = (atol(quota) + period - 1) / period;
            if (limit >= 1 && limit < n)
                n = limit;
        }
        fclose(f);
    }
    return n > 0 ? n : 1;
}
