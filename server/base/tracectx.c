#include "base/tracectx.h"

#include "base/hex.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>

/* `n` bytes from 2n lowercase hex digits; -1 on any other character. */
static int unhex(const char *s, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = weft_hex_value_lower(s[2 * i]), lo = weft_hex_value_lower(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static int all_zero(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != 0)
            return 0;
    return 1;
}

int weft_traceparent_parse(const char *s, size_t len, weft_traceparent *out)
{
    uint8_t version;
    if (len < WEFT_TRACEPARENT_LEN || unhex(s, &version, 1) != 0 || version == 0xff)
        return -1;
    /* Version 00 is exactly its length; a later one may carry more after a
     * '-', which weft cannot read and leaves out when it propagates. */
    if (version == 0 ? len != WEFT_TRACEPARENT_LEN : len > WEFT_TRACEPARENT_LEN && s[WEFT_TRACEPARENT_LEN] != '-')
        return -1;
    if (s[2] != '-' || s[35] != '-' || s[52] != '-')
        return -1;
    weft_traceparent p;
    if (unhex(s + 3, p.trace_id, 16) != 0 || unhex(s + 36, p.span_id, 8) != 0 || unhex(s + 53, &p.flags, 1) != 0)
        return -1;
    if (all_zero(p.trace_id, 16) || all_zero(p.span_id, 8))
        return -1;
    *out = p;
    return 0;
}

static int lcalpha(char c) { return c >= 'a' && c <= 'z'; }
static int digit(char c) { return c >= '0' && c <= '9'; }
static int keychar(char c) { return lcalpha(c) || digit(c) || c == '_' || c == '-' || c == '*' || c == '/'; }

/* simple-key, or tenant-id "@" system-id (Trace Context, section 3.3.1.3.1). */
static int key_valid(const char *k, size_t n)
{
    const char *at = memchr(k, '@', n);
    if (at == NULL) {
        if (n < 1 || n > 256 || !lcalpha(k[0]))
            return 0;
        for (size_t i = 1; i < n; i++)
            if (!keychar(k[i]))
                return 0;
        return 1;
    }
    size_t tn = (size_t)(at - k), sn = n - tn - 1;
    if (tn < 1 || tn > 241 || !(lcalpha(k[0]) || digit(k[0])) || sn < 1 || sn > 14 || !lcalpha(at[1]))
        return 0;
    for (size_t i = 1; i < tn; i++)
        if (!keychar(k[i]))
            return 0;
    for (size_t i = 2; i <= sn; i++)
        if (!keychar(at[i]))
            return 0;
    return 1;
}

/* 0*255(chr) nblk-chr: printable ASCII but ',' and '=', spaces inside only. */
static int value_valid(const char *v, size_t n)
{
    if (n < 1 || n > 256 || v[n - 1] == ' ')
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c < 0x20 || c > 0x7e || c == ',' || c == '=')
            return 0;
    }
    return 1;
}

int weft_tracestate_valid(const char *s, size_t len)
{
    if (len > WEFT_TRACESTATE_MAX_LEN)
        return 0;
    const char *keys[WEFT_TRACESTATE_MAX_MEMBERS];
    size_t key_len[WEFT_TRACESTATE_MAX_MEMBERS];
    size_t members = 0;
    const char *end = s + len;
    for (const char *p = s; p <= end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma != NULL ? comma : end;
        const char *a = p, *b = stop;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (a < b) { /* empty members are allowed and ignored */
            const char *eq = memchr(a, '=', (size_t)(b - a));
            if (eq == NULL || members == WEFT_TRACESTATE_MAX_MEMBERS)
                return 0;
            size_t kn = (size_t)(eq - a);
            if (!key_valid(a, kn) || !value_valid(eq + 1, (size_t)(b - eq - 1)))
                return 0;
            for (size_t i = 0; i < members; i++)
                if (key_len[i] == kn && memcmp(keys[i], a, kn) == 0)
                    return 0; /* a key appears once */
            keys[members] = a;
            key_len[members++] = kn;
        }
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    return 1;
}

void weft_trace_hex(char *out, const uint8_t *bytes, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}

void weft_traceparent_format(char *out, const uint8_t trace_id[16], const uint8_t span_id[8], uint8_t flags)
{
    memcpy(out, "00-", 3);
    weft_trace_hex(out + 3, trace_id, 16);
    out[35] = '-';
    weft_trace_hex(out + 36, span_id, 8);
    out[52] = '-';
    weft_trace_hex(out + 53, &flags, 1);
}

/* xoshiro256** (Blackman and Vigna): fast, and 256 bits of state seeded
 * from the kernel make ids that collide no more than random ones. */
static _Thread_local uint64_t rng[4];
static _Thread_local int rng_seeded;

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next(void)
{
    if (!rng_seeded) {
        if (getrandom(rng, sizeof(rng), 0) != (ssize_t)sizeof(rng)) {
            /* No entropy yet (early boot): the clock and the thread's own
             * address still make each thread's sequence its own. */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            rng[0] = (uint64_t)ts.tv_nsec ^ 0x9e3779b97f4a7c15ull;
            rng[1] = (uint64_t)ts.tv_sec;
            rng[2] = (uint64_t)(uintptr_t)&rng_seeded;
            rng[3] = 0x6a09e667f3bcc909ull;
        }
        rng_seeded = 1;
    }
    uint64_t result = rotl(rng[1] * 5, 7) * 9, t = rng[1] << 17;
    rng[2] ^= rng[0];
    rng[3] ^= rng[1];
    rng[1] ^= rng[2];
    rng[0] ^= rng[3];
    rng[2] ^= t;
    rng[3] = rotl(rng[3], 45);
    return result;
}

void weft_trace_random(uint8_t *out, size_t n)
{
    do {
        for (size_t i = 0; i < n; i += 8) {
            uint64_t v = next();
            memcpy(out + i, &v, n - i < 8 ? n - i : 8);
        }
    } while (all_zero(out, n));
}

double weft_trace_uniform(void) { return (double)(next() >> 11) * 0x1.0p-53; }
