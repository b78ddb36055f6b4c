#include "http/abuse.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

#include "base/log.h"
#include "base/stats.h"
#include "base/timer.h"
#include "core/loop.h"
#include "reload/generation.h"

/* The connection's budget, in its admission record (weft_conn.ext): it lives
 * and dies with the connection, so no table can fill up and let a new
 * connection go unaccounted. */
typedef struct budget {
    uint64_t window_start_ns;
    uint32_t resets;
    uint32_t inflight;
    int closing;
} budget;

_Static_assert(sizeof(budget) <= sizeof(((weft_conn *)0)->ext), "weft_conn.ext holds the abuse budget");

static budget *budget_of(weft_conn *c) { return c != NULL ? (budget *)(void *)c->ext : NULL; }

static void close_conn(weft_loop *L, h2o_req_t *req, budget *b, const char *why, unsigned long long n,
                       const char *limit)
{
    b->closing = 1;
    char peer[INET6_ADDRSTRLEN + 8] = "?";
    struct sockaddr_storage sa;
    if (req->conn->callbacks->get_peername != NULL &&
        req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&sa) > 0) {
        const void *addr = sa.ss_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)&sa)->sin6_addr
                                                    : (const void *)&((struct sockaddr_in *)&sa)->sin_addr;
        inet_ntop(sa.ss_family, addr, peer, sizeof(peer));
    }
    weft_log_warn("closing the connection from %s: %llu %s (%s)", peer, n, why, limit);
    weft_stat_add(&L->stats->conn_abuse_closed, 1);
    /* HTTP/2: GOAWAY, h2o's graceful shutdown (streams in flight may end,
     * new ones are refused here without work, and h2o closes the connection
     * once they are gone). HTTP/1 has nothing to say it with: shutting the
     * socket down makes h2o's next read fail and h2o closes it itself
     * (closing h2o's socket under it would free what it still uses). */
    if (req->version >= 0x200 && req->conn->callbacks->request_shutdown != NULL) {
        req->conn->callbacks->request_shutdown(req->conn);
        return;
    }
    h2o_socket_t *sock = weft_h2o_req_socket(req);
    if (sock != NULL)
        shutdown(h2o_socket_get_fd(sock), SHUT_RDWR);
}

int weft_abuse_request_start(weft_loop *L, h2o_req_t *req, weft_conn *c, uint64_t now)
{
    (void)now;
    const weft_config *cfg = weft_generation_of_loop(L)->cfg;
    budget *b = budget_of(c);
    if (b == NULL)
        return -1; /* fail closed: a request weft cannot account is not served */
    if (b->closing)
        return -1;
    b->inflight++;
    if (b->inflight > (uint32_t)cfg->limits.max_inflight_per_conn) {
        close_conn(L, req, b, "requests in flight on one connection", b->inflight, "limits.max_inflight_per_conn");
        b->inflight--;
        return -1;
    }
    return 0;
}

void weft_abuse_request_end(weft_conn *c)
{
    budget *b = budget_of(c);
    if (b != NULL && b->inflight > 0)
        b->inflight--;
}

void weft_abuse_reset(weft_loop *L, h2o_req_t *req)
{
    if (L == NULL || weft_generation_of_loop(L) == NULL)
        return; /* a loop tearing down frees its streams: no budget to keep */
    const weft_config *cfg = weft_generation_of_loop(L)->cfg;
    uint64_t now = weft_now_ns(), window = (uint64_t)cfg->limits.reset_window_ms * 1000000u;
    if (window == 0)
        return;
    budget *b = budget_of(weft_conn_of(weft_h2o_req_socket(req)));
    if (b == NULL || b->closing)
        return;
    /* Halved, not zeroed, per window: a steady stream of resets just under
     * the budget per window still adds up, a burst long past fades. */
    while (now - b->window_start_ns > window && b->resets > 0) {
        b->window_start_ns += window;
        b->resets /= 2;
    }
    if (now - b->window_start_ns > window)
        b->window_start_ns = now;
    if (++b->resets > (uint32_t)cfg->limits.max_resets)
        close_conn(L, req, b, "streams reset before their response", b->resets, "limits.max_resets");
}
