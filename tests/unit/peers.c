/*
 * Tests for server/core/peers.c: connections counted per client address
 * (limits.max_connections_per_ip), IPv4 and IPv6, shared by threads.
 */
#include "core/peers.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The key of an address given as text (IPv6 when it holds a colon). */
static weft_peer_key key(const char *text)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    int six = strchr(text, ':') != NULL;
    ss.ss_family = six ? AF_INET6 : AF_INET;
    cr_assert_eq(inet_pton(ss.ss_family, text, six ? (void *)&in6->sin6_addr : (void *)&in->sin_addr), 1);
    weft_peer_key k;
    cr_assert_eq(weft_peer_key_of((struct sockaddr *)&ss, &k), 0);
    return k;
}

Test(peers, addresses_are_keys_and_ipv4_counts_the_same_in_either_form)
{
    char buf[64];
    weft_peer_key a = key("192.0.2.7"), mapped = key("::ffff:192.0.2.7"), b = key("2001:db8::7");
    cr_assert(memcmp(&a, &mapped, sizeof(a)) == 0, "an IPv4 client over an IPv6 socket is the same client");
    weft_peer_key_format(&a, buf, sizeof(buf));
    cr_assert_str_eq(buf, "192.0.2.7");
    weft_peer_key_format(&b, buf, sizeof(buf));
    cr_assert_str_eq(buf, "2001:db8::7");
    struct sockaddr_storage unix_sa = {.ss_family = AF_UNIX};
    cr_assert_eq(weft_peer_key_of((struct sockaddr *)&unix_sa, &a), -1, "no address, nothing to count");
}

Test(peers, the_cap_refuses_past_limit_and_a_release_frees_one_place)
{
    weft_peer_key a = key("198.51.100.1"), b = key("2001:db8::1");
    for (int i = 0; i < 3; i++)
        cr_assert_eq(weft_peers_acquire(&a, 3), WEFT_PEER_COUNTED);
    cr_assert_eq(weft_peers_acquire(&a, 3), WEFT_PEER_REFUSED);
    cr_assert_eq(weft_peers_count(&a), 3, "a refusal is not counted");
    cr_assert_eq(weft_peers_acquire(&b, 3), WEFT_PEER_COUNTED, "another address has its own count");
    weft_peers_release(&a);
    cr_assert_eq(weft_peers_acquire(&a, 3), WEFT_PEER_COUNTED);
    cr_assert_eq(weft_peers_acquire(&a, 3), WEFT_PEER_REFUSED);
    cr_assert_eq(weft_peers_acquire(&a, 5), WEFT_PEER_COUNTED, "a raised limit applies at once");
    for (int i = 0; i < 4; i++)
        weft_peers_release(&a);
    weft_peers_release(&b);
    cr_assert_eq(weft_peers_count(&a), 0);
    cr_assert_eq(weft_peers_count(&b), 0);
}

enum { THREADS = 4, ROUNDS = 20000, ADDRS = 50 };

static void *churn(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < ROUNDS; i++) {
        char text[32];
        snprintf(text, sizeof(text), "2001:db8::%x", (i + t) % ADDRS);
        struct sockaddr_in6 sa = {.sin6_family = AF_INET6};
        weft_peer_key k;
        if (inet_pton(AF_INET6, text, &sa.sin6_addr) != 1 || weft_peer_key_of((struct sockaddr *)&sa, &k) != 0)
            abort(); /* no Criterion assertions off the test's thread */
        if (weft_peers_acquire(&k, 1000000) == WEFT_PEER_COUNTED)
            weft_peers_release(&k);
    }
    return NULL;
}

Test(peers, threads_acquiring_and_releasing_leave_every_count_at_zero)
{
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        cr_assert_eq(pthread_create(&th[t], NULL, churn, (void *)(intptr_t)t), 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (int i = 0; i < ADDRS; i++) {
        char text[32];
        snprintf(text, sizeof(text), "2001:db8::%x", i);
        weft_peer_key k = key(text);
        cr_assert_eq(weft_peers_count(&k), 0, "%s", text);
    }
    weft_peers_free();
}
