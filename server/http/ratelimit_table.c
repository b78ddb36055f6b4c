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
    double tokens;
    uint64_t stamp_ns; /* last refill, which is also the last use */
    uint64_t full_ns;  /* when its bucket is full again: from then on it carries nothing */
} entry;

typedef struct set {
    atomic_flag lock;
    entry e[WAYS];
} set;

static set *sets;
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
            for (size_t i = 0; i < n; i++)
                atomic_flag_clear(&s[i].lock);
            if (getrandom(seed, sizeof(seed), 0) != sizeof(seed))
                seed[0] = (uint64_t)(uintptr_t)s ^ 0x9e3779b97f4a7c15ull, seed[1] = (uint64_t)n * 0xbf58476d1ce4e5b9ull;
            n_sets = n;
            atomic_thread_fence(memory_order_release);
            sets = s;
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

void weft_rl_bucket_take(double *tokens, uint64_t *stamp_ns, double rate_per_ns, double burst, uint64_t now_ns,
                         weft_rl_verdict *v)
{
    double t = *tokens;
    if (now_ns > *stamp_ns) {
        t += (double)(now_ns - *stamp_ns) * rate_per_ns;
        if (t > burst)
            t = burst;
        *stamp_ns = now_ns;
    }
    v->allowed = t >= 1.0;
    if (v->allowed)
        t -= 1.0;
    *tokens = t;
    v->remaining = t;
    v->wait_ns = v->allowed ? 0 : (uint64_t)((1.0 - t) / rate_per_ns) + 1;
    v->full_ns = (uint64_t)((burst - t) / rate_per_ns);
}

void weft_rl_table_take(uint32_t id, const uint8_t key[16], double rate_per_ns, double burst, uint64_t now_ns,
                        weft_rl_verdict *v)
{
    set *s = &sets[set_of(id, key)];
    while (atomic_flag_test_and_set_explicit(&s->lock, memory_order_acquire))
        __builtin_ia32_pause();
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
        if (full == NULL && now_ns >= e->full_ns)
            full = e;
        if (oldest == NULL || e->stamp_ns < oldest->stamp_ns)
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
        hit->tokens = burst;
        hit->stamp_ns = now_ns;
    }
    weft_rl_bucket_take(&hit->tokens, &hit->stamp_ns, rate_per_ns, burst, now_ns, v);
    hit->full_ns = now_ns + v->full_ns;
    atomic_flag_clear_explicit(&s->lock, memory_order_release);
}

void weft_rl_table_stats(size_t *u, size_t *capacity, uint64_t *ev)
{
    *u = atomic_load_explicit(&used, memory_order_relaxed);
    *capacity = n_sets * WAYS;
    *ev = atomic_load_explicit(&evicted, memory_order_relaxed);
}
