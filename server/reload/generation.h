/*
 * A generation: one validated config with its loaded plugin modules,
 * initialised routes, router and worker pools — everything a request needs,
 * immutable while it serves. It is built completely before it is used (so a
 * failure leaves nothing half-applied), and reference-counted: every request
 * in flight holds its generation, and the last release runs the plugins'
 * fini hooks and unloads them. This is nginx's cycle, in miniature.
 */
#ifndef WEFT_GENERATION_H
#define WEFT_GENERATION_H

#include <stdatomic.h>
#include <stdint.h>

#include "config/config.h"
#include "base/errors.h"
#include "core/loop.h"
#include "plugin/module.h"
#include "config/router.h"
#include "request/route.h"

struct weft_workpool;
struct weft_quarantine;
struct weft_static;
struct st_h2o_mimemap_t;
struct weft_generation;

/* A static route as the router holds it (reload/statics.c). */
typedef struct weft_static_route {
    struct weft_static *serve; /* edge/static.h */
    int stat_slot;             /* metrics series (policy "static"); -1 when none */
    void *limiter;             /* its rate_limit's state, set at its first request (http/ratelimit.c) */
    struct weft_generation *gen;
} weft_static_route;

typedef struct weft_generation {
    atomic_long refs;
    unsigned long id;
    weft_config *cfg;
    weft_router *router;
    weft_route *routes;
    size_t n_routes;
    weft_module **modules;
    void **plugin_states; /* per module: what its load() returned */
    unsigned char *loaded; /* per module: load() succeeded, unload() is due */
    struct weft_ptimers **timers; /* per module: the timers its load and inits started */
    size_t n_modules;
    struct weft_workpool **pools;
    size_t n_pools;
    struct weft_dbpool *dbpool; /* blocking connections for pool workers (opened lazily) */
    struct ssl_ctx_st **tls;     /* per cfg->listen entry; NULL for cleartext listeners */
    struct weft_quarantine *quarantined; /* one per quarantined module (parallel to modules) */
    weft_static_route *statics; /* one per cfg->statics entry that was built */
    size_t n_statics;
    struct st_h2o_mimemap_t *mimemap; /* their MIME types (edge/mime.h); NULL without static routes */
} weft_generation;

/**
 * Builds a generation from `cfg`: loads every plugin, checks every route
 * against its dispatch policy, calls each route's init. With `check_only`,
 * no worker thread starts (for `weft -t`). On success the generation owns
 * `cfg`; on failure returns NULL, `cfg` stays the caller's, and `errs` says
 * why.
 */
weft_generation *weft_generation_build(weft_config *cfg, unsigned long id, int check_only, weft_errors *errs);
void weft_generation_retain(weft_generation *g);
/** Starts the plugins' timers; once the generation serves (the loops run). Control thread. */
void weft_generation_start_timers(weft_generation *g);
/**
 * Drops a reference. The last one destroys the generation (worker pools
 * joined, fini hooks run, modules unloaded) — or, once a reaper is set,
 * hands it to the reaper, so a loop thread finishing the last old request
 * never blocks on joining threads or running plugin code.
 */
void weft_generation_release(weft_generation *g);
/**
 * A request's reference to the generation its loop serves, counted on the
 * loop's own thread without an atomic: with every loop's requests on one
 * shared counter, each request would move its cache line between cores
 * twice. The loop's own reference keeps the generation while its count is
 * local; when the loop moves to another generation (weft_generation_set_loop)
 * the count is added to the shared one, and references taken before that are
 * dropped there. Loop thread; `g` is the generation the loop serves.
 */
typedef struct weft_gen_ref {
    weft_generation *gen;
    uint64_t epoch; /* the loop's generation switch it was taken in */
} weft_gen_ref;
weft_gen_ref weft_generation_retain_on_loop(weft_generation *g);
/** Drops a reference weft_generation_retain_on_loop() took, on the same loop's thread. */
void weft_generation_release_on_loop(weft_gen_ref ref);
/** The loop's local count goes to the shared one (weft_generation_set_loop does it). Loop thread. */
void weft_generation_flush_on_loop(void);
void weft_generation_set_reaper(void (*reaper)(weft_generation *g));
/** Builds the config's static routes into g's router (reload/statics.c); errors go to `errs`. */
void weft_generation_build_statics(weft_generation *g, int check_only, weft_errors *errs);
void weft_generation_free_statics(weft_generation *g);
/** Destroys a generation whose last reference is gone. */
void weft_generation_destroy(weft_generation *g);

/* The generation a loop serves: a loop slot of this layer's, set by the
 * process's per-loop hook and swapped by reload/ on the loop's thread. */
extern int weft_generation_loop_slot;
/* The generation a route belongs to (a route slot of this layer's). */
extern int weft_generation_route_slot;
static inline weft_generation *weft_route_gen(const weft_route *rt) { return weft_route_get(rt, weft_generation_route_slot); }
static inline weft_generation *weft_generation_of_loop(const weft_loop *L)
{
    return weft_loop_get(L, weft_generation_loop_slot);
}
/* Called on L's own thread: its local references (weft_gen_ref) are made shared first. */
static inline void weft_generation_set_loop(weft_loop *L, weft_generation *g)
{
    weft_generation_flush_on_loop();
    weft_loop_set(L, weft_generation_loop_slot, g);
}

#endif
