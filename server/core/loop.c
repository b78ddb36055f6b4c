#include "core/loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "base/log.h"
#include "base/signals.h"
#include "core/listener.h"
#include "core/proxyproto.h"

_Thread_local weft_loop *weft_loop_current;

/* Written by the control thread before any loop starts and freed after they
 * all stopped; loop threads and scrapes only read it in between. */
static weft_loop *loops;
static int n_loops;
static weft_loops_conf conf;
static const weft_loop_hook *hooks[16];
static int n_hooks;
static atomic_int loops_running;
static pthread_mutex_t ready_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cv = PTHREAD_COND_INITIALIZER;
static int loops_ready, loops_failed;
/* h2o_context_init and _dispose register and unregister every context with
 * the globalconf's shared proxy socket pool without a lock of their own
 * (lib/core/context.c: h2o_socketpool_{,un}register_loop); loops set up and
 * tear down at the same time, so weft takes one for them. */
static pthread_mutex_t context_mu = PTHREAD_MUTEX_INITIALIZER;

void weft_loop_add_hook(const weft_loop_hook *h)
{
    if (n_hooks == (int)(sizeof(hooks) / sizeof(hooks[0])))
        weft_fatal("too many per-loop hooks");
    hooks[n_hooks++] = h;
}

int weft_loop_count(void) { return n_loops; }

int weft_loop_slot_new(void)
{
    static int n_slots;
    if (n_slots == WEFT_LOOP_SLOTS)
        weft_fatal("more than %d per-loop slots: raise WEFT_LOOP_SLOTS in core/loop.h", WEFT_LOOP_SLOTS);
    return n_slots++;
}

weft_loop *weft_loop_at(int i) { return &loops[i]; }

int weft_loops_running(void) { return atomic_load(&loops_running); }

static atomic_int stop_announced;
void weft_loops_announce_stop(void) { atomic_store(&stop_announced, 1); }
int weft_loops_stop_announced(void) { return atomic_load(&stop_announced); }

static void on_messages(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages)
{
    while (!h2o_linklist_is_empty(messages)) {
        weft_msg *m = H2O_STRUCT_FROM_MEMBER(weft_msg, super.link, messages->next);
        h2o_linklist_unlink(&m->super.link);
        m->fn(m);
    }
}

void weft_loop_post(weft_loop *loop, weft_msg *m, void (*fn)(weft_msg *m))
{
    memset(&m->super, 0, sizeof(m->super));
    m->fn = fn;
    h2o_multithread_send_message(&loop->receiver, &m->super);
}

void weft_loop_use_tls(weft_loop *L, SSL_CTX *const *tls)
{
    /* Established connections keep the context they started with (OpenSSL
     * counts references). */
    for (size_t i = 0; i < L->n_main_listeners; i++)
        L->accept_ctxs[i].ssl_ctx = tls[i];
}

/* ---- accepting, bounded by max_connections and by file descriptors ---- */

/* limits.max_connections counts the connections of every loop together.
 * SO_REUSEPORT spreads connections by a hash, not evenly: with a per-loop
 * share, 10,000 connections on 2 loops put some tens over one loop's 5,000,
 * which closed idle ones while the process was below its limit
 * (docs/BENCHMARKS.md, c10k analysed). Relaxed atomic loads of each loop's
 * gauge: the bound may be passed by a connection or two accepted at the same
 * moment on two loops, never by more. */
static size_t open_connections(void)
{
    return (size_t)weft_stats_sum(offsetof(weft_loop_stats, connections));
}

static void on_accept(h2o_socket_t *listener, const char *err);

static void resume_accepting(weft_loop *L)
{
    L->accept_paused = 0;
    for (size_t i = 0; i < L->n_listeners; i++)
        h2o_socket_read_start(L->listeners[i], on_accept);
}

static void on_accept_retry(weft_timer *t)
{
    weft_loop *L = H2O_STRUCT_FROM_MEMBER(weft_loop, accept_retry, t);
    if (L->accept_paused && !L->stopping)
        resume_accepting(L);
}

