#include "http/ratelimit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/stats.h"
#include "http/ratelimit_table.h"

/* One per route path and kind, never freed: reloads find it again. */
struct weft_ratelimit {
    char *path;
    const char *kind; /* a string literal: WEFT_RL_KIND_* */
    weft_ratelimit_cfg cfg; /* what `id` stands for (under mu) */
    _Atomic uint32_t id;    /* table key part; a new one when the route's rate_limit changes */
    atomic_uint_fast64_t limited;
    _Atomic uint64_t tat; /* per = "route": the one bucket (http/ratelimit_table.h) */
    struct weft_ratelimit *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct weft_ratelimit *_Atomic head;
static uint32_t last_id;

static int same_cfg(const weft_ratelimit_cfg *a, const weft_ratelimit_cfg *b)
{
    return a->per == b->per && a->requests == b->requests && a->per_s == b->per_s && a->burst == b->burst;
}

/* A plugin route's limiter sits in a route slot; a static route's in its
 * own member (reload/generation.h). */
static WEFT_ROUTE_SLOT(rl_slot)

void **weft_ratelimit_slot(weft_route *route) { return &route->slots[rl_slot]; }

/* The route's limiter, found by path and kind at its first request in a generation. */
static struct weft_ratelimit *limit_for(const char *path, const char *kind, const weft_ratelimit_cfg *c,
                                        size_t capacity)
{
    if (c->per == WEFT_RL_CLIENT && weft_rl_table_init(capacity) != 0)
        return NULL;
    pthread_mutex_lock(&mu);
    struct weft_ratelimit *l = atomic_load(&head);
    while (l != NULL && (strcmp(l->path, path) != 0 || strcmp(l->kind, kind) != 0))
        l = l->next;
    if (l == NULL && (l = calloc(1, sizeof(*l))) != NULL) {
        if ((l->path = strdup(path)) == NULL) {
            free(l);
            l = NULL;
        } else {
            l->kind = kind;
            l->next = atomic_load(&head);
            atomic_store(&head, l); /* /metrics walks the list without the mutex */
        }
    }
    if (l != NULL && (l->id == 0 || !same_cfg(&l->cfg, c))) {
        l->cfg = *c;
        atomic_store(&l->tat, 0); /* full */
        atomic_store(&l->id, ++last_id == 0 ? ++last_id : last_id);
    }
    pthread_mutex_unlock(&mu);
    return l;
}

/* Structured-field headers of draft-ietf-httpapi-ratelimit-headers:
 * the policy (quota q per window w seconds) and what is left of it. */
static void add_headers(h2o_req_t *req, const weft_ratelimit_cfg *c, const weft_rl_verdict *v)
{
    const char *name = c->per == WEFT_RL_ROUTE ? "route" : "client";
    unsigned long long retry = (v->wait_ns + 999999999ull) / 1000000000ull;
    if (retry == 0)
        retry = 1;
    char buf[96];
    int n = snprintf(buf, sizeof(buf), "%llu", retry);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, h2o_strdup(&req->pool, buf, n).base, n);
    n = snprintf(buf, sizeof(buf), "\"%s\";q=%ld;w=%ld", name, c->requests, c->per_s);
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("ratelimit-policy"), 0, NULL,
                          h2o_strdup(&req->pool, buf, n).base, n);
    n = snprintf(buf, sizeof(buf), "\"%s\";r=%llu;t=%llu", name, (unsigned long long)v->remaining, retry);
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("ratelimit"), 0, NULL,
                          h2o_strdup(&req->pool, buf, n).base, n);
}

int weft_ratelimit_refuse(h2o_req_t *req, const weft_ratelimit_route *route, const uint8_t key[16], size_t capacity,
                          uint64_t now_ns)
{
    const weft_ratelimit_cfg *c = route->cfg;
    if (c->per == WEFT_RL_NONE)
        return 0;
    /* Any loop may be first: the slot is read and set atomically. */
    struct weft_ratelimit *l = __atomic_load_n((struct weft_ratelimit **)route->limiter, __ATOMIC_ACQUIRE);
    if (l == NULL) {
        /* The route's first request in this generation. Without memory the
         * route serves unlimited rather than not at all. */
        if ((l = limit_for(route->path, route->kind, c, capacity)) == NULL)
            return 0;
        __atomic_store_n((struct weft_ratelimit **)route->limiter, l, __ATOMIC_RELEASE);
    }
    weft_rl_rate rate = {.interval_ns = (uint64_t)c->per_s * 1000000000u / (uint64_t)c->requests};
    if (rate.interval_ns == 0)
        rate.interval_ns = 1;
    if (__builtin_mul_overflow(rate.interval_ns, (uint64_t)(c->burst - 1), &rate.tolerance_ns))
        rate.tolerance_ns = UINT64_MAX / 4;
    weft_rl_verdict v;
    if (c->per == WEFT_RL_ROUTE) {
        weft_rl_take(&l->tat, &rate, now_ns, &v);
    } else {
        uint8_t k[16];
        memcpy(k, key, 16);
        /* An IPv6 client is its /64: one host holds a whole one, and would
         * otherwise be 2^64 clients. */
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(k, mapped, 12) != 0)
            memset(k + 8, 0, 8);
        weft_rl_table_take(atomic_load_explicit(&l->id, memory_order_relaxed), k, &rate, now_ns, &v);
    }
    if (v.allowed)
        return 0;
    atomic_fetch_add_explicit(&l->limited, 1, memory_order_relaxed);
    add_headers(req, c, &v);
    return 1;
}

void weft_ratelimit_metrics(FILE *f)
{
    weft_stats_write_header(f, "weft_rate_limited_total", "counter",
                            "Requests answered 429 by a route's rate_limit, by route path and kind (plugin or static).");
    for (struct weft_ratelimit *l = atomic_load(&head); l != NULL; l = l->next) {
        fputs("weft_rate_limited_total{route=\"", f);
        weft_stats_write_escaped(f, l->path);
        fprintf(f, "\",kind=\"%s\"} %llu\n", l->kind, (unsigned long long)atomic_load_explicit(&l->limited, memory_order_relaxed));
    }
    size_t used, cap;
    uint64_t evicted;
    weft_rl_table_stats(&used, &cap, &evicted);
    weft_stats_write_header(f, "weft_rate_limit_clients", "gauge",
                            "Clients with a token bucket in the per-client rate limit table.");
    fprintf(f, "weft_rate_limit_clients %zu\n", used);
    weft_stats_write_header(f, "weft_rate_limit_clients_capacity", "gauge",
                            "Room in that table (limits.rate_limit_clients; 0 until a per-client limit is used).");
    fprintf(f, "weft_rate_limit_clients_capacity %zu\n", cap);
    weft_stats_write_header(f, "weft_rate_limit_evictions_total", "counter",
                            "Clients dropped from the full table with a bucket not yet refilled.");
    fprintf(f, "weft_rate_limit_evictions_total %llu\n", (unsigned long long)evicted);
}
