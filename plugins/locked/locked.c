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

/* Process-wide: picks the worker and numbers the answer. */
static atomic_uint_fast64_t requests;

struct worker {
    weft_mutex *mutex;
    atomic_uint holders; /* requests inside the critical section; 0 or 1 */
};

struct locked_route {
    const weft_host_sync *sync; /* for fini, which gets no request */
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
        rt->sync->mutex_free(rt->workers[i].mutex);
    free(rt);
}

static weft_rc locked_init(const weft_host *h, weft_init *ctx, void **state)
{
    long long nworkers = h->init->opt_int(ctx, "workers", 50);
    long long hold_ms = h->init->opt_int(ctx, "hold_ms", 100);
    if (nworkers < 1 || nworkers > LOCKED_MAX_WORKERS) {
        h->init->error(ctx, "option workers = %lld is out of range 1..%d", nworkers, LOCKED_MAX_WORKERS);
        return WEFT_ERROR;
    }
    if (hold_ms < 0 || hold_ms > LOCKED_MAX_HOLD_MS) {
        h->init->error(ctx, "option hold_ms = %lld is out of range 0..%d", hold_ms, LOCKED_MAX_HOLD_MS);
        return WEFT_ERROR;
    }
    struct locked_route *rt = malloc(sizeof *rt + (size_t)nworkers * sizeof rt->workers[0]);
    if (rt == NULL) {
        h->init->error(ctx, "out of memory for %lld workers", nworkers);
        return WEFT_ERROR;
    }
    rt->sync = h->sync;
    rt->hold_ms = (uint32_t)hold_ms;
    rt->nworkers = (size_t)nworkers;
    for (size_t i = 0; i < rt->nworkers; i++) {
        atomic_init(&rt->workers[i].holders, 0);
        if ((rt->workers[i].mutex = h->sync->mutex_new()) == NULL) {
            free_route(rt, i);
            h->init->error(ctx, "cannot create mutex %zu of %lld", i + 1, nworkers);
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
    const weft_host *h = weft_req_host(req);
    unsigned seen = atomic_fetch_add(&w->holders, 1) + 1;
    if (seen == 1)
        return 1;
    atomic_fetch_sub(&w->holders, 1);
    char msg[64];
    snprintf(msg, sizeof msg, "two holders of worker %zu", index);
    h->log->msg(req, WEFT_LOG_ERROR, "mutual exclusion broken: %s (%u seen)", msg, seen);
    h->response->error(req, 500, msg);
    return 0;
}

static void leave(struct worker *w)
{
    atomic_fetch_sub(&w->holders, 1);
}

static weft_rc respond(weft_req *req, unsigned long long n)
{
    const weft_host_response *res = weft_req_host(req)->response;
    if (res->status(req, 200) != WEFT_OK || res->header(req, "content-type", "text/plain") != WEFT_OK ||
        res->writef(req, "Ping_%llu", n) != WEFT_OK)
        return WEFT_ERROR;
    return WEFT_OK;
}

/* The host gave up waiting (shutdown, timeout, withdrawn request): the client
 * may retry, so 503 rather than 500. */
static void answer_host_failed(weft_req *req, const char *what, int rc)
{
    const weft_host *h = weft_req_host(req);
    if (rc != WEFT_CANCELLED) /* withdrawn requests are routine: no log flood */
        h->log->msg(req, WEFT_LOG_WARN, "%s failed (rc %d)", what, rc);
    h->response->error(req, rc == WEFT_ERROR ? 500 : 503, "lock or wait interrupted");
}

/* ---- blocking style: lock, sleep, unlock ---- */

static weft_rc locked_handle(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    struct locked_route *rt = state;
    size_t index;
    unsigned long long n = take_number(rt, &index);
    struct worker *w = &rt->workers[index];

    int rc = h->sync->lock(req, w->mutex, NULL, NULL);
    if (rc != WEFT_OK) {
        answer_host_failed(req, "lock", rc);
        return WEFT_OK;
    }
    if (!enter(req, w, index)) {
        h->sync->unlock(req, w->mutex);
        return WEFT_OK;
    }
    rc = h->sync->sleep(req, rt->hold_ms, NULL, NULL);
    leave(w);
    h->sync->unlock(req, w->mutex);
    if (rc != WEFT_OK) {
        answer_host_failed(req, "sleep", rc);
        return WEFT_OK;
    }
    return respond(req, n);
}

/* ---- reactive style: lock -> on_locked -> sleep -> on_slept, with callbacks ---- */

/* Every path that ends the chain comes through here, so `p` is freed once. */
static void finish(weft_req *req, struct pending *p, int rc)
{
    const weft_host *h = weft_req_host(req);
    free(p);
    h->response->done(req, rc);
}

static void on_slept(weft_req *req, void *arg, int rc)
{
    const weft_host *h = weft_req_host(req);
    struct pending *p = arg;
    leave(p->w);
    h->sync->unlock(req, p->w->mutex);
    if (rc != WEFT_OK) {
        answer_host_failed(req, "sleep (callback)", rc);
        finish(req, p, WEFT_OK);
        return;
    }
    finish(req, p, respond(req, p->n));
}

static void on_locked(weft_req *req, void *arg, int rc)
{
    const weft_host *h = weft_req_host(req);
    struct pending *p = arg;
    if (rc != WEFT_OK) {
        /* The lock was not granted, so there is nothing to release. */
        answer_host_failed(req, "lock (callback)", rc);
        finish(req, p, WEFT_OK);
        return;
    }
    if (!enter(req, p->w, p->index)) {
        h->sync->unlock(req, p->w->mutex);
        finish(req, p, WEFT_OK);
        return;
    }
    h->sync->sleep(req, p->rt->hold_ms, on_slept, p); /* WEFT_AGAIN: on_slept runs */
}

static weft_rc locked_handle_async(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    struct locked_route *rt = state;
    struct pending *p = malloc(sizeof *p);
    if (p == NULL) {
        h->response->error(req, 503, "out of memory");
        return WEFT_OK;
    }
    p->rt = rt;
    p->n = take_number(rt, &p->index);
    p->w = &rt->workers[p->index];
    return h->sync->lock(req, p->w->mutex, on_locked, p); /* WEFT_AGAIN */
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
