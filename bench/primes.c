/*
 * bench/primes.c — how long does one random probable prime take?
 *
 * Compares the ways weft's `cpu` plugin could do the work of Java's
 * `new BigInteger(bits, certainty, new Random())`: GMP (with its own BPSW
 * test, with plain Miller-Rabin rounds, with mpz_nextprime) and OpenSSL 3
 * libcrypto (BN_generate_prime_ex2; BN_check_prime and plain Miller-Rabin
 * rounds on BN_mod_exp_mont, both behind the same sieve the GMP variants use).
 * Results and the choice: docs/PRIMES.md. Standalone on purpose: it is not
 * part of the build.
 *
 *   gcc -O2 -std=gnu11 bench/primes.c -o /tmp/primes \
 *       $(pkg-config --cflags --libs gmp libcrypto)
 *   /tmp/primes [-n primes] [-b bits] [-c certainty] [-s sieve_limit] [-S seed] [method...]
 *
 * Every method that uses our RNG starts from the same seed, so the sieve
 * variants walk exactly the same candidates and differ only in the test.
 * Each produced number is re-checked (untimed) with mpz_probab_prime_p(p, 40)
 * and for its exact bit length.
 */
#include <gmp.h>
#include <openssl/bn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ---- RNG: xoshiro256**, the same generator the plugin uses ---- */

/*
 * Two streams: candidates come from `start_rng`, Miller-Rabin bases from
 * `base_rng`, so methods that draw bases still walk the same candidates.
 */
typedef struct rng {
    uint64_t s[4];
} rng;
static rng start_rng, base_rng;

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng *g)
{
    uint64_t *s = g->s, r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

static void rng_seed(rng *g, uint64_t seed)
{
    /* splitmix64 spreads one 64-bit seed over the 256-bit state */
    for (int i = 0; i < 4; i++) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        g->s[i] = z ^ (z >> 31);
    }
}

/* A uniformly random `bits`-bit odd number with the top bit set. */
static void random_odd(rng *g, mpz_t out, unsigned bits)
{
    uint64_t w[16384 / 64 + 2];
    size_t n = (bits + 63) / 64;
    for (size_t i = 0; i < n; i++)
        w[i] = rng_next(g);
    mpz_import(out, n, -1, sizeof w[0], 0, 0, w);
    mpz_fdiv_r_2exp(out, out, bits);
    mpz_setbit(out, bits - 1);
    mpz_setbit(out, 0);
}

/* ---- shared sieve ---- */

static unsigned *primes; /* odd primes below the sieve limit */
static size_t nprimes;
static unsigned long *group_prod; /* products of consecutive primes that fit a word */
static size_t *group_end;
static size_t ngroups;

static void sieve_init(unsigned limit)
{
    char *comp = calloc(limit + 1, 1);
    primes = malloc(sizeof *primes * (limit / 2 + 1));
    group_prod = malloc(sizeof *group_prod * (limit / 2 + 1));
    group_end = malloc(sizeof *group_end * (limit / 2 + 1));
    nprimes = ngroups = 0;
    for (unsigned p = 3; p <= limit; p += 2) {
        if (comp[p])
            continue;
        primes[nprimes++] = p;
        for (unsigned long q = (unsigned long)p * p; q <= limit; q += 2 * p)
            comp[q] = 1;
    }
    free(comp);
    unsigned long prod = 1;
    for (size_t i = 0; i < nprimes; i++) {
        if (prod > ~0ul / primes[i]) {
            group_prod[ngroups] = prod;
            group_end[ngroups++] = i;
            prod = 1;
        }
        prod *= primes[i];
    }
    if (prod > 1) {
        group_prod[ngroups] = prod;
        group_end[ngroups++] = nprimes;
    }
}

/*
 * Marks window[j] when start + 2j has a factor below the limit. `modw`
 * returns start mod a word so each library computes its own residues.
 */
static void sieve_window(unsigned char *window, size_t w, unsigned long (*modw)(const void *, unsigned long),
                         const void *start)
{
    memset(window, 0, w);
    size_t i = 0;
    for (size_t g = 0; g < ngroups; g++) {
        unsigned long rg = modw(start, group_prod[g]);
        for (; i < group_end[g]; i++) {
            unsigned long p = primes[i], r = rg % p;
            /* start + 2j == 0 (mod p)  <=>  j == -r * 2^-1 (mod p) */
            for (unsigned long j = (p - r) % p * ((p + 1) / 2) % p; j < w; j += p)
                window[j] = 1;
        }
    }
}

