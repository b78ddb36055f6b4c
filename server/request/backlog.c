/*
 * What clients have not read yet. A charge lives in its h2o request's pool
 * and sits in its loop's queue, oldest unread first, while it holds bytes:
 * the queue's head is the slowest reader of the loop, which is what the
 * process-wide bound closes first. The per-connection sum is found by walking
 * the loop's queue: it only holds answers not yet written, a handful on a
 * loop whose clients read.
 */
#include "request/backlog.h"

#include <stdatomic.h>
#include <sys/socket.h>

#include "base/log.h"
#include "base/timer.h"
#include "core/loop.h"

#define DEFAULT_PER_CONN (4u * 1024 * 1024)
#define DEFAULT_TOTAL (64u * 1024 * 1024)

struct weft_charge {
    h2o_linklist_t link; /* in the loop's queue while bytes > 0 */
    h2o_req_t *req;
    size_t bytes, per_conn, total;
    uint64_t since_ns; /* when its bytes were queued */
    int closed;
};

static _Thread_local h2o_linklist_t queue;
static atomic_size_t queued_bytes;
static atomic_size_t total_limit = DEFAULT_TOTAL; /* the last route's: reloads change it */
static atomic_uint_fast64_t closed_count;

static h2o_linklist_t *loop_queue(void)
{
    if (queue.next == NULL)
        h2o_linklist_init_anchor(&queue);
    return &queue;
}

static void unlink_charge(weft_charge *c)
{
    if (h2o_linklist_is_linked(&c->link))
        h2o_linklist_unlink(&c->link);
    atomic_fetch_sub_explicit(&queued_bytes, c->bytes, memory_order_relaxed);
    c->bytes = 0;
}

static void on_dispose(void *p) { unlink_charge(p); }

weft_charge *weft_backlog_new(h2o_req_t *req, size_t per_conn, size_t total)
{
    weft_charge *c = h2o_mem_alloc_shared(&req->pool, sizeof(*c), on_dispose);
    *c = (weft_charge){.req = req, .per_conn = per_conn ? per_conn : DEFAULT_PER_CONN,
                       .total = total ? total : DEFAULT_TOTAL};
    return c;
}

/* Its bytes are given back at once: the connection goes, and with it what
 * h2o holds for it, on h2o's next turn. Every charge of the connection goes
 * with it (HTTP/2 streams share it). */
static void close_slow(weft_charge *c, const char *why)
{
    h2o_conn_t *conn = c->req->conn;
    h2o_linklist_t *q = loop_queue();
    for (h2o_linklist_t *n = q->next, *next; n != q; n = next) {
        next = n->next;
        weft_charge *o = H2O_STRUCT_FROM_MEMBER(weft_charge, link, n);
        if (o->req->conn == conn) {
            o->closed = 1;
            unlink_charge(o);
        }
    }
    c->closed = 1;
    unlink_charge(c);
    atomic_fetch_add_explicit(&closed_count, 1, memory_order_relaxed);
    static _Atomic uint64_t last;
    uint64_t now = weft_now_ns(), prev = atomic_load(&last);
    if (now - prev > 10000000000ull && atomic_compare_exchange_strong(&last, &prev, now))
        weft_log_warn("closing a connection whose client does not read its answers (%s); more are counted "
                      "(weft_slow_reader_closed_total), logged at most every 10 s", why);
    /* Not a GOAWAY: a client that does not read would never see it. Shutting
     * the socket down makes h2o's next write or read fail, and h2o closes
     * the connection itself (closing its socket under it would free what it
     * still uses). */
    h2o_socket_t *sock = weft_h2o_req_socket(c->req);
    if (sock != NULL)
        shutdown(h2o_socket_get_fd(sock), SHUT_RDWR);
}

static size_t conn_unread(const weft_charge *c)
{
    size_t n = 0;
    h2o_linklist_t *q = loop_queue();
    for (h2o_linklist_t *l = q->next; l != q; l = l->next) {
        const weft_charge *o = H2O_STRUCT_FROM_MEMBER(weft_charge, link, l);
        if (o != c && o->req->conn == c->req->conn)
            n += o->bytes;
    }
    return n;
}

/* Past the total: this loop's oldest unread answers go first, never `keep`
 * (the answer being handed over: its client may well read it). */
static void enforce_total(size_t limit, const weft_charge *keep, uint64_t queued_before)
{
    h2o_linklist_t *q = loop_queue();
    while (atomic_load_explicit(&queued_bytes, memory_order_relaxed) > limit) {
        h2o_linklist_t *n = q->next;
        while (n != q && H2O_STRUCT_FROM_MEMBER(weft_charge, link, n) == keep)
            n = n->next;
        if (n == q || H2O_STRUCT_FROM_MEMBER(weft_charge, link, n)->since_ns > queued_before)
            return;
        close_slow(H2O_STRUCT_FROM_MEMBER(weft_charge, link, n), "limits.max_buffered_response_total");
    }
}

int weft_backlog_set(weft_charge *c, size_t bytes)
{
    if (c == NULL)
        return 0;
    if (c->closed)
        return -1;
    if (bytes <= c->bytes) {
        atomic_fetch_sub_explicit(&queued_bytes, c->bytes - bytes, memory_order_relaxed);
        c->bytes = bytes;
        if (bytes == 0 && h2o_linklist_is_linked(&c->link))
            h2o_linklist_unlink(&c->link);
        return 0;
    }
    /* More for a connection that left earlier answers unread past its bound:
     * it is not reading, and would hold whatever it is given. */
    if (conn_unread(c) + c->bytes > c->per_conn) {
        close_slow(c, "limits.max_buffered_response");
        return -1;
    }
    atomic_fetch_add_explicit(&queued_bytes, bytes - c->bytes, memory_order_relaxed);
    if (c->bytes == 0) {
        h2o_linklist_insert(loop_queue(), &c->link); /* at the tail: the newest */
        c->since_ns = weft_now_ns();
    }
    c->bytes = bytes;
    atomic_store_explicit(&total_limit, c->total, memory_order_relaxed);
    enforce_total(c->total, c, UINT64_MAX);
    return 0;
}

int weft_backlog_closed(const weft_charge *c) { return c != NULL && c->closed; }

size_t weft_backlog_bytes(void) { return atomic_load_explicit(&queued_bytes, memory_order_relaxed); }

uint64_t weft_backlog_closed_total(void) { return atomic_load_explicit(&closed_count, memory_order_relaxed); }

/* Another loop's answers may have taken the process past the total, with
 * this loop's slow readers the oldest: each loop looks at its own, those
 * unread for a second at least (a large answer just handed over to a client
 * that reads it is not a slow reader yet). */
static void tick(weft_loop *L)
{
    (void)L;
    uint64_t now = weft_now_ns();
    enforce_total(atomic_load_explicit(&total_limit, memory_order_relaxed), NULL, now - 1000000000ull);
}

void weft_backlog_attach(void)
{
    static const weft_loop_hook hook = {.tick = tick};
    weft_loop_add_hook(&hook);
}
