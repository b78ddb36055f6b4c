/*
 * Open client connections counted per client address, across every loop:
 * limits.max_connections_per_ip, for servers that face clients without a
 * proxy in front. Loops are threads, so the table is shared, sharded by
 * address hash with one mutex per shard; it is touched once at accept and
 * once at close, never on the request path.
 */
#ifndef WEFT_PEERS_H
#define WEFT_PEERS_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

/** A socket address of the families a client connects over (sa_family AF_UNSPEC: none). */
typedef union weft_sockaddr {
    struct sockaddr sa;
    struct sockaddr_in in;
    struct sockaddr_in6 in6;
} weft_sockaddr;

/** A client address: IPv6, or IPv4 as ::ffff:a.b.c.d, so both forms of one IPv4 client count together. */
typedef struct weft_peer_key {
    uint8_t addr[16];
} weft_peer_key;

/** The key of an IPv4 or IPv6 socket address: 0, or -1 for any other family (not counted). */
int weft_peer_key_of(const struct sockaddr *sa, weft_peer_key *k);
/** The address as text (IPv4 dotted, IPv6 in RFC 5952 form). */
void weft_peer_key_format(const weft_peer_key *k, char *buf, size_t size);

typedef enum weft_peer_admit {
    WEFT_PEER_COUNTED,   /* admitted and counted: weft_peers_release() it exactly once */
    WEFT_PEER_REFUSED,   /* `limit` connections from this address are already open */
    WEFT_PEER_UNCOUNTED, /* admitted without counting (out of memory: fail open) */
} weft_peer_admit;

/** One more connection from `k`, unless `limit` (> 0) are already open. Any thread. */
weft_peer_admit weft_peers_acquire(const weft_peer_key *k, unsigned limit);
/** A counted connection from `k` closed. Any thread. */
void weft_peers_release(const weft_peer_key *k);
/** Connections counted for `k` now (tests). */
unsigned weft_peers_count(const weft_peer_key *k);
/** Frees every entry left (after the loops stopped; a clean stop leaves none). */
void weft_peers_free(void);

/** limits.max_connections_per_ip, read at each accept (0: off). Set at start and by each reload. */
void weft_peers_set_limit(unsigned limit);
unsigned weft_peers_limit(void);

#endif