static void pause_accepting(weft_loop *L, uint64_t retry_ms)
{
    weft_stat_add(&L->stats->conn_refused, 1);
    if (!L->accept_paused) {
        L->accept_paused = 1;
        for (size_t i = 0; i < L->n_listeners; i++)
            h2o_socket_read_stop(L->listeners[i]);
    }
    if (retry_ms > 0 && L->accept_retry.heap_index == 0)
        weft_timers_add(L->timers, &L->accept_retry, retry_ms, on_accept_retry);
}

static void on_conn_close(void *data)
{
    weft_conn *c = data;
    weft_loop *L = c->loop;
    if (c->peer_counted)
        weft_peers_release(&c->peer);
    if (c->pp_done != NULL) /* closed while its PROXY header was awaited (a stop) */
        weft_timers_cancel(L->timers, &c->pp_timer);
    if (c->older != NULL)
        c->older->newer = c->newer;
    else
        L->conns_oldest = c->newer;
    if (c->newer != NULL)
        c->newer->older = c->older;
    else
        L->conns_newest = c->older;
    c->sock = NULL;
    if (c->busy == 0)
        free(c);
    int_fast64_t n = atomic_load_explicit(&L->stats->connections, memory_order_relaxed) - 1;
    atomic_store_explicit(&L->stats->connections, n, memory_order_relaxed);
    if (L->accept_paused && open_connections() < L->max_connections && !L->stopping) {
        weft_timers_cancel(L->timers, &L->accept_retry);
        resume_accepting(L);
    }
}

weft_conn *weft_conn_of(h2o_socket_t *sock)
{
    return sock != NULL && sock->on_close.cb == on_conn_close ? sock->on_close.data : NULL;
}

/* Every request reports its local address, and asking the kernel is a system
 * call (h2o caches only the peer's): one per connection is enough. */
const struct sockaddr *weft_conn_local_addr(weft_conn *c)
{
    if (c->local.sa.sa_family == AF_UNSPEC && c->sock != NULL) {
        struct sockaddr_storage ss;
        socklen_t len = h2o_socket_getsockname(c->sock, (struct sockaddr *)&ss);
        if (len > 0 && len <= sizeof(c->local) && (ss.ss_family == AF_INET || ss.ss_family == AF_INET6))
            memcpy(&c->local, &ss, len);
    }
    return c->local.sa.sa_family != AF_UNSPEC ? &c->local.sa : NULL;
}

/* h2o caches the peer's address, but copying it out and keying it on every
 * request of a connection is work done once here. */
const weft_sockaddr *weft_conn_remote_addr(weft_conn *c, const weft_peer_key **key)
{
    if (c->remote.sa.sa_family == AF_UNSPEC && c->sock != NULL) {
        struct sockaddr_storage ss;
        socklen_t len = h2o_socket_getpeername(c->sock, (struct sockaddr *)&ss);
        if (len > 0 && len <= sizeof(c->remote) && (ss.ss_family == AF_INET || ss.ss_family == AF_INET6)) {
            memcpy(&c->remote, &ss, len);
            weft_peer_key_of(&c->remote.sa, &c->remote_key);
        }
    }
    *key = &c->remote_key;
    return c->remote.sa.sa_family != AF_UNSPEC ? &c->remote : NULL;
}

void weft_conn_busy(weft_conn *c, int delta, uint64_t now_ns)
{
    c->busy = (unsigned)((int)c->busy + delta);
    if (c->busy == 0 && c->sock == NULL)
        free(c); /* its socket closed while a request on it ran */
    else if (c->busy == 0)
        c->idle_since_ns = now_ns;
}

/* At max_connections, idle connections (no request being handled, none
 * being answered) make room for new clients, oldest first: a pile of idle
 * sockets cannot lock new clients out. Only connections idle for a moment:
 * one accepted in this very batch has not had its request read yet.
 * Shutting the socket down makes h2o's next read fail and h2o closes the
 * connection itself. Returns how many were closed; *young is set when idle
 * connections too young to close exist (worth a retry soon). */
#define IDLE_BEFORE_EVICT_NS (200 * 1000000ull)

