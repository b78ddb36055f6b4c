#include "dispatch/blocking.h"

#include <stdatomic.h>

#include "request/route.h"
#include "base/log.h"
#include "base/timer.h"

static atomic_uint_fast64_t threshold_ns = 20 * 1000000ull;
static atomic_uint_fast64_t interval_ns = 10 * 1000000000ull;
static atomic_uint_fast64_t total;

void weft_blocking_configure(int threshold_ms, int interval_s)
{
    atomic_store(&threshold_ns, (uint64_t)threshold_ms * 1000000u);
    atomic_store(&interval_ns, (uint64_t)interval_s * 1000000000u);
}

void weft_blocking_check(weft_route *route, uint64_t elapsed_ns)
{
    uint64_t limit = atomic_load_explicit(&threshold_ns, memory_order_relaxed);
    if (limit == 0 || elapsed_ns <= limit)
        return;
    atomic_fetch_add_explicit(&total, 1, memory_order_relaxed);
    uint64_t n = atomic_fetch_add_explicit(&route->blocked_total, 1, memory_order_relaxed) + 1;
    /* An auto route that measures (one with handle(): the generation gave it
     * its auto state) says what it does about it itself (auto.c). */
    if (route->cfg->dispatch == WEFT_DISPATCH_AUTO && route->desc->handle != NULL && route->cfg->adapt.prefer < 0)
        return;
    uint64_t now = weft_now_ns(), last = atomic_load(&route->blocked_last_ns);
    /* One line per route per interval: a pinned route must not flood the log. */
    if (last != 0 && now - last < atomic_load(&interval_ns))
        return;
    if (!atomic_compare_exchange_strong(&route->blocked_last_ns, &last, now))
        return;
    weft_log_warn("%s blocked its event-loop thread for %llu ms under dispatch=%s (threshold %llu ms; %llu time(s) "
                  "so far): a raw blocking call pins the loop and stalls every connection on it; use the host's "
                  "sleep/lock/query primitives, or dispatch = \"pool\"",
                  route->label, (unsigned long long)(elapsed_ns / 1000000u), weft_dispatch_name(route->cfg->dispatch),
                  (unsigned long long)(limit / 1000000u), (unsigned long long)n);
}

void weft_blocking_check_slice(const char *what, atomic_uint_fast64_t *last_ns, uint64_t elapsed_ns)
{
    uint64_t limit = atomic_load_explicit(&threshold_ns, memory_order_relaxed);
    if (limit == 0 || elapsed_ns <= limit)
        return;
    atomic_fetch_add_explicit(&total, 1, memory_order_relaxed);
    uint64_t now = weft_now_ns(), last = atomic_load(last_ns);
    if ((last != 0 && now - last < atomic_load(&interval_ns)) || !atomic_compare_exchange_strong(last_ns, &last, now))
        return;
    weft_log_warn("%s blocked its event-loop thread for %llu ms (threshold %llu ms): timer callbacks must not "
                  "block; hand slow work to a thread of your own",
                  what, (unsigned long long)(elapsed_ns / 1000000u), (unsigned long long)(limit / 1000000u));
}

uint64_t weft_blocking_threshold_ns(void) { return atomic_load_explicit(&threshold_ns, memory_order_relaxed); }

uint64_t weft_blocking_total(void) { return atomic_load(&total); }

uint64_t weft_blocking_interval_ns(void) { return atomic_load_explicit(&interval_ns, memory_order_relaxed); }
