/*
 * cpu — pure CPU work: one random probable prime per request.
 *
 * Does the work of Java's `new BigInteger(bits, certainty, new Random())`:
 * a random `bits`-bit number (top bit set), searched upwards over odd numbers
 * to the first probable prime whose chance of being composite is at most
 * 2^-certainty. Answers "Hello_<n>"; the prime itself is not sent.
 *
 * Why GMP, what the test is and how it compares with Java: docs/PRIMES.md
 * (measured with bench/primes.c). In short: sieve by the odd primes below
 * 2^15, then mpz_probab_prime_p(n, ceil(certainty/2)), which in GMP >= 6.2 is
 * a Baillie-PSW test plus ceil(certainty/2) - 24 Miller-Rabin rounds when
 * that is positive (certainty > 48).
 *
 * GMP reports out-of-memory by aborting. We do not install our own allocator
 * with mp_set_memory_functions: it is process-wide and would change GMP for
 * the host and every other plugin linked against it.
 */
#include <gmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <weft/plugin.h>

#define CPU_MIN_BITS 16
#define CPU_MAX_BITS 16384
#define CPU_MAX_CERTAINTY 100

/*
 * Sieve primes stay below 2^15 = 2^(CPU_MIN_BITS - 1), the smallest possible
 * candidate: a candidate divisible by a sieve prime is then never that prime.
 * Sieving further than 2^15 saves little (bench/primes.c: 37 candidates reach
 * the probabilistic test per 1000-bit prime at 2^15, 40 at 2^14, 56 at 2^10).
 */
#define SIEVE_LIMIT 32767
_Static_assert(SIEVE_LIMIT < 1u << (CPU_MIN_BITS - 1), "a sieve prime could be a candidate");

/* Process-wide so that every route and thread draws distinct numbers. */
static atomic_uint_fast64_t hellos;

/* Odd primes below SIEVE_LIMIT in groups whose product fits an unsigned long,
 * so one multi-limb division yields the residues of a whole group. */
struct prime_group {
    unsigned long product;
    size_t end; /* one past the group's last index in primes[] */
};

/* Read-only after init: shared by every thread serving the route. */
struct cpu_route {
    unsigned bits;
    int reps; /* mpz_probab_prime_p reps: 4^-reps <= 2^-certainty */
    size_t nprimes, ngroups;
    uint16_t *primes;
    struct prime_group *groups;
};

/* ---- per-thread RNG ----
 *
 * xoshiro256**: fast, statistically sound, and plain data, so a thread-local
 * copy needs no destructor (a pthread key destructor would outlive dlclose).
 * Thread-local is safe here because nothing between two draws can yield: the
 * handlers never suspend, so a coroutine cannot move to another thread while
 * it uses the state. Like java.util.Random it is not for cryptography.
 */
static _Thread_local struct {
    uint64_t s[4];
    int seeded;
} rng;

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static void rng_seed(void)
{
    if (getrandom(rng.s, sizeof rng.s, 0) != (ssize_t)sizeof rng.s) {
        /* Only before the kernel's pool is ready, or under seccomp. Any
         * distinct per-thread seed will do: these are not secrets. */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t z = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ (uint64_t)(uintptr_t)&rng;
        for (int i = 0; i < 4; i++) { /* splitmix64 */
            z += 0x9e3779b97f4a7c15u;
            uint64_t x = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
            x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
            rng.s[i] = x ^ (x >> 31);
        }
    }
    if ((rng.s[0] | rng.s[1] | rng.s[2] | rng.s[3]) == 0)
        rng.s[0] = 1; /* the all-zero state is a fixed point */
    rng.seeded = 1;
}