static unsigned long mpz_modw(const void *n, unsigned long d)
{
    return mpz_fdiv_ui(*(const mpz_t *)n, d);
}

static unsigned long bn_modw(const void *n, unsigned long d)
{
    return BN_mod_word(n, d);
}

/* ---- the methods ---- */

static unsigned g_bits = 1000, g_cert = 3;
static unsigned long g_tested; /* candidates reaching the probabilistic test */

static int mr_round(const mpz_t n, const mpz_t nm1, const mpz_t q, unsigned long k, mpz_t a, mpz_t y)
{
    mpz_powm(y, a, q, n);
    if (mpz_cmp_ui(y, 1) == 0 || mpz_cmp(y, nm1) == 0)
        return 1;
    for (unsigned long i = 1; i < k; i++) {
        mpz_powm_ui(y, y, 2, n);
        if (mpz_cmp(y, nm1) == 0)
            return 1;
        if (mpz_cmp_ui(y, 1) == 0)
            return 0;
    }
    return 0;
}

/* `rounds` Miller-Rabin rounds with uniformly random bases in [2, n-2]. */
static int own_mr(const mpz_t n, unsigned rounds)
{
    mpz_t nm1, q, a, y, r;
    mpz_inits(nm1, q, a, y, r, NULL);
    mpz_sub_ui(nm1, n, 1);
    unsigned long k = mpz_scan1(nm1, 0);
    mpz_fdiv_q_2exp(q, nm1, k);
    int ok = 1;
    for (unsigned i = 0; ok && i < rounds; i++) {
        random_odd(&base_rng, r, g_bits + 64); /* 64 spare bits make the reduction's bias negligible */
        mpz_sub_ui(y, n, 3);
        mpz_mod(a, r, y);
        mpz_add_ui(a, a, 2);
        ok = mr_round(n, nm1, q, k, a, y);
    }
    mpz_clears(nm1, q, a, y, r, NULL);
    return ok;
}

typedef int (*gmp_test_fn)(const mpz_t n);

static int test_bpsw(const mpz_t n)
{
    return mpz_probab_prime_p(n, (int)(g_cert + 1) / 2) > 0;
}

static int test_mr(const mpz_t n)
{
    return own_mr(n, (g_cert + 1) / 2);
}

static void gmp_sieve_search(mpz_t p, gmp_test_fn test)
{
    size_t w = 2 * (size_t)g_bits;
    unsigned char *window = malloc(w);
    mpz_t start;
    mpz_init(start);
    random_odd(&start_rng, start, g_bits);
    for (;;) {
        sieve_window(window, w, mpz_modw, &start);
        for (size_t j = 0; j < w; j++) {
            if (window[j])
                continue;
            mpz_add_ui(p, start, 2 * j);
            if (mpz_sizeinbase(p, 2) != g_bits)
                break;
            g_tested++;
            if (test(p))
                goto found;
        }
        mpz_add_ui(start, start, 2 * w);
        if (mpz_sizeinbase(start, 2) != g_bits)
            random_odd(&start_rng, start, g_bits);
    }
found:
    mpz_clear(start);
    free(window);
}

static void m_gmp_bpsw(mpz_t p)
{
    gmp_sieve_search(p, test_bpsw);
}

static void m_gmp_mr(mpz_t p)
{
    gmp_sieve_search(p, test_mr);
}

static void m_gmp_nextprime(mpz_t p)
{
    mpz_t start;
    mpz_init(start);
    do {
        random_odd(&start_rng, start, g_bits);
        mpz_nextprime(p, start);
    } while (mpz_sizeinbase(p, 2) != g_bits);
    mpz_clear(start);
}

static BN_CTX *bn_ctx;

static void bn_to_mpz(mpz_t out, const BIGNUM *b)
{
    unsigned char buf[16384 / 8 + 8];
    int len = BN_bn2bin(b, buf);
    mpz_import(out, (size_t)len, 1, 1, 0, 0, buf);
}

static void m_ossl_generate(mpz_t p)
{
    BIGNUM *b = BN_new();
    if (!BN_generate_prime_ex2(b, (int)g_bits, 0, NULL, NULL, NULL, bn_ctx))
        abort();
    bn_to_mpz(p, b);
    BN_free(b);
}

