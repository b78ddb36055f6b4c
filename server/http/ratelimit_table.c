#include "http/ratelimit_table.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define WAYS 8

typedef struct entry {
    uint8_t key[16];
    uint32_t id; /* 0: free */
    _Atomic uint64_t tat; /* GCRA: when its bucket is full again; from then on it carries nothing */
    uint64_t used_ns;     /* last use, for the least recently used */
} entry;

typedef struct set {
    pthread_mutex_t mu;
    entry e[WAYS];
} set;

static set *_Atomic sets; /* published once, after n_sets */
static size_t n_sets;
static uint64_t seed[2];
static atomic_size_t used;
static atomic_uint_fast64_t evicted;
static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;

int weft_rl_table_init(size_t capacity)
{
    pthread_mutex_lock(&init_mu);
    if (sets == NULL) {
        size_t n = (capacity + WAYS - 1) / WAYS;
        /* The pages stay untouched, and so out of the resident set, until
         * clients come: a large cap costs nothing on an idle server. */
        set *s = calloc(n, sizeof(*s));
        if (s != NULL) {
            /* Adaptive: a holder runs a few dozen instructions, so a waiter
             * spins a little before it sleeps in the kernel (one hot client
             * on every loop would otherwise pay a futex call per request). */
            pthread_mutexattr_t a;
            pthread_mutexattr_init(&a);
            pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
            for (size_t i = 0; i < n; i++)
                pthread_mutex_init(&s[i].mu, &a);
            pthread_mutexattr_destroy(&a);
            if (getrandom(seed, sizeof(seed), 0) != sizeof(seed))
                seed[0] = (uint64_t)(uintptr_t)s ^ 0x9e3779b97f4a7c15ull, seed[1] = (uint64_t)n * 0xbf58476d1ce4e5b9ull;
            n_sets = n;
            atomic_store_explicit(&sets, s, memory_order_release);
        }
    }
    int rc = sets != NULL ? 0 : -1;
    pthread_mutex_unlock(&init_mu);
    return rc;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Keyed, so that addresses cannot be chosen to crowd one set out of its clients. */
static size_t set_of(uint32_t id, const uint8_t key[16])
{
    uint64_t a, b;
    memcpy(&a, key, 8);
    memcpy(&b, key + 8, 8);
    uint64_t h = mix(a ^ seed[0]);
    h = mix(h ^ b ^ seed[1]);
    h = mix(h ^ id);
    return (size_t)(h % n_sets);
}

void weft_rl_take(_Atomic uint64_t *tat, const weft_rl_rate *r, uint64_t now_ns, weft_rl_verdict *v)
{
    uint64_t old = atomic_load_explicit(tat, memory_order_relaxed), next;
    for (;;) {
        uint64_t t = old > now_ns ? old : now_ns; /* a full bucket starts from now */
        if (t - now_ns > r->tolerance_ns) {
            v->allowed = 0;
            v->remaining = 0;
            v->wait_ns = t - now_ns - r->tolerance_ns;
            return;
        }
        next = t + r->interval_ns;
        if (atomic_compare_exchange_weak_explicit(tat, &old, next, memory_order_relaxed, memory_order_relaxed))
            break;
    }
    v->allowed = 1;
    v->wait_ns = 0;
    uint64_t ahead = next - now_ns; /* <= tolerance + interval */
    v->remaining = (r->tolerance_ns + r->interval_ns - ahead) / r->interval_ns;
}

void weft_rl_table_take(uint32_t id, const uint8_t key[16], const weft_rl_rate *r, uint64_t now_ns,
                        weft_rl_verdict *v)
{
    set *s = &atomic_load_explicit(&sets, memory_order_acquire)[set_of(id, key)];
    pthread_mutex_lock(&s->mu);
    entry *hit = NULL, *free_e = NULL, *full = NULL, *oldest = NULL;
    for (int i = 0; i < WAYS; i++) {
        entry *e = &s->e[i];
        if (e->id == id && memcmp(e->key, key, 16) == 0) {
            hit = e;
            break;
        }
        if (e->id == 0) {
            if (free_e == NULL)
                free_e = e;
            continue;
        }
        if (full == NULL && atomic_load_explicit(&e->tat, memory_order_relaxed) <= now_ns)
            full = e;
        if (oldest == NULL || e->used_ns < oldest->used_ns)
            oldest = e;
    }
    if (hit == NULL) {
        hit = free_e != NULL ? free_e : full != NULL ? full : oldest;
        if (free_e != NULL)
            atomic_fetch_add_explicit(&used, 1, memory_order_relaxed);
        else if (full == NULL)
            atomic_fetch_add_explicit(&evicted, 1, memory_order_relaxed);
        memcpy(hit->key, key, 16);
        hit->id = id;
        atomic_store_explicit(&hit->tat, 0, memory_order_relaxed);
    }
    hit->used_ns = now_ns;
    weft_rl_take(&hit->tat, r, now_ns, v);
    pthread_mutex_unlock(&s->mu);
}

void weft_rl_table_stats(size_t *u, size_t *capacity, uint64_t *ev)
{
    *u = atomic_load_explicit(&used, memory_order_relaxed);
    *capacity = atomic_load_explicit(&sets, memory_order_acquire) != NULL ? n_sets * WAYS : 0;
    *ev = atomic_load_explicit(&evicted, memory_order_relaxed);
}