static int evict_idle(weft_loop *L, int want, int *young)
{
    int n = 0;
    uint64_t now = weft_now_ns();
    *young = 0;
    for (weft_conn *c = L->conns_oldest; c != NULL && n < want; c = c->newer) {
        if (c->busy != 0 || c->evicting || h2o_socket_is_writing(c->sock))
            continue; /* a request in flight, or its answer still being written */
        if (now - c->idle_since_ns < IDLE_BEFORE_EVICT_NS) {
            *young = 1;
            continue;
        }
        c->evicting = 1;
        shutdown(h2o_socket_get_fd(c->sock), SHUT_RDWR);
        n++;
    }
    if (n > 0)
        weft_stat_add(&L->stats->conn_evicted, (uint64_t)n);
    return n;
}

/* At most one line per kind every 10 s, so that a flood cannot fill the log. */
static int log_due(_Atomic uint64_t *last)
{
    uint64_t now = weft_now_ns(), prev = atomic_load(last);
    return now - prev > 10000000000ull && atomic_compare_exchange_strong(last, &prev, now);
}

/* limits.max_connections_per_ip: a client address already holding that many
 * connections gets the new one closed at once. Reset, not closed gracefully:
 * the server keeps no TIME_WAIT for a client it refuses, and the client sees
 * the refusal as such. The admin listener is never capped: the operator's
 * own address must not be locked out by clients that share it. Returns 1
 * when the socket was refused (and closed). */
