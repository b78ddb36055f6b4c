#include "ops/trim.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "core/loop.h"

#define TICKS_BETWEEN 50                 /* the loop's tick is 100 ms: every 5 s */
#define FREE_WORTH_TRIMMING (4u << 20)   /* below this, the walk costs more than it returns */

static _Atomic uint64_t trimmed_bytes, trims;
static unsigned ticks; /* loop 0 only */

/* Resident bytes, from /proc/self/statm (malloc_trim gives pages back with
 * madvise: the arenas' sizes do not change, the RSS does). 0 if unreadable. */
static uint64_t resident(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, res = 0;
    if (f == NULL)
        return 0;
    int n = fscanf(f, "%llu %llu", &size, &res);
    fclose(f);
    return n == 2 ? (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

/* mallinfo2 and malloc_trim lock each arena in turn: a few microseconds per
 * arena every 5 s, on one loop, and nothing at all while the arenas hold
 * little free. */
static void trim_tick(weft_loop *L)
{
    if (L->index != 0 || ++ticks < TICKS_BETWEEN)
        return;
    ticks = 0;
    struct mallinfo2 before = mallinfo2();
    if (before.fordblks < FREE_WORTH_TRIMMING)
        return;
    uint64_t held = resident();
    malloc_trim(0);
    uint64_t now = resident();
    atomic_fetch_add_explicit(&trimmed_bytes, held > now ? held - now : 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&trims, 1, memory_order_relaxed);
}

void weft_trim_attach(void)
{
    static const weft_loop_hook hook = {.tick = trim_tick};
    weft_loop_add_hook(&hook);
}

uint64_t weft_trim_bytes(void) { return atomic_load_explicit(&trimmed_bytes, memory_order_relaxed); }
uint64_t weft_trim_count(void) { return atomic_load_explicit(&trims, memory_order_relaxed); }