static uint64_t rng_next(void)
{
    uint64_t *s = rng.s, r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

/* A uniformly random odd `bits`-bit number with the top bit set. */
static void random_odd(mpz_t out, unsigned bits)
{
    if (!rng.seeded)
        rng_seed();
    mp_size_t n = (mp_size_t)((bits + GMP_NUMB_BITS - 1) / GMP_NUMB_BITS);
    mp_limb_t *limbs = mpz_limbs_write(out, n);
    for (mp_size_t i = 0; i < n; i++)
        limbs[i] = (mp_limb_t)rng_next() & GMP_NUMB_MASK;
    mpz_limbs_finish(out, n);
    mpz_fdiv_r_2exp(out, out, bits);
    mpz_setbit(out, bits - 1);
    mpz_setbit(out, 0);
}

/* ---- the prime search ---- */

/*
 * window[j] = 1 when start + 2j has a factor below SIEVE_LIMIT. For 1000 bits
 * one pass costs about a tenth of a single Miller-Rabin round (38 us against
 * 330 us on the reference machine) and strikes out ~90 % of the odd
 * candidates before any modular exponentiation.
 */
static void sieve(const struct cpu_route *rt, const mpz_t start, unsigned char *window, size_t w)
{
    memset(window, 0, w);
    size_t i = 0;
    for (size_t g = 0; g < rt->ngroups; g++) {
        unsigned long rg = mpz_fdiv_ui(start, rt->groups[g].product);
        for (; i < rt->groups[g].end; i++) {
            unsigned long p = rt->primes[i], r = rg % p;
            /* start + 2j == 0 (mod p)  <=>  j == -r * 2^-1 (mod p), 2^-1 = (p+1)/2 */
            for (unsigned long j = (p - r) % p * ((p + 1) / 2) % p; j < w; j += p)
                window[j] = 1;
        }
    }
}

/*
 * Like Java's largePrime: a random start, then upwards through windows of
 * odd numbers; a fresh start only if the search runs past `bits` bits.
 * A window of 2*bits odd numbers holds a prime with probability ~1 - e^-5.8.
 */
/* The request was withdrawn (client gone, deadline): stop searching. */
static int withdrawn(const weft_req *req)
{
    return weft_req_host(req)->request->cancelled(req);
}

static int find_prime(const weft_req *req, const struct cpu_route *rt, mpz_t prime)
{
    size_t w = 2 * (size_t)rt->bits;
    unsigned char *window = malloc(w);
    if (window == NULL)
        return WEFT_ERROR;
    mpz_t start;
    mpz_init(start);
    random_odd(start, rt->bits);
    int rc = WEFT_OK;
    for (;;) {
        /* A withdrawn request stops between windows and between candidates:
         * a 1000-bit search tests ~40 candidates, so this is within ~1 ms. */
        if (withdrawn(req)) {
            rc = WEFT_CANCELLED;
            goto found;
        }
        sieve(rt, start, window, w);
        for (size_t j = 0; j < w; j++) {
            if (window[j])
                continue;
            mpz_add_ui(prime, start, 2 * (unsigned long)j);
            if (mpz_sizeinbase(prime, 2) != rt->bits)
                break;
            if (mpz_probab_prime_p(prime, rt->reps) > 0)
                goto found;
            if (withdrawn(req)) {
                rc = WEFT_CANCELLED;
                goto found;
            }
        }
        mpz_add_ui(start, start, 2 * (unsigned long)w);
        if (mpz_sizeinbase(start, 2) != rt->bits)
            random_odd(start, rt->bits);
    }
found:
    mpz_clear(start);
    free(window);
    return rc;
}

/* ---- plugin glue ---- */

static void free_route(struct cpu_route *rt)
{
    free(rt->primes);
    free(rt->groups);
    free(rt);
}

static int build_sieve_table(struct cpu_route *rt)
{
    unsigned char *composite = calloc(SIEVE_LIMIT + 1, 1);
    rt->primes = malloc(sizeof rt->primes[0] * (SIEVE_LIMIT / 2));
    rt->groups = malloc(sizeof rt->groups[0] * (SIEVE_LIMIT / 2));
    if (composite == NULL || rt->primes == NULL || rt->groups == NULL) {
        free(composite);
        return WEFT_ERROR;
    }
    for (unsigned p = 3; p <= SIEVE_LIMIT; p += 2) {
        if (composite[p])
            continue;
        rt->primes[rt->nprimes++] = (uint16_t)p;
        for (unsigned q = p * p; q <= SIEVE_LIMIT; q += 2 * p)
            composite[q] = 1;
    }
    free(composite);
    unsigned long product = 1;
    for (size_t i = 0; i < rt->nprimes; i++) {
        if (product > ~0ul / rt->primes[i]) {
            rt->groups[rt->ngroups++] = (struct prime_group){product, i};
            product = 1;
        }
        product *= rt->primes[i];
    }
    rt->groups[rt->ngroups++] = (struct prime_group){product, rt->nprimes};
    return WEFT_OK;
}

static weft_rc cpu_init(const weft_host *h, weft_init *ctx, void **state)
{
    long long bits = h->init->opt_int(ctx, "bits", 1000);
    long long certainty = h->init->opt_int(ctx, "certainty", 3);
    if (bits < CPU_MIN_BITS || bits > CPU_MAX_BITS) {
        h->init->error(ctx, "option bits = %lld is out of range %d..%d", bits, CPU_MIN_BITS, CPU_MAX_BITS);
        return WEFT_ERROR;
    }
    if (certainty < 1 || certainty > CPU_MAX_CERTAINTY) {
        h->init->error(ctx, "option certainty = %lld is out of range 1..%d", certainty, CPU_MAX_CERTAINTY);
        return WEFT_ERROR;
    }
    struct cpu_route *rt = calloc(1, sizeof *rt);
    if (rt == NULL || build_sieve_table(rt) != WEFT_OK) {
        if (rt != NULL)
            free_route(rt);
        h->init->error(ctx, "out of memory");
        return WEFT_ERROR;
    }
    rt->bits = (unsigned)bits;
    /* GMP documents a composite passing with probability < 4^-reps. */
    rt->reps = (int)(certainty + 1) / 2;
    *state = rt;
    return WEFT_OK;
}

static void cpu_fini(void *state)
{
    free_route(state);
}

static weft_rc work_and_respond(weft_req *req, const struct cpu_route *rt)
{
    const weft_host *h = weft_req_host(req);
    mpz_t prime;
    mpz_init(prime);
    int rc = find_prime(req, rt, prime);
    mpz_clear(prime);
    if (rc == WEFT_CANCELLED)
        return WEFT_CANCELLED; /* nobody is listening: no answer to build */
    if (rc != WEFT_OK) {
        h->response->error(req, 503, "out of memory");
        return WEFT_OK;
    }
    /* Drawn after the work, so the numbers count answers. Relaxed: only
     * uniqueness matters. */
    unsigned long long n = atomic_fetch_add_explicit(&hellos, 1, memory_order_relaxed) + 1;
    if (h->response->status(req, 200) != WEFT_OK || h->response->header(req, "content-type", "text/plain") != WEFT_OK ||
        h->response->writef(req, "Hello_%llu", n) != WEFT_OK)
        return WEFT_ERROR;
    return WEFT_OK;
}

/* `pool` runs this on a worker thread, `coroutine` on a loop thread inside a
 * coroutine; either way nothing yields, the CPU is simply busy. */
static weft_rc cpu_handle(weft_req *req, void *state)
{
    return work_and_respond(req, state);
}

/* `reactive`: there is nothing to wait for, so the work runs right here on
 * the loop thread and stalls that loop meanwhile; measuring exactly that cost
 * is the point of this plugin. */
static weft_rc cpu_handle_async(weft_req *req, void *state)
{
    return work_and_respond(req, state);
}

static const weft_plugin cpu_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "cpu",
    .version = "1.0.0",
    .description = "finds a random `bits`-bit probable prime (2^-certainty error), then answers Hello_<n>",
    .init = cpu_init,
    .fini = cpu_fini,
    .handle = cpu_handle,
    .handle_async = cpu_handle_async,
};

const weft_plugin *weft_plugin_entry(void)
{
    return &cpu_plugin;
}