static void m_ossl_check(mpz_t p)
{
    size_t w = 2 * (size_t)g_bits;
    unsigned char *window = malloc(w), buf[16384 / 8 + 8];
    BIGNUM *start = BN_new(), *cand = BN_new();
    mpz_t s;
    mpz_init(s);
    random_odd(&start_rng, s, g_bits);
    size_t len;
    mpz_export(buf, &len, 1, 1, 0, 0, s);
    BN_bin2bn(buf, (int)len, start);
    for (;;) {
        sieve_window(window, w, bn_modw, start);
        for (size_t j = 0; j < w; j++) {
            if (window[j])
                continue;
            BN_copy(cand, start);
            BN_add_word(cand, 2 * j);
            if ((unsigned)BN_num_bits(cand) != g_bits)
                break;
            g_tested++;
            int r = BN_check_prime(cand, bn_ctx, NULL);
            if (r < 0)
                abort();
            if (r)
                goto found;
        }
        BN_add_word(start, 2 * w);
        if ((unsigned)BN_num_bits(start) != g_bits) {
            random_odd(&start_rng, s, g_bits);
            mpz_export(buf, &len, 1, 1, 0, 0, s);
            BN_bin2bn(buf, (int)len, start);
        }
    }
found:
    bn_to_mpz(p, cand);
    BN_free(start);
    BN_free(cand);
    mpz_clear(s);
    free(window);
}

/* `rounds` Miller-Rabin rounds on OpenSSL arithmetic, bases as in own_mr. */
static int ossl_mr(const BIGNUM *n, unsigned rounds)
{
    BN_CTX_start(bn_ctx);
    BIGNUM *nm1 = BN_CTX_get(bn_ctx), *q = BN_CTX_get(bn_ctx), *a = BN_CTX_get(bn_ctx), *y = BN_CTX_get(bn_ctx),
           *n3 = BN_CTX_get(bn_ctx);
    BN_MONT_CTX *mont = BN_MONT_CTX_new();
    if (n3 == NULL || mont == NULL || !BN_MONT_CTX_set(mont, n, bn_ctx))
        abort();
    BN_copy(nm1, n);
    BN_sub_word(nm1, 1);
    int k = 1;
    while (!BN_is_bit_set(nm1, k))
        k++;
    BN_rshift(q, nm1, k);
    BN_copy(n3, n);
    BN_sub_word(n3, 3);
    int ok = 1;
    mpz_t r;
    mpz_init(r);
    unsigned char buf[16384 / 8 + 16];
    for (unsigned i = 0; ok && i < rounds; i++) {
        size_t len;
        random_odd(&base_rng, r, g_bits + 64);
        mpz_export(buf, &len, 1, 1, 0, 0, r);
        BN_bin2bn(buf, (int)len, a);
        BN_mod(a, a, n3, bn_ctx);
        BN_add_word(a, 2);
        BN_mod_exp_mont(y, a, q, n, bn_ctx, mont);
        if (BN_is_one(y) || BN_cmp(y, nm1) == 0)
            continue;
        ok = 0;
        for (int j = 1; j < k; j++) {
            BN_mod_sqr(y, y, n, bn_ctx);
            if (BN_cmp(y, nm1) == 0) {
                ok = 1;
                break;
            }
            if (BN_is_one(y))
                break;
        }
    }
    mpz_clear(r);
    BN_MONT_CTX_free(mont);
    BN_CTX_end(bn_ctx);
    return ok;
}

static void m_ossl_mr(mpz_t p)
{
    size_t w = 2 * (size_t)g_bits;
    unsigned char *window = malloc(w), buf[16384 / 8 + 8];
    BN_CTX_start(bn_ctx);
    BIGNUM *start = BN_new(), *cand = BN_new();
    mpz_t s;
    mpz_init(s);
    random_odd(&start_rng, s, g_bits);
    size_t len;
    mpz_export(buf, &len, 1, 1, 0, 0, s);
    BN_bin2bn(buf, (int)len, start);
    for (;;) {
        sieve_window(window, w, bn_modw, start);
        for (size_t j = 0; j < w; j++) {
            if (window[j])
                continue;
            BN_copy(cand, start);
            BN_add_word(cand, 2 * j);
            if ((unsigned)BN_num_bits(cand) != g_bits)
                break;
            g_tested++;
            if (ossl_mr(cand, (g_cert + 1) / 2))
                goto found;
        }
        BN_add_word(start, 2 * w);
        if ((unsigned)BN_num_bits(start) != g_bits) {
            random_odd(&start_rng, s, g_bits);
            mpz_export(buf, &len, 1, 1, 0, 0, s);
            BN_bin2bn(buf, (int)len, start);
        }
    }
found:
    bn_to_mpz(p, cand);
    BN_free(start);
    BN_free(cand);
    BN_CTX_end(bn_ctx);
    mpz_clear(s);
    free(window);
}

