#include "dispatch/auto.h"

#include <pthread.h>
#include <sys/resource.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/timer.h"
#include "dispatch/blocking.h"
#include "request/route.h"

WEFT_ROUTE_SLOT(weft_auto_route_slot)

#define NS 1000000000ull
#define WINDOW_NS NS /* the detection window the evidence covers */
#define NBUCKETS 96  /* slice durations: 4 buckets per power of two of µs, up to ~16 s */

struct weft_auto {
    weft_auto *next;
    char *path;
    /* Read on every request of the route: atomics, no lock. */
    atomic_int policy;                  /* WEFT_DISPATCH_COROUTINE or WEFT_DISPATCH_POOL */
    atomic_int probing;                 /* a probe is in flight (one at a time) */
    atomic_uint_fast64_t next_probe_ns; /* demoted: when the next probe may start */
    atomic_uint_fast64_t changes, probes, probes_blocked;
    atomic_uint_fast64_t last_change_ns; /* 0: never changed */
    atomic_uint_fast64_t last_over_ns;   /* the last slice the handler held its loop past the threshold; 0: none */
    /* The probe in flight. */
    atomic_uint_fast64_t probe_slices, probe_max_ns;
    atomic_int probe_blocked;
    /* Changes and probe scheduling: taken only when something is decided. */
    pthread_mutex_t mu;
    uint64_t last_promote_ns;
    uint64_t interval_ns; /* the probe interval now (backs off) */
    /* The detection window: the evidence a change is logged with. Updated
     * without a lock by every loop; a roll racing an update may lose a
     * count, which only blurs the log line, never the decision. */
    atomic_uint_fast64_t win_start_ns, win_slices, win_over, win_max_ns;
    atomic_uint_fast64_t win_hist[NBUCKETS];
};

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static weft_auto *registry;

weft_auto *weft_auto_for(const char *path)
{
    pthread_mutex_lock(&registry_mu);
    weft_auto *a = registry;
    while (a != NULL && strcmp(a->path, path) != 0)
        a = a->next;
    if (a == NULL && (a = calloc(1, sizeof(*a))) != NULL) {
        if ((a->path = strdup(path)) == NULL) {
            free(a);
            a = NULL;
        } else {
            atomic_init(&a->policy, WEFT_DISPATCH_COROUTINE);
            pthread_mutex_init(&a->mu, NULL);
            a->next = registry;
            registry = a;
        }
    }
    pthread_mutex_unlock(&registry_mu);
    return a;
}

/* ---- the evidence ---- */

static int bucket_of(uint64_t ns)
{
    uint64_t us = ns / 1000;
    if (us < 4)
        return (int)us;
    int p = 63 - __builtin_clzll(us);
    int i = 4 * (p - 1) + (int)((us >> (p - 2)) & 3);
    return i < NBUCKETS ? i : NBUCKETS - 1;
}

static uint64_t bucket_upper_us(int i)
{
    if (i < 4)
        return (uint64_t)i + 1;
    return (uint64_t)(5 + i % 4) << (i / 4 - 1);
}

