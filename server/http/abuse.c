#include "http/abuse.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "base/log.h"
#include "base/stats.h"
#include "base/timer.h"
#include "core/loop.h"
#include "reload/generation.h"

/* Per-loop, per-connection budget. Connections have no close hook weft can
 * use, so an entry is keyed by h2o's connection id and simply reused once it
 * is idle and its window is over. A full table fails open: accounting stops
 * for new connections, serving does not. */
typedef struct budget {
    uint64_t conn_id; /* 0: free */
    uint64_t window_start_ns, last_ns;
    uint32_t resets;
    uint32_t inflight;
    int closing;
} budget;

#define TABLE_SIZE 4096 /* a power of two */
#define PROBES 16

/* Mapped per loop, not a static _Thread_local array: glibc zeroes every
 * thread's static TLS when it creates the thread, which made all 160 KiB
 * resident in each of the 200 pool threads too (33 MiB of a default
 * server's 42). A fresh anonymous mapping costs only the pages a loop's
 * connections hash to. */
static _Thread_local budget *table;

static int abuse_setup(weft_loop *L)
{
    (void)L;
    void *map = mmap(NULL, TABLE_SIZE * sizeof(budget), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return -1;
    table = map;
    return 0;
}

static void abuse_teardown(weft_loop *L)
{
    (void)L;
    if (table != NULL)
        munmap(table, TABLE_SIZE * sizeof(budget));
    table = NULL;
}

void weft_abuse_attach(void)
{
    static const weft_loop_hook hook = {.setup = abuse_setup, .teardown = abuse_teardown};
    weft_loop_add_hook(&hook);
}

static budget *find(uint64_t id, int create, uint64_t now, uint64_t window_ns)
{
    budget *spare = NULL;
    if (table == NULL)
        return NULL; /* not a loop thread: nothing to account */
    for (unsigned i = 0; i < PROBES; i++) {
        budget *b = &table[((id * 0x9e3779b97f4a7c15u >> 52) + i) & (TABLE_SIZE - 1)];
        if (b->conn_id == id)
            return b;
        int stale = b->conn_id == 0 || (b->inflight == 0 && now - b->last_ns > window_ns);
        if (spare == NULL && stale)
            spare = b;
    }
    if (!create || spare == NULL)
        return NULL;
    *spare = (budget){.conn_id = id, .window_start_ns = now, .last_ns = now};
    return spare;
}

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
    /* h2o 2.2.5 offers no way to send GOAWAY from outside, and closing its
     * socket under it would free what it still uses; shutting the socket
     * down makes h2o's next read fail, and h2o closes the connection and
     * frees its streams itself. */
    h2o_socket_t *sock = req->conn->callbacks->get_socket != NULL ? req->conn->callbacks->get_socket(req->conn) : NULL;
    if (sock != NULL)
        shutdown(h2o_socket_get_fd(sock), SHUT_RDWR);
}

int weft_abuse_request_start(weft_loop *L, h2o_req_t *req, uint64_t now)
{
    const weft_config *cfg = L->gen->cfg;
    budget *b = find(req->conn->id, 1, now, (uint64_t)cfg->limits.reset_window_ms * 1000000u);
    if (b == NULL)
        return 0;
    if (b->closing)
        return -1;
    b->inflight++;
    b->last_ns = now;
    if (b->inflight > (uint32_t)cfg->limits.max_inflight_per_conn) {
        close_conn(L, req, b, "requests in flight on one connection", b->inflight, "limits.max_inflight_per_conn");
        b->inflight--;
        return -1;
    }
    return 0;
}

void weft_abuse_request_end(uint64_t conn_id)
{
    budget *b = find(conn_id, 0, 0, UINT64_MAX);
    if (b != NULL && b->inflight > 0)
        b->inflight--;
}

void weft_abuse_reset(weft_loop *L, h2o_req_t *req)
{
    if (L == NULL || L->gen == NULL)
        return; /* a loop tearing down frees its streams: no budget to keep */
    const weft_config *cfg = L->gen->cfg;
    uint64_t now = weft_now_ns(), window = (uint64_t)cfg->limits.reset_window_ms * 1000000u;
    budget *b = find(req->conn->id, 1, now, window);
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
    b->last_ns = now;
    if (++b->resets > (uint32_t)cfg->limits.max_resets)
        close_conn(L, req, b, "streams reset before their response", b->resets, "limits.max_resets");
}
