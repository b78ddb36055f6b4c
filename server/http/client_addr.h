/*
 * Who the client is when a proxy stands in front: on a listener with
 * trusted_proxies, a request whose peer (the socket's, or the PROXY
 * header's) is one of them is taken to come from the address its
 * X-Forwarded-For (or, with client_header = "Forwarded", its RFC 7239
 * Forwarded) header names, walked right to left past the trusted hops
 * (nginx's real_ip_recursive). X-Forwarded-Proto (Forwarded's proto=) from
 * such a peer sets the scheme.
 * From any other peer the headers change nothing.
 */
#ifndef WEFT_CLIENT_ADDR_H
#define WEFT_CLIENT_ADDR_H

#include <stdint.h>

#include "base/h2o_glue.h"
#include "config/config.h"
#include "core/peers.h"

struct weft_conn;

typedef struct weft_client {
    weft_sockaddr sa; /* the client: AF_UNSPEC when the connection has no IP peer */
    uint8_t key[16];  /* sa as 16 bytes (IPv4 as ::ffff:a.b.c.d), the rate limits' key */
    int from_header;  /* sa came from a Forwarded / X-Forwarded-For header */
} weft_client;

/**
 * Fills `out` for `req` on the connection `conn` (its address is asked once
 * per connection; NULL: asked of h2o) accepted on listener `lc` (NULL: no
 * trusted proxies, e.g. the admin listener). When the address came from
 * a header it is also set as the request's "weft-client" environment entry
 * (the access log's %h) and the scheme from X-Forwarded-Proto is applied.
 * Loop thread.
 */
void weft_client_addr(h2o_req_t *req, struct weft_conn *conn, const weft_listen_cfg *lc, weft_client *out);

#endif