static void window_add(weft_auto *a, uint64_t now, uint64_t elapsed_ns, int over)
{
    uint64_t start = atomic_load_explicit(&a->win_start_ns, memory_order_relaxed);
    if (now - start >= WINDOW_NS &&
        atomic_compare_exchange_strong(&a->win_start_ns, &start, now)) {
        atomic_store_explicit(&a->win_slices, 0, memory_order_relaxed);
        atomic_store_explicit(&a->win_over, 0, memory_order_relaxed);
        atomic_store_explicit(&a->win_max_ns, 0, memory_order_relaxed);
        for (int i = 0; i < NBUCKETS; i++)
            atomic_store_explicit(&a->win_hist[i], 0, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&a->win_slices, 1, memory_order_relaxed);
    if (over)
        atomic_fetch_add_explicit(&a->win_over, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&a->win_hist[bucket_of(elapsed_ns)], 1, memory_order_relaxed);
    uint64_t max = atomic_load_explicit(&a->win_max_ns, memory_order_relaxed);
    while (elapsed_ns > max && !atomic_compare_exchange_weak(&a->win_max_ns, &max, elapsed_ns))
        ;
}

typedef struct evidence {
    uint64_t slices, over;
    double window_s, p99_ms, max_ms;
} evidence;

static evidence window_read(weft_auto *a, uint64_t now)
{
    evidence e = {.slices = atomic_load(&a->win_slices), .over = atomic_load(&a->win_over)};
    e.window_s = (double)(now - atomic_load(&a->win_start_ns)) / 1e9;
    e.max_ms = (double)atomic_load(&a->win_max_ns) / 1e6;
    uint64_t hist[NBUCKETS], total = 0, seen = 0;
    for (int i = 0; i < NBUCKETS; i++)
        total += hist[i] = atomic_load_explicit(&a->win_hist[i], memory_order_relaxed);
    uint64_t rank = (total * 99 + 99) / 100; /* ceil(0.99 total) */
    for (int i = 0; i < NBUCKETS && total > 0; i++)
        if ((seen += hist[i]) >= rank) {
            e.p99_ms = (double)bucket_upper_us(i) / 1000.0;
            break;
        }
    if (e.p99_ms > e.max_ms) /* the bucket's bound overshoots the largest value in it */
        e.p99_ms = e.max_ms;
    return e;
}

/* ---- the decisions ---- */

static uint64_t secs(int s) { return (uint64_t)s * NS; }

static void demote(weft_auto *a, const weft_route *route, uint64_t now, uint64_t limit)
{
    const weft_auto_cfg *c = &route->cfg->adapt;
    pthread_mutex_lock(&a->mu);
    if (atomic_load(&a->policy) != WEFT_DISPATCH_COROUTINE) { /* another loop was first */
        pthread_mutex_unlock(&a->mu);
        return;
    }
    /* Blocked again soon after a probe promoted it: the probe was lucky (the
     * route blocks now and then). The next probe waits at least two dwells
     * and twice as long as the last interval, so a route that flaps changes
     * at most once per min_dwell_s on average, and ever more rarely. */
    int flap = a->last_promote_ns != 0 && now - a->last_promote_ns < secs(c->min_dwell_s);
    uint64_t iv = secs(c->probe_s);
    if (flap) {
        iv = a->interval_ns * 2;
        if (iv < 2 * secs(c->min_dwell_s))
            iv = 2 * secs(c->min_dwell_s);
    }
    if (iv < secs(c->probe_s))
        iv = secs(c->probe_s);
    if (iv > secs(c->probe_max_s))
        iv = secs(c->probe_max_s);
    a->interval_ns = iv;
    atomic_store(&a->next_probe_ns, now + iv);
    atomic_store(&a->last_change_ns, now);
    atomic_store(&a->last_over_ns, 0);
    atomic_store(&a->policy, WEFT_DISPATCH_POOL);
    uint64_t n = atomic_fetch_add(&a->changes, 1) + 1;
    pthread_mutex_unlock(&a->mu);
    evidence e = window_read(a, now);
    weft_log_warn("route %s: coroutine → pool: %llu of %llu slices over %llu ms in the last %.2f s, p99 %.1f ms, "
                  "longest %.1f ms (%s blocks its event loop: new requests go to pool '%s'; next probe in %.0f s; "
                  "change %llu)",
                  route->cfg->path, (unsigned long long)e.over, (unsigned long long)e.slices,
                  (unsigned long long)(limit / 1000000u), e.window_s, e.p99_ms, e.max_ms, route->label,
                  route->cfg->pool, (double)iv / 1e9, (unsigned long long)n);
}

/* One getrusage per slice of an auto route (about 0.2 µs): the price of
 * telling a handler that blocks from a loop thread the kernel preempted. */
void weft_auto_mark_now(weft_auto_mark *m)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0) {
        *m = (weft_auto_mark){0, -1};
        return;
    }
    m->cpu_ns = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * NS +
                (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
    m->nvcsw = ru.ru_nvcsw;
}