static const struct method {
    const char *name;
    void (*run)(mpz_t p);
    int sieved; /* uses our sieve: report candidates tested */
    const char *what;
} methods[] = {
    {"gmp-bpsw", m_gmp_bpsw, 1, "sieve + mpz_probab_prime_p(n, ceil(c/2)) [BPSW, + MR only if c > 48]"},
    {"gmp-mr", m_gmp_mr, 1, "sieve + ceil(c/2) own Miller-Rabin rounds, random bases (mpz_powm)"},
    {"gmp-nextprime", m_gmp_nextprime, 0, "mpz_nextprime(random start) [GMP's own sieve, BPSW + 1 MR]"},
    {"ossl-generate", m_ossl_generate, 0, "BN_generate_prime_ex2 [128-prime sieve, 64 MR rounds, top 2 bits set]"},
    {"ossl-check", m_ossl_check, 1, "sieve + BN_check_prime [trial division + 64 MR rounds]"},
    {"ossl-mr", m_ossl_mr, 1, "sieve + ceil(c/2) own Miller-Rabin rounds on BN_mod_exp_mont, random bases"},
};

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    unsigned count = 200, limit = (1u << 15) - 1;
    uint64_t seed = 0;
    int opt, have_seed = 0;
    while ((opt = getopt(argc, argv, "n:b:c:s:S:")) != -1) {
        switch (opt) {
        case 'n': count = (unsigned)atoi(optarg); break;
        case 'b': g_bits = (unsigned)atoi(optarg); break;
        case 'c': g_cert = (unsigned)atoi(optarg); break;
        case 's': limit = (unsigned)atoi(optarg); break;
        case 'S': seed = strtoull(optarg, NULL, 0), have_seed = 1; break;
        default:
            fprintf(stderr, "usage: %s [-n primes] [-b bits] [-c certainty] [-s sieve_limit] [-S seed] [method...]\n", argv[0]);
            return 2;
        }
    }
    if (g_bits < 16 || g_bits > 16384 || g_cert < 1 || count < 1 || limit < 3 || limit >= 1u << 15) {
        fprintf(stderr, "need 16 <= bits <= 16384, certainty >= 1, primes >= 1, 3 <= sieve_limit < 32768\n");
        return 2;
    }
    if (!have_seed && getrandom(&seed, sizeof seed, 0) != sizeof seed) {
        perror("getrandom");
        return 1;
    }
    sieve_init(limit);
    bn_ctx = BN_CTX_new();
    printf("%u-bit probable primes, certainty %u, %u primes per method, sieve primes < %u (%zu), seed %#llx\n",
           g_bits, g_cert, count, limit, nprimes, (unsigned long long)seed);
    printf("%-14s %10s %10s %10s %9s  %s\n", "method", "mean_us", "median_us", "p90_us", "tested", "what");

    double *t = malloc(sizeof *t * count);
    mpz_t p;
    mpz_init(p);
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        if (optind < argc) {
            int wanted = 0;
            for (int a = optind; a < argc; a++)
                wanted |= strcmp(argv[a], methods[m].name) == 0;
            if (!wanted)
                continue;
        }
        rng_seed(&start_rng, seed);
        rng_seed(&base_rng, ~seed);
        g_tested = 0;
        double sum = 0;
        unsigned bad = 0;
        for (unsigned i = 0; i < count; i++) {
            double t0 = now_us();
            methods[m].run(p);
            t[i] = now_us() - t0;
            sum += t[i];
            if (mpz_sizeinbase(p, 2) != g_bits || !mpz_probab_prime_p(p, 40))
                bad++;
        }
        qsort(t, count, sizeof *t, cmp_double);
        char tested[16] = "-";
        if (methods[m].sieved)
            snprintf(tested, sizeof tested, "%.1f", (double)g_tested / count);
        printf("%-14s %10.0f %10.0f %10.0f %9s  %s\n", methods[m].name, sum / count, t[count / 2],
               t[count * 9 / 10], tested, methods[m].what);
        if (bad)
            printf("  !! %u of %u results failed the re-check\n", bad, count);
    }
    mpz_clear(p);
    free(t);
    BN_CTX_free(bn_ctx);
    return 0;
}
