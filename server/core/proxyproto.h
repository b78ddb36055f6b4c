/*
 * The PROXY protocol (HAProxy's, versions 1 and 2) on a listener with
 * proxy_protocol = true: a load balancer writes the client's address in
 * front of the connection's first byte. weft reads it itself, before h2o
 * sees the socket (h2o's own reader knows only version 1 and passes a
 * connection without a header on as it is), so that the address is the
 * connection's peer for everything after, max_connections_per_ip included,
 * and a connection without a valid header is closed.
 */
#ifndef WEFT_PROXYPROTO_H
#define WEFT_PROXYPROTO_H

#include <stddef.h>
#include <sys/socket.h>

struct weft_conn;

/* The longest header accepted: v1 is at most 107 bytes; v2 carries TLVs
 * (at most 65535 by its length field) of which weft reads none. */
#define WEFT_PROXYPROTO_MAX 4096

/**
 * Parses the header at the start of `buf`. Returns its length (> 0), 0 when
 * more bytes are needed, -1 when it is not a valid PROXY header. On success
 * *salen is 0 when the header names no address (v1 UNKNOWN, v2 LOCAL, a
 * family other than TCP/UDP over IPv4/IPv6): the socket's own peer stands.
 */
long weft_proxyproto_parse(const unsigned char *buf, size_t len, struct sockaddr_storage *sa, socklen_t *salen);

/**
 * Reads the header of the accepted connection `c` (loop thread), within
 * `timeout_ms`, then calls done(c, 0) with the peer set from it (the bytes
 * after it stay in the socket's input for h2o), or done(c, -1) on a bad or
 * missing header, a close or the timeout; on -1 `c`'s socket is still open
 * and the callee closes it.
 */
void weft_proxyproto_read(struct weft_conn *c, unsigned timeout_ms, void (*done)(struct weft_conn *c, int rc));

#endif