/* A slice over the threshold blocked the loop when the thread slept in it
 * (usleep, a blocking recv or connect, a raw mutex: voluntary switches) or
 * spent half the threshold on the CPU itself; a slice that was only waiting
 * for a CPU (involuntary switches, no CPU time) says nothing about the
 * handler. Unknown (getrusage failed): count it. */
static int blocked_by_handler(const weft_auto_mark *begin, uint64_t limit)
{
    weft_auto_mark end;
    weft_auto_mark_now(&end);
    if (begin->nvcsw < 0 || end.nvcsw < 0)
        return 1;
    return end.nvcsw > begin->nvcsw || end.cpu_ns - begin->cpu_ns > limit / 2;
}

void weft_auto_slice(const weft_route *route, int probe, uint64_t elapsed_ns, const weft_auto_mark *begin)
{
    weft_auto *a = weft_route_auto(route);
    uint64_t limit = weft_blocking_threshold_ns();
    int over = limit != 0 && elapsed_ns > limit && blocked_by_handler(begin, limit);
    uint64_t now = weft_now_ns();
    window_add(a, now, elapsed_ns, over);
    if (probe) {
        atomic_fetch_add_explicit(&a->probe_slices, 1, memory_order_relaxed);
        uint64_t max = atomic_load(&a->probe_max_ns);
        if (elapsed_ns > max)
            atomic_store(&a->probe_max_ns, elapsed_ns);
        if (!over || atomic_exchange(&a->probe_blocked, 1))
            return; /* within budget, or this probe's failure was handled */
        const weft_auto_cfg *c = &route->cfg->adapt;
        pthread_mutex_lock(&a->mu);
        uint64_t iv = a->interval_ns * 2;
        if (iv > secs(c->probe_max_s))
            iv = secs(c->probe_max_s);
        a->interval_ns = iv;
        atomic_store(&a->next_probe_ns, now + iv);
        pthread_mutex_unlock(&a->mu);
        atomic_fetch_add(&a->probes_blocked, 1);
        weft_log_info("route %s: probe on a coroutine blocked the loop for %.1f ms (budget %llu ms): stays on pool; "
                      "next probe in %.0f s",
                      route->cfg->path, (double)elapsed_ns / 1e6, (unsigned long long)(limit / 1000000u),
                      (double)iv / 1e9);
        return;
    }
    if (!over || route->cfg->adapt.prefer >= 0 || atomic_load(&a->policy) != WEFT_DISPATCH_COROUTINE)
        return;
    /* One slow slice alone may be a one-off the handler did not cause: a
     * thread that slept on a lock the runtime held (seen under TSan: 190 ms
     * asleep in the first slice of a handler that does nothing), a page
     * faulted in from disk. A handler that blocks does it again: the second
     * such slice within a window moves the route. */
    uint64_t prev = atomic_exchange(&a->last_over_ns, now);
    if (prev != 0 && now - prev <= WINDOW_NS)
        demote(a, route, now, limit);
}

weft_dispatch weft_auto_choose(const weft_route *route, int *probe)
{
    weft_auto *a = weft_route_auto(route);
    *probe = 0;
    if (route->cfg->adapt.prefer >= 0)
        return (weft_dispatch)route->cfg->adapt.prefer;
    if (atomic_load_explicit(&a->policy, memory_order_relaxed) == WEFT_DISPATCH_COROUTINE)
        return WEFT_DISPATCH_COROUTINE;
    if (weft_now_ns() < atomic_load_explicit(&a->next_probe_ns, memory_order_relaxed))
        return WEFT_DISPATCH_POOL;
    int idle = 0;
    if (!atomic_compare_exchange_strong(&a->probing, &idle, 1))
        return WEFT_DISPATCH_POOL;
    atomic_store(&a->probe_slices, 0);
    atomic_store(&a->probe_max_ns, 0);
    atomic_store(&a->probe_blocked, 0);
    atomic_fetch_add(&a->probes, 1);
    *probe = 1;
    return WEFT_DISPATCH_COROUTINE;
}

