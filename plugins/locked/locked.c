/*
 * locked — contention on host mutexes.
 *
 * A route owns `workers` (default 50) worker objects, each behind its own
 * host mutex. Request number c takes worker c % workers, holds its lock for
 * `hold_ms` (default 100) and answers "Ping_<c+1>". With more concurrent
 * requests than workers, requests queue on the (FIFO) host locks, which is
 * what the benchmark measures.
 *
 * Mutual exclusion is checked, not assumed: every worker counts its holders,
 * and a request that finds another holder logs it and answers 500 "two
 * holders of worker K" (the integration tests assert that never happens).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <weft/plugin.h>

#define LOCKED_MAX_WORKERS 100000
#define LOCKED_MAX_HOLD_MS 600000

static const weft_host *host;

/* Process-wide: picks the worker and numbers the answer. */
static atomic_uint_fast64_t requests;

struct worker {
    weft_mutex *mutex;
    atomic_uint holders; /* requests inside the critical section; 0 or 1 */
};

struct locked_route {
    uint32_t hold_ms;
    size_t nworkers;
    struct worker workers[];
};

/* Per-request state of the reactive chain: lock -> sleep -> unlock. */
struct pending {
    const struct locked_route *rt;
    struct worker *w;
    size_t index;
    unsigned long long n;
};

static void free_route(struct locked_route *rt, size_t created)
{
    for (size_t i = 0; i < created; i++)
        host->mutex_free(rt->workers[i].mutex);
    free(rt);
}

static int locked_init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    long long nworkers = host->opt_int(ctx, "workers", 50);
    long long hold_ms = host->opt_int(ctx, "hold_ms", 100);
    if (nworkers < 1 || nworkers > LOCKED_MAX_WORKERS) {
        host->init_error(ctx, "option workers = %lld is out of range 1..%d", nworkers, LOCKED_MAX_WORKERS);
        return WEFT_ERROR;
    }
    if (hold_ms < 0 || hold_ms > LOCKED_MAX_HOLD_MS) {
        host->init_error(ctx, "option hold_ms = %lld is out of range 0..%d", hold_ms, LOCKED_MAX_HOLD_MS);
        return WEFT_ERROR;
    }
    struct locked_route *rt = malloc(sizeof *rt + (size_t)nworkers * sizeof rt->workers[0]);
    if (rt == NULL) {
        host->init_error(ctx, "out of memory for %lld workers", nworkers);
        return WEFT_ERROR;
    }
    rt->hold_ms = (uint32_t)hold_ms;
    rt->nworkers = (size_t)nworkers;
    for (size_t i = 0; i < rt->nworkers; i++) {
        atomic_init(&rt->workers[i].holders, 0);
        if ((rt->workers[i].mutex = host->mutex_new()) == NULL) {
            free_route(rt, i);
            host->init_error(ctx, "cannot create mutex %zu of %lld", i + 1, nworkers);
            return WEFT_ERROR;
        }
    }
    *state = rt;
    return WEFT_OK;
}

/* The host calls fini only after the route's last request, so no lock is
 * held or awaited any more. */
static void locked_fini(void *state)
{
    struct locked_route *rt = state;
    free_route(rt, rt->nworkers);
}

static unsigned long long take_number(const struct locked_route *rt, size_t *index)
{
    uint_fast64_t c = atomic_fetch_add_explicit(&requests, 1, memory_order_relaxed);
    *index = (size_t)(c % rt->nworkers);
    return (unsigned long long)c + 1;
}

/*
 * Called right after the lock is acquired. Read-modify-writes on one atomic
 * are totally ordered, so whenever two critical sections overlap the later
 * increment sees the earlier one, whatever the host lock does or fails to do.
 */
static int enter(weft_req *req, struct worker *w, size_t index)
{
    unsigned seen = atomic_fetch_add(&w->holders, 1) + 1;
    if (seen == 1)
        return 1;
    atomic_fetch_sub(&w->holders, 1);
    char msg[64];
    snprintf(msg, sizeof msg, "two holders of worker %zu", index);
    host->log(req, WEFT_LOG_ERROR, "mutual exclusion broken: %s (%u seen)", msg, seen);
    host->res_error(req, 500, msg);
    return 0;
}