static int refuse_per_ip(weft_loop *L, h2o_socket_t *sock, weft_peer_key *peer, int *counted)
{
    *counted = 0;
    unsigned limit = weft_peers_limit();
    struct sockaddr_storage sa;
    if (limit == 0 || h2o_socket_getpeername(sock, (struct sockaddr *)&sa) == 0 ||
        weft_peer_key_of((struct sockaddr *)&sa, peer) != 0)
        return 0;
    weft_peer_admit a = weft_peers_acquire(peer, limit);
    if (a != WEFT_PEER_REFUSED) {
        *counted = a == WEFT_PEER_COUNTED;
        return 0;
    }
    weft_stat_add(&L->stats->conn_per_ip_refused, 1);
    static _Atomic uint64_t last_log;
    if (log_due(&last_log)) {
        char addr[INET6_ADDRSTRLEN];
        weft_peer_key_format(peer, addr, sizeof(addr));
        weft_log_warn("closing a new connection from %s at accept: %u already open from that address "
                      "(limits.max_connections_per_ip); more are counted in weft_connections_refused_total, "
                      "logged at most every 10 s",
                      addr, limit);
    }
    struct linger reset = {.l_onoff = 1, .l_linger = 0};
    setsockopt(h2o_socket_get_fd(sock), SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    h2o_socket_close(sock);
    return 1;
}

/* A PROXY header was read (or was not): the address it named is the peer
 * now, so the per-address cap is decided on the client's, not the balancer's. */
static void proxy_header_done(weft_conn *c, int rc)
{
    weft_loop *L = c->loop;
    h2o_socket_t *sock = c->sock;
    if (rc != 0) {
        weft_stat_add(&L->stats->conn_proxy_refused, 1);
        static _Atomic uint64_t last_log;
        if (log_due(&last_log))
            weft_log_warn("closing a connection on a proxy_protocol listener: no valid PROXY v1/v2 header "
                          "(malformed, missing, or not complete within %u ms); more are counted in weft_connections_refused_total{reason=\"proxy_protocol\"}, "
                          "logged at most every 10 s",
                          conf.proxy_timeout_ms);
        h2o_socket_close(sock);
        return;
    }
    if (refuse_per_ip(L, sock, &c->peer, &c->peer_counted))
        return;
    h2o_accept(c->pp_actx, sock);
}

static void accept_batch(weft_loop *L, h2o_socket_t *listener, h2o_accept_ctx_t *actx)
{
    int li = actx != &L->admin_accept_ctx ? (int)(actx - L->accept_ctxs) : -1;
    int proxied = li >= 0 && conf.proxy_protocol != NULL && conf.proxy_protocol[li];
    /* A bounded batch, so one busy listener cannot starve the loop. */
    for (int i = 0; i < 64; i++) {
        if (open_connections() >= L->max_connections) {
            /* Reached by this batch's own accepts: no client is known to
             * wait, and evicting now closed idle connections for nobody
             * (8 at a time, each reconnect doing it again: the c10k runs'
             * read errors were all such multiples of 8). A client that does
             * wait keeps the listener readable and comes back here first. */
            if (i > 0)
                return;
            /* At the limit: make room by closing idle connections, and leave
             * the new ones in the kernel backlog until they have closed
             * (accepting and dropping them would be no better). Without an
             * eviction of its own, the loop looks again in 100 ms: a place
             * freed on another loop does not wake it. */
            int young;
            int closed = evict_idle(L, 8, &young);
            pause_accepting(L, closed == 0 ? 100 : 0);
            return;
        }
        errno = 0;
        h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
        if (sock == NULL) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* Out of descriptors: the listener stays readable, so retrying
                 * at once would spin. Back off; existing connections go on. */
                static _Atomic uint64_t last_log;
                if (log_due(&last_log))
                    weft_log_error("accept: %s; pausing new connections for 100 ms (raise LimitNOFILE / ulimit -n)",
                                   strerror(errno));
                pause_accepting(L, 100);
            }
            return;
        }
        weft_peer_key peer = {{0}};
        int counted = 0;
        if (actx != &L->admin_accept_ctx && !proxied && refuse_per_ip(L, sock, &peer, &counted))
            continue;
        weft_conn *c = calloc(1, sizeof(*c));
        if (c == NULL) {
            if (counted)
                weft_peers_release(&peer);
            h2o_socket_close(sock);
            continue;
        }
        atomic_store_explicit(&L->stats->connections,
                              atomic_load_explicit(&L->stats->connections, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        *c = (weft_conn){.sock = sock, .loop = L, .older = L->conns_newest, .idle_since_ns = weft_now_ns(),
                         .peer_counted = counted, .peer = peer, .listener = li};
        if (L->conns_newest != NULL)
            L->conns_newest->newer = c;
        else
            L->conns_oldest = c;
        L->conns_newest = c;
        sock->on_close.cb = on_conn_close;
        sock->on_close.data = c;
        if (proxied) {
            c->pp_actx = actx;
            weft_proxyproto_read(c, conf.proxy_timeout_ms, proxy_header_done);
            continue;
        }
        h2o_accept(actx, sock);
    }
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    if (err != NULL)
        return;
    /* Its accept context: the listen address's own (a socket handed over
     * beyond the loops shares its address's), or the admin one. */
    accept_batch(weft_loop_current, listener, listener->data);
}

/* ---- life of one loop ---- */

/* Every 100 ms: how late did the loop get round to it? Then the hooks' housekeeping. */
static void on_tick(weft_timer *t)
{
    weft_loop *L = H2O_STRUCT_FROM_MEMBER(weft_loop, tick, t);
    uint64_t now = weft_now_ns();
    atomic_store_explicit(&L->stats->lag_ns, now > t->deadline_ns ? now - t->deadline_ns : 0, memory_order_relaxed);
    weft_stats_inflight(L->stats, (int_fast64_t)L->inflight, now); /* a long request's time, 100 ms at a time */
    /* h2o's per-thread recyclers (socket buffers, memory pool chunks) keep
     * what a burst freed until the application asks: h2o halves them once a
     * second from here, as its own server does from its loop. */
    h2o_cleanup_thread(h2o_now(L->evloop), &L->ctx);
    for (int i = 0; i < n_hooks; i++)
        if (hooks[i]->tick != NULL)
            hooks[i]->tick(L);
    if (!L->stopping)
        weft_timers_add(L->timers, &L->tick, 100, on_tick);
}

static void on_stop(weft_msg *m)
{
    weft_loop *L = H2O_STRUCT_FROM_MEMBER(weft_loop, stop_msg, m);
    if (L->stopping)
        return;
    L->stopping = 1;
    L->stop_deadline_ns = weft_now_ns() + (uint64_t)L->grace_s * 1000000000u;
    for (size_t i = 0; i < L->n_listeners; i++)
        h2o_socket_close(L->listeners[i]); /* closes the fd: stop accepting */
    L->n_listeners = L->n_main_listeners = 0;
    weft_timers_cancel(L->timers, &L->accept_retry);
    /* Idle keep-alive connections close now; busy ones after their response. */
    h2o_context_request_shutdown(&L->ctx);
    for (int i = 0; i < n_hooks; i++)
        if (hooks[i]->stop != NULL)
            hooks[i]->stop(L);
}

void weft_loops_stop(int grace_s)
{
    weft_loops_announce_stop();
    for (int t = 0; t < n_loops; t++) {
        loops[t].grace_s = grace_s;
        weft_loop_post(&loops[t], &loops[t].stop_msg, on_stop);
    }
}

static int loop_drained(weft_loop *L)
{
    return L->inflight == 0 && L->ctx._conns.num_conns.idle + L->ctx._conns.num_conns.active +
                                       L->ctx._conns.num_conns.shutdown == 0;
}

static h2o_socket_t *listen_on(weft_loop *L, int fd, h2o_accept_ctx_t *actx)
{
    h2o_socket_t *s = h2o_evloop_socket_create(L->evloop, fd, H2O_SOCKET_FLAG_DONT_READ);
    s->data = actx;
    h2o_socket_read_start(s, on_accept);
    return s;
}

/* Runs on the loop's own thread: h2o sockets take their buffer allocator
 * from the creating thread's thread-local prototype, so a socket created on
 * the main thread and read on a loop would share the main thread's
 * (unsynchronised) free list with every other loop. */
static int loop_setup(weft_loop *L)
{
    size_t n = conf.n_listen;
    L->evloop = h2o_evloop_create();
    pthread_mutex_lock(&context_mu);
    h2o_context_init(&L->ctx, L->evloop, conf.h2o);
    pthread_mutex_unlock(&context_mu);
    L->queue = h2o_multithread_create_queue(L->evloop);
    h2o_multithread_register_receiver(L->queue, &L->receiver, on_messages);
    L->timers = weft_timers_new(L->evloop);
    size_t mine = 0; /* sockets handed over beyond the loops: this one's share */
    for (size_t k = (size_t)L->index; k < conf.n_extra; k += (size_t)n_loops)
        mine++;
    L->accept_ctxs = calloc(n ? n : 1, sizeof(*L->accept_ctxs));
    L->listeners = calloc(n + mine + 1, sizeof(*L->listeners));
    if (L->timers == NULL || L->accept_ctxs == NULL || L->listeners == NULL)
        return -1;
    for (size_t i = 0; i < n; i++) {
        L->accept_ctxs[i] = (h2o_accept_ctx_t){.ctx = &L->ctx, .hosts = conf.main_hosts, .ssl_ctx = conf.tls[i]};
        L->listeners[L->n_listeners++] = listen_on(L, L->setup_fds[i], &L->accept_ctxs[i]);
    }
    L->n_main_listeners = n;
    for (size_t k = (size_t)L->index; k < conf.n_extra; k += (size_t)n_loops)
        L->listeners[L->n_listeners++] = listen_on(L, conf.extra[k].fd, &L->accept_ctxs[conf.extra[k].listener]);
    L->admin_accept_ctx = (h2o_accept_ctx_t){.ctx = &L->ctx, .hosts = conf.admin_hosts};
    if (L->index == 0 && conf.admin_fd >= 0)
        L->listeners[L->n_listeners++] = listen_on(L, conf.admin_fd, &L->admin_accept_ctx);
    L->max_connections = conf.max_connections;
    weft_timers_add(L->timers, &L->tick, 100, on_tick);
    for (int i = 0; i < n_hooks; i++)
        if (hooks[i]->setup != NULL && hooks[i]->setup(L) != 0)
            return -1;
    return 0;
}

/* Teardown order matters: h2o asserts that nothing is still linked to a loop
 * it destroys, and closed sockets are only released by one more loop turn. */
static void loop_teardown(weft_loop *L)
{
    for (int i = n_hooks - 1; i >= 0; i--)
        if (hooks[i]->teardown != NULL)
            hooks[i]->teardown(L);
    weft_timers_cancel(L->timers, &L->tick);
    weft_timers_cancel(L->timers, &L->accept_retry);
    weft_timers_free(L->timers);
    h2o_evloop_run(L->evloop, 0);
    h2o_cleanup_thread(0, &L->ctx); /* 0: empty the recyclers, they die with the thread */
    h2o_multithread_unregister_receiver(L->queue, &L->receiver);
    h2o_multithread_destroy_queue(L->queue);
    pthread_mutex_lock(&context_mu);
    h2o_context_dispose(&L->ctx);
    pthread_mutex_unlock(&context_mu);
    h2o_evloop_run(L->evloop, 0);
    h2o_evloop_destroy(L->evloop);
    free(L->listeners);
    free(L->accept_ctxs);
}

static void *loop_main(void *arg)
{
    weft_loop *L = arg;
    weft_loop_current = L;
    /* EINTR makes h2o_evloop_run return -1; signals go to the main thread. */
    weft_signals_block_async();
    int failed = loop_setup(L) != 0;
    /* before "ready": the watchdog must never read a loop that never beat */
    atomic_store_explicit(&L->heartbeat_ns, weft_now_ns(), memory_order_relaxed);
    pthread_mutex_lock(&ready_mu);
    loops_ready++;
    loops_failed += failed;
    pthread_cond_broadcast(&ready_cv);
    pthread_mutex_unlock(&ready_mu);
    if (failed)
        weft_fatal("cannot set up event loop %d (out of memory?)", L->index);

    int abandoned = 0;
    while (!L->stopping || !loop_drained(L)) {
        atomic_store_explicit(&L->heartbeat_ns, weft_now_ns(), memory_order_relaxed);
        h2o_evloop_run(L->evloop, L->stopping ? 100 : 1000);
        for (int i = 0; i < n_hooks; i++)
            if (hooks[i]->pass != NULL)
                hooks[i]->pass(L);
        if (L->stopping && weft_now_ns() > L->stop_deadline_ns && !loop_drained(L)) {
            weft_log_warn("loop %d: %zu request(s) still running after the %d s grace period; exiting anyway",
                          L->index, L->inflight, L->grace_s);
            abandoned = 1;
            break;
        }
    }
    if (!abandoned)
        loop_teardown(L);
    atomic_fetch_sub(&loops_running, 1);
    return abandoned ? (void *)1 : NULL;
}

int weft_loops_start(int n, const weft_loops_conf *c)
{
    conf = *c;
    if (c->proxy_protocol != NULL) { /* the caller's array need not outlive this call */
        int *pp = calloc(c->n_listen ? c->n_listen : 1, sizeof(int));
        if (pp == NULL)
            return -1;
        memcpy(pp, c->proxy_protocol, c->n_listen * sizeof(int));
        conf.proxy_protocol = pp;
    }
    loops = calloc((size_t)n, sizeof(weft_loop));
    if (loops == NULL)
        return -1;
    n_loops = n;
    for (int t = 0; t < n; t++)
        if ((loops[t].stats = weft_stats_loop_new()) == NULL)
            return -1;
    atomic_store(&loops_running, n);
    atomic_store(&stop_announced, 0);
    for (int t = 0; t < n; t++) {
        weft_loop *L = &loops[t];
        L->index = t;
        L->setup_fds = conf.fds + (size_t)t * conf.n_listen;
        if (pthread_create(&L->thread, NULL, loop_main, L) != 0)
            weft_fatal("cannot start event loop thread %d", t);
    }
    /* Nothing may post to a loop before its queue exists. */
    pthread_mutex_lock(&ready_mu);
    while (loops_ready < n)
        pthread_cond_wait(&ready_cv, &ready_mu);
    pthread_mutex_unlock(&ready_mu);
    return 0;
}

int weft_loops_join(void)
{
    int abandoned = 0;
    for (int t = 0; t < n_loops; t++) {
        void *ret = NULL;
        pthread_join(loops[t].thread, &ret);
        abandoned |= ret != NULL;
    }
    return abandoned;
}

void weft_loops_free(void)
{
    weft_stats_loops_free();
    weft_peers_free();
    free(loops);
    loops = NULL;
    free((int *)conf.proxy_protocol);
    conf.proxy_protocol = NULL;
    n_loops = 0;
    n_hooks = 0;
}