void weft_auto_probe_end(const weft_route *route, int ran)
{
    weft_auto *a = weft_route_auto(route);
    const weft_auto_cfg *c = &route->cfg->adapt;
    uint64_t now = weft_now_ns();
    if (!ran || atomic_load(&a->probe_blocked)) {
        atomic_store(&a->probing, 0);
        return;
    }
    pthread_mutex_lock(&a->mu);
    uint64_t last = atomic_load(&a->last_change_ns);
    int promote = atomic_load(&a->policy) == WEFT_DISPATCH_POOL && now - last >= secs(c->min_dwell_s);
    uint64_t n = 0, since_ns = now - last;
    if (promote) {
        atomic_store(&a->policy, WEFT_DISPATCH_COROUTINE);
        atomic_store(&a->last_change_ns, now);
        a->last_promote_ns = now;
        n = atomic_fetch_add(&a->changes, 1) + 1;
    } else {
        /* It would pass, but the route changed too recently: hysteresis. */
        atomic_store(&a->next_probe_ns, last + secs(c->min_dwell_s));
    }
    pthread_mutex_unlock(&a->mu);
    atomic_store(&a->probing, 0);
    if (promote)
        weft_log_warn("route %s: pool → coroutine: a probe request ran %llu slices on a coroutine, longest %.1f ms "
                      "(budget %llu ms), after %.0f s on pool and %llu blocked probe(s) (change %llu)",
                      route->cfg->path, (unsigned long long)atomic_load(&a->probe_slices),
                      (double)atomic_load(&a->probe_max_ns) / 1e6,
                      (unsigned long long)(weft_blocking_threshold_ns() / 1000000u), (double)since_ns / 1e9,
                      (unsigned long long)atomic_load(&a->probes_blocked), (unsigned long long)n);
}

weft_dispatch weft_route_policy_now(const weft_route *route)
{
    if (weft_route_auto(route) != NULL) {
        weft_auto_info ai;
        weft_auto_info_get(route, &ai);
        return ai.policy;
    }
    return route->cfg->dispatch == WEFT_DISPATCH_AUTO ? WEFT_DISPATCH_REACTIVE : route->cfg->dispatch;
}

void weft_auto_info_get(const weft_route *route, weft_auto_info *out)
{
    weft_auto *a = weft_route_auto(route);
    uint64_t now = weft_now_ns(), last = atomic_load(&a->last_change_ns);
    *out = (weft_auto_info){
        .policy = (weft_dispatch)atomic_load(&a->policy),
        .changes = atomic_load(&a->changes),
        .probes = atomic_load(&a->probes),
        .probes_blocked = atomic_load(&a->probes_blocked),
        .since_change_s = last != 0 ? (double)(now - last) / 1e9 : -1,
        .next_probe_in_s = -1,
        .probe_interval_s = -1,
    };
    if (route->cfg->adapt.prefer >= 0) {
        out->policy = (weft_dispatch)route->cfg->adapt.prefer;
        out->pinned = 1;
    } else if (out->policy == WEFT_DISPATCH_POOL) {
        uint64_t next = atomic_load(&a->next_probe_ns);
        out->next_probe_in_s = next > now ? (double)(next - now) / 1e9 : 0;
        pthread_mutex_lock(&a->mu);
        out->probe_interval_s = (double)a->interval_ns / 1e9;
        pthread_mutex_unlock(&a->mu);
    }
}
