/* How many CPUs weft may use, for the default thread count. */
#ifndef WEFT_CPUS_H
#define WEFT_CPUS_H

/** The online CPUs, capped by a cgroup v2 CPU limit; at least 1. */
long weft_cpu_count(void);

#endif
