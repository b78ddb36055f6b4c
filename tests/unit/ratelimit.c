/*
 * Tests for server/http/ratelimit_table.c (GCRA buckets, the fixed-size
 * client table shared by threads), server/base/cidr.c and the PROXY header
 * parser of server/core/proxyproto.c: the arithmetic the integration suites
 * only see through whole requests.
 */
#include "base/cidr.h"
#include "core/proxyproto.h"
#include "http/ratelimit_table.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>

#define S 1000000000ull

Test(ratelimit_unit, gcra_lets_burst_through_then_one_per_interval)
{
    _Atomic uint64_t tat = 0;
    weft_rl_rate r = {.interval_ns = S, .tolerance_ns = 2 * S}; /* 1/s, burst 3 */
    weft_rl_verdict v;
    uint64_t now = 100 * S;
    for (int i = 0; i < 3; i++) {
        weft_rl_take(&tat, &r, now, &v);
        cr_assert(v.allowed, "request %d", i);
        cr_assert_eq(v.remaining, (uint64_t)(2 - i));
    }
    weft_rl_take(&tat, &r, now, &v);
    cr_assert(!v.allowed);
    cr_assert_eq(v.wait_ns, S);
    weft_rl_take(&tat, &r, now + S - 1, &v);
    cr_assert(!v.allowed);
    weft_rl_take(&tat, &r, now + S, &v);
    cr_assert(v.allowed);
    /* A long quiet spell refills to the burst, never beyond. */
    for (int i = 0; i < 3; i++) {
        weft_rl_take(&tat, &r, now + 1000 * S, &v);
        cr_assert(v.allowed);
    }
    weft_rl_take(&tat, &r, now + 1000 * S, &v);
    cr_assert(!v.allowed);
}

static uint8_t *key_of(uint32_t n, uint8_t k[16])
{
    memset(k, 0, 16);
    memcpy(k, &n, 4);
    return k;
}

Test(ratelimit_unit, table_is_bounded_and_keeps_recent_clients)
{
    cr_assert_eq(weft_rl_table_init(64), 0);
    cr_assert_eq(weft_rl_table_init(1 << 20), 0, "a second init keeps the first table");
    size_t used, cap;
    uint64_t ev;
    weft_rl_table_stats(&used, &cap, &ev);
    cr_assert_eq(cap, 64);
    weft_rl_rate r = {.interval_ns = 3600 * S, .tolerance_ns = 0}; /* 1 an hour */
    weft_rl_verdict v;
    uint8_t k[16];
    uint64_t now = 10 * S;
    /* The regular client between every new one: it stays the most recent of its set. */
    weft_rl_table_take(1, key_of(0xffffffff, k), &r, now, &v);
    cr_assert(v.allowed);
    for (uint32_t i = 0; i < 10000; i++) {
        weft_rl_table_take(1, key_of(i, k), &r, now + i + 1, &v);
        cr_assert(v.allowed, "new client %u refused", i);
        weft_rl_table_take(1, key_of(0xffffffff, k), &r, now + i + 1, &v);
        cr_assert(!v.allowed, "the regular client was forgotten after %u others", i);
    }
    weft_rl_table_stats(&used, &cap, &ev);
    cr_assert_eq(used, 64);
    cr_assert_gt(ev, 0);
    /* Another limit id is another bucket for the same address. */
    weft_rl_table_take(2, key_of(0xffffffff, k), &r, now + 20000, &v);
    cr_assert(v.allowed);
}

typedef struct {
    int allowed;
} counter;

static void *hammer(void *arg)
{
    counter *c = arg;
    weft_rl_rate r = {.interval_ns = 3600 * S, .tolerance_ns = 999 * 3600 * S}; /* burst 1000 */
    uint8_t k[16];
    for (int i = 0; i < 5000; i++) {
        weft_rl_verdict v;
        weft_rl_table_take(7, key_of(42, k), &r, 5 * S, &v);
        c->allowed += v.allowed;
    }
    return NULL;
}

Test(ratelimit_unit, threads_share_one_bucket_exactly)
{
    cr_assert_eq(weft_rl_table_init(64), 0);
    pthread_t t[4];
    counter c[4] = {{0}};
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, hammer, &c[i]);
    int total = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        total += c[i].allowed;
    }
    cr_assert_eq(total, 1000, "%d let through of a burst of 1000", total);
}