static void leave(struct worker *w)
{
    atomic_fetch_sub(&w->holders, 1);
}

static int respond(weft_req *req, unsigned long long n)
{
    host->res_status(req, 200);
    if (host->res_header(req, "content-type", "text/plain") < 0 || host->res_printf(req, "Ping_%llu", n) < 0)
        return WEFT_ERROR;
    return WEFT_OK;
}

/* The host gave up waiting (shutdown, timeout, withdrawn request): the client
 * may retry, so 503 rather than 500. */
static void answer_host_failed(weft_req *req, const char *what, int rc)
{
    if (rc != WEFT_CANCELLED) /* withdrawn requests are routine: no log flood */
        host->log(req, WEFT_LOG_WARN, "%s failed (rc %d)", what, rc);
    host->res_error(req, rc == WEFT_ERROR ? 500 : 503, "lock or wait interrupted");
}

/* ---- blocking style: lock, sleep, unlock ---- */

static int locked_handle(weft_req *req, void *state)
{
    struct locked_route *rt = state;
    size_t index;
    unsigned long long n = take_number(rt, &index);
    struct worker *w = &rt->workers[index];

    int rc = host->mutex_lock(req, w->mutex);
    if (rc != WEFT_OK) {
        answer_host_failed(req, "mutex_lock", rc);
        return WEFT_OK;
    }
    if (!enter(req, w, index)) {
        host->mutex_unlock(req, w->mutex);
        return WEFT_OK;
    }
    rc = host->sleep_ms(req, rt->hold_ms);
    leave(w);
    host->mutex_unlock(req, w->mutex);
    if (rc != WEFT_OK) {
        answer_host_failed(req, "sleep_ms", rc);
        return WEFT_OK;
    }
    return respond(req, n);
}

/* ---- reactive style: mutex_lock_async -> on_locked -> sleep_async -> on_slept ---- */

/* Every path that ends the chain comes through here, so `p` is freed once. */
static void finish(weft_req *req, struct pending *p, int rc)
{
    free(p);
    host->done(req, rc);
}

static void on_slept(weft_req *req, void *arg, int rc)
{
    struct pending *p = arg;
    leave(p->w);
    host->mutex_unlock(req, p->w->mutex);
    if (rc != WEFT_OK) {
        answer_host_failed(req, "sleep_async", rc);
        finish(req, p, WEFT_OK);
        return;
    }
    finish(req, p, respond(req, p->n));
}

static void on_locked(weft_req *req, void *arg, int rc)
{
    struct pending *p = arg;
    if (rc != WEFT_OK) {
        /* The lock was not granted, so there is nothing to release. */
        answer_host_failed(req, "mutex_lock_async", rc);
        finish(req, p, WEFT_OK);
        return;
    }
    if (!enter(req, p->w, p->index)) {
        host->mutex_unlock(req, p->w->mutex);
        finish(req, p, WEFT_OK);
        return;
    }
    host->sleep_async(req, p->rt->hold_ms, on_slept, p);
}

static int locked_handle_async(weft_req *req, void *state)
{
    struct locked_route *rt = state;
    struct pending *p = malloc(sizeof *p);
    if (p == NULL) {
        host->res_error(req, 503, "out of memory");
        return WEFT_OK;
    }
    p->rt = rt;
    p->n = take_number(rt, &p->index);
    p->w = &rt->workers[p->index];
    host->mutex_lock_async(req, p->w->mutex, on_locked, p);
    return WEFT_AGAIN;
}

static const weft_plugin locked_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "locked",
    .version = "1.0.0",
    .description = "holds one of `workers` host mutexes for `hold_ms`, then answers Ping_<n>",
    .init = locked_init,
    .fini = locked_fini,
    .handle = locked_handle,
    .handle_async = locked_handle_async,
};

const weft_plugin *weft_plugin_entry(void)
{
    return &locked_plugin;
}
