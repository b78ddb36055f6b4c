#include "core/peers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

typedef struct entry {
    struct entry *next;
    weft_peer_key key;
    unsigned count;
} entry;

/* Sharded so that loops accepting at once rarely wait for each other; an
 * entry lives only while its address has a connection open, so the table
 * holds at most max_connections entries. Chains stay short as long as
 * addresses hash evenly, hence the random seed: an attacker with many
 * addresses (an IPv6 prefix) cannot aim them all at one chain. */
#define SHARDS 64
#define BUCKETS 256 /* per shard */

static struct shard {
    pthread_mutex_t mu;
    entry *bucket[BUCKETS];
} shards[SHARDS];

static uint64_t seed;
static pthread_once_t seed_once = PTHREAD_ONCE_INIT;
static atomic_uint limit_now;

static void init_shards(void)
{
    if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
        seed = (uint64_t)(uintptr_t)&seed ^ 0x9e3779b97f4a7c15u; /* ASLR at least */
    for (int i = 0; i < SHARDS; i++)
        pthread_mutex_init(&shards[i].mu, NULL);
}

static uint64_t hash(const weft_peer_key *k)
{
    uint64_t a, b;
    memcpy(&a, k->addr, 8);
    memcpy(&b, k->addr + 8, 8);
    uint64_t h = (a ^ seed) * 0xff51afd7ed558ccdu;
    h = (h ^ (h >> 33) ^ b) * 0xc4ceb9fe1a85ec53u;
    return h ^ (h >> 29);
}

static struct shard *shard_of(const weft_peer_key *k, entry ***head)
{
    pthread_once(&seed_once, init_shards);
    uint64_t h = hash(k);
    struct shard *s = &shards[h % SHARDS];
    *head = &s->bucket[(h / SHARDS) % BUCKETS];
    return s;
}

static entry **find(entry **head, const weft_peer_key *k)
{
    while (*head != NULL && memcmp(&(*head)->key, k, sizeof(*k)) != 0)
        head = &(*head)->next;
    return head;
}

int weft_peer_key_of(const struct sockaddr *sa, weft_peer_key *k)
{
    memset(k, 0, sizeof(*k));
    if (sa->sa_family == AF_INET6) {
        memcpy(k->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        return 0;
    }
    if (sa->sa_family == AF_INET) {
        k->addr[10] = k->addr[11] = 0xff;
        memcpy(k->addr + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 0;
    }
    return -1;
}

void weft_peer_key_format(const weft_peer_key *k, char *buf, size_t size)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    int v4 = memcmp(k->addr, mapped, sizeof(mapped)) == 0;
    if (inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? k->addr + 12 : k->addr, buf, (socklen_t)size) == NULL && size > 0)
        buf[0] = '\0';
}

weft_peer_admit weft_peers_acquire(const weft_peer_key *k, unsigned limit)
{
    entry **head;
    struct shard *s = shard_of(k, &head);
    weft_peer_admit r = WEFT_PEER_COUNTED;
    pthread_mutex_lock(&s->mu);
    entry **at = find(head, k);
    if (*at == NULL) {
        entry *e = malloc(sizeof(*e));
        if (e != NULL) {
            *e = (entry){.next = NULL, .key = *k, .count = 1};
            *at = e;
        } else
            r = WEFT_PEER_UNCOUNTED;
    } else if ((*at)->count >= limit)
        r = WEFT_PEER_REFUSED;
    else
        (*at)->count++;
    pthread_mutex_unlock(&s->mu);
    return r;
}

void weft_peers_release(const weft_peer_key *k)
{
    entry **head;
    struct shard *s = shard_of(k, &head);
    pthread_mutex_lock(&s->mu);
    entry **at = find(head, k);
    if (*at != NULL && --(*at)->count == 0) {
        entry *e = *at;
        *at = e->next;
        free(e);
    }
    pthread_mutex_unlock(&s->mu);
}

unsigned weft_peers_count(const weft_peer_key *k)
{
    entry **head;
    struct shard *s = shard_of(k, &head);
    pthread_mutex_lock(&s->mu);
    entry **at = find(head, k);
    unsigned n = *at != NULL ? (*at)->count : 0;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void weft_peers_free(void)
{
    for (int i = 0; i < SHARDS; i++)
        for (int b = 0; b < BUCKETS; b++)
            while (shards[i].bucket[b] != NULL) {
                entry *e = shards[i].bucket[b];
                shards[i].bucket[b] = e->next;
                free(e);
            }
}

void weft_peers_set_limit(unsigned limit) { atomic_store_explicit(&limit_now, limit, memory_order_relaxed); }

unsigned weft_peers_limit(void) { return atomic_load_explicit(&limit_now, memory_order_relaxed); }