Test(ratelimit_unit, cidr_ranges)
{
    weft_cidr c[3];
    char why[160];
    cr_assert_eq(weft_cidr_parse("10.0.0.0/8", &c[0], why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(weft_cidr_parse("2001:db8::/32", &c[1], why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(weft_cidr_parse("::1", &c[2], why, sizeof(why)), 0, "%s", why);
    uint8_t a[16];
    const char *in[] = {"10.255.1.2", "::ffff:10.0.0.1", "2001:db8:ffff::1", "::1"};
    const char *out[] = {"11.0.0.1", "2001:db9::1", "::2", "0.0.0.0"};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(weft_addr_parse(in[i], strlen(in[i]), a), 0);
        cr_assert(weft_cidr_match(c, 3, a), "%s", in[i]);
        cr_assert_eq(weft_addr_parse(out[i], strlen(out[i]), a), 0);
        cr_assert(!weft_cidr_match(c, 3, a), "%s", out[i]);
    }
    cr_assert_eq(weft_cidr_parse("0.0.0.0/0", &c[0], why, sizeof(why)), 0);
    cr_assert_eq(weft_addr_parse("1.2.3.4", 7, a), 0);
    cr_assert(weft_cidr_match(c, 1, a));
    const char *bad[] = {"10.0.0.0/33", "10.0.0.1/8", "banana", "10.0.0.0/", "10.0.0.0/8x", "::1/129", "", "1.2.3.4/-1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_neq(weft_cidr_parse(bad[i], &c[0], why, sizeof(why)), 0, "%s accepted", bad[i]);
}

static long parse(const char *s, size_t n, struct sockaddr_storage *sa, socklen_t *len)
{
    return weft_proxyproto_parse((const unsigned char *)s, n, sa, len);
}

Test(ratelimit_unit, proxy_header_v1_prefixes_are_incomplete_never_wrong)
{
    const char line[] = "PROXY TCP4 192.0.2.1 198.51.100.1 56324 443\r\nGET";
    size_t full = sizeof(line) - 1 - 3;
    struct sockaddr_storage sa;
    socklen_t len;
    for (size_t n = 0; n < full; n++)
        cr_assert_eq(parse(line, n, &sa, &len), 0, "prefix of %zu bytes", n);
    cr_assert_eq(parse(line, sizeof(line) - 1, &sa, &len), (long)full);
    cr_assert_eq(len, sizeof(struct sockaddr_in));
    struct sockaddr_in *in = (struct sockaddr_in *)&sa;
    cr_assert_eq(ntohs(in->sin_port), 56324);
    cr_assert_eq(parse("GET / HTTP/1.1\r\n", 16, &sa, &len), -1);
    cr_assert_eq(parse("PROXY TCP5 1.2.3.4 1.2.3.4 1 1\r\n", 32, &sa, &len), -1);
    cr_assert_eq(parse("PROXY TCP4  1.2.3.4 1.2.3.4 1 1\r\n", 33, &sa, &len), -1);
    cr_assert_eq(parse("PROXY TCP4 1.2.3.4 1.2.3.4 1 65536\r\n", 36, &sa, &len), -1);
    cr_assert_eq(parse("PROXY TCP6 1.2.3.4 1.2.3.4 1 1\r\n", 32, &sa, &len), -1);
    cr_assert_eq(parse("PROXY UNKNOWN whatever\r\n", 24, &sa, &len), 24);
    cr_assert_eq(len, 0);
}

Test(ratelimit_unit, proxy_header_v2)
{
    unsigned char h[64] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a, 0x21, 0x11, 0, 12};
    inet_pton(AF_INET, "203.0.113.5", h + 16);
    inet_pton(AF_INET, "127.0.0.1", h + 20);
    h[24] = 0x12, h[25] = 0x34;
    struct sockaddr_storage sa;
    socklen_t len;
    for (size_t n = 0; n < 28; n++)
        cr_assert_eq(weft_proxyproto_parse(h, n, &sa, &len), 0, "prefix of %zu bytes", n);
    cr_assert_eq(weft_proxyproto_parse(h, 28, &sa, &len), 28);
    cr_assert_eq(ntohs(((struct sockaddr_in *)&sa)->sin_port), 0x1234);
    h[15] = 8; /* too short for its addresses */
    cr_assert_eq(weft_proxyproto_parse(h, 28, &sa, &len), -1);
    h[15] = 12;
    h[12] = 0x22; /* command 2 */
    cr_assert_eq(weft_proxyproto_parse(h, 28, &sa, &len), -1);
    h[12] = 0x20; /* LOCAL */
    cr_assert_eq(weft_proxyproto_parse(h, 28, &sa, &len), 28);
    cr_assert_eq(len, 0);
    h[3] = 'x';
    cr_assert_eq(weft_proxyproto_parse(h, 28, &sa, &len), -1);
}
