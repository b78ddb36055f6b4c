/*
 * dispatch = "auto": where the next request of a route runs, chosen from
 * what its handler did on the loop. A route with a blocking-style handle()
 * starts on coroutine; a second slice that holds its loop past
 * blocking.threshold_ms within a second of the first moves it to its pool
 * (one alone may be a one-off the handler did not cause; the requests already
 * running keep their policy: nothing migrates mid-request). From time to
 * time one request of a demoted route runs on a coroutine as a probe: if a
 * slice of it blocks again the route stays on the pool and the interval
 * doubles up to a cap; if none does (and min_dwell_s has passed since the
 * last change) the route goes back to coroutine. Every change is logged once
 * with its evidence and counted.
 *
 * The state is process-wide and keyed by the route's path, so a reload
 * keeps what was measured; the settings (prefer, min_dwell_s, probe_s,
 * probe_max_s) are read from the route of the request at hand.
 */
#ifndef WEFT_AUTO_H
#define WEFT_AUTO_H

#include <stdint.h>

#include "config/config.h"
#include "request/route.h"

struct weft_route;
typedef struct weft_auto weft_auto;

/* Where a dispatch = auto route with handle() runs now; NULL for any other route. */
extern int weft_auto_route_slot;
static inline weft_auto *weft_route_auto(const weft_route *rt) { return weft_route_get(rt, weft_auto_route_slot); }
static inline void weft_route_set_auto(weft_route *rt, weft_auto *a) { weft_route_set(rt, weft_auto_route_slot, a); }

/** The state of the auto route at `path`, created on first use; never freed. Control thread. */
weft_auto *weft_auto_for(const char *path);
/** The policy the next request of `route` runs on (coroutine or pool); *probe = 1 when it is a probe. */
weft_dispatch weft_auto_choose(const struct weft_route *route, int *probe);
/**
 * What the loop thread had used when a slice began: a slice that took long
 * only because the kernel preempted the thread (a busy machine) is no
 * evidence against the handler, one that slept in a syscall (a voluntary
 * switch) or burnt the CPU itself is.
 */
typedef struct weft_auto_mark {
    uint64_t cpu_ns;
    long nvcsw;
} weft_auto_mark;
void weft_auto_mark_now(weft_auto_mark *m);
/**
 * After each loop-thread slice of a coroutine-run request of `route`
 * (`probe`: it is the probe; `begin`: the mark taken when it began).
 */
void weft_auto_slice(const struct weft_route *route, int probe, uint64_t elapsed_ns, const weft_auto_mark *begin);
/** The probe's coroutine finished (`ran` 0: it never started, e.g. no stack). */
void weft_auto_probe_end(const struct weft_route *route, int ran);

typedef struct weft_auto_info {
    weft_dispatch policy;     /* where new requests go now */
    int pinned;               /* auto.prefer holds it there */
    uint64_t changes;         /* policy changes since start */
    uint64_t probes;          /* probes run, and those that blocked */
    uint64_t probes_blocked;
    double since_change_s;    /* -1: never changed */
    double next_probe_in_s;   /* demoted only; else -1 */
    double probe_interval_s;  /* demoted only; else -1 */
} weft_auto_info;

/** What /metrics and /status show of an auto route (any thread). */
void weft_auto_info_get(const struct weft_route *route, weft_auto_info *out);

/** The policy a route's new requests start on now, as /status, /metrics and
 * the Dev UI show it: a fixed policy is its own, an auto route's moves
 * between coroutine and pool, an auto route with handle_async only is
 * reactive. Any thread. */
weft_dispatch weft_route_policy_now(const struct weft_route *route);

#endif
