/*
 * The event loops: one thread each, with its h2o loop and context, its
 * listening sockets, the queue other threads use to hand it work, and its
 * timers. Everything in a weft_loop belongs to its thread; other threads
 * reach it only through weft_loop_post().
 *
 * Subsystems that keep per-loop state (coroutine stacks, database
 * connections, the serving generation) keep it in a slot of their own
 * (weft_loop_slot_new(), h2o's _module_configs[slot] in miniature) and
 * attach it through weft_loop_add_hook(): the loop module calls their setup
 * on the loop's own thread when it starts and their teardown when it has
 * drained, and never names them or their types. This module owns the
 * process-wide list of loops; iteration goes through
 * weft_loop_count()/weft_loop_at().
 */
#ifndef WEFT_LOOP_H
#define WEFT_LOOP_H

#include <pthread.h>
#include <stdatomic.h>

#include "base/h2o_glue.h"
#include "base/stats.h"
#include "base/timer.h"
#include "core/peers.h"

/** Per-loop slots a process can hand out (the subsystems above core/ take about eight). */
#define WEFT_LOOP_SLOTS 16

/** A cross-thread message; embed it, set nothing, post it. */
typedef struct weft_msg {
    h2o_multithread_message_t super;
    void (*fn)(struct weft_msg *m);
} weft_msg;

struct weft_conn;

typedef struct weft_loop {
    int index;
    pthread_t thread;
    h2o_evloop_t *evloop;
    h2o_context_t ctx;
    weft_timers *timers;
    weft_loop_stats *stats; /* written by this loop only; summed by scrapes */
    size_t inflight;        /* requests dispatched and not yet completed (http/) */
    /* Per-loop state of higher layers, one slot per weft_loop_slot_new(),
     * set by their hooks and never read here. */
    void *slots[WEFT_LOOP_SLOTS];
    /* The loop's own business. */
    h2o_accept_ctx_t *accept_ctxs;     /* one per main listener (its TLS context differs) */
    h2o_accept_ctx_t admin_accept_ctx; /* loop 0 only */
    h2o_socket_t **listeners;          /* main listeners first, then any handed over beyond them, then the admin one (loop 0) */
    size_t n_listeners, n_main_listeners;
    h2o_multithread_queue_t *queue;
    h2o_multithread_receiver_t receiver;
    int stopping;
    int grace_s;
    uint64_t stop_deadline_ns;
    weft_msg stop_msg;
    atomic_uint_fast64_t heartbeat_ns; /* last loop iteration, read by the watchdog */
    weft_timer tick;                   /* 100 ms: event-loop lag */
    size_t max_connections;            /* limits.max_connections, counted across all loops */
    int accept_paused;
    weft_timer accept_retry;
    struct weft_conn *conns_oldest, *conns_newest; /* open client connections, in accept order */
    const int *setup_fds; /* start-up arguments, consumed by the loop thread */
    /* weft_loop_now_ns(): CLOCK_MONOTONIC read once per h2o_evloop_run. */
    uint64_t clock_run, clock_ns;
} weft_loop;

/**
 * The monotonic time as of the first ask in this loop's current wake-up
 * (one h2o_evloop_run), on its own thread only: every request handled in
 * one wake-up shares one clock read, as h2o's own cached timestamps do
 * (h2o's are wall-clock time and may step; these never do). The same base
 * as weft_now_ns(): the two may be compared and subtracted. Whatever runs
 * and ends within one wake-up measures 0 by it, and a handler that held the
 * loop leaves it behind by as long: good for budgets and idle times (rate
 * limits, the abuse budget, a connection's idle age), never for a
 * request's latency, which reads weft_now_ns() at its start and its end.
 */
static inline uint64_t weft_loop_now_ns(weft_loop *L)
{
    if (L->clock_run != L->evloop->run_count || L->clock_ns == 0) {
        L->clock_run = L->evloop->run_count;
        L->clock_ns = weft_now_ns();
    }
    return L->clock_ns;
}

/**
 * A request starts (+1) or ends (-1) on `L` at `now_ns` (weft_now_ns()): the
 * loop's count, its gauge and the gauge's time integral. Loop thread.
 */
static inline void weft_loop_inflight(weft_loop *L, int delta, uint64_t now_ns)
{
    L->inflight = delta > 0 ? L->inflight + 1 : L->inflight - 1;
    weft_stats_inflight(L->stats, (int_fast64_t)L->inflight, now_ns);
}

/**
 * A client connection as the loop admits it. Higher layers mark it busy
 * while a request on it is handled, so that at max_connections the oldest
 * idle ones (never a busy one) can make room for new clients. The record
 * outlives its socket while busy (a request whose client left).
 */
typedef struct weft_conn {
    h2o_socket_t *sock; /* NULL once closed */
    struct weft_loop *loop;
    struct weft_conn *older, *newer;
    unsigned busy;
    int evicting;
    uint64_t idle_since_ns; /* accepted, or its last request completed */
    int peer_counted;       /* counted for limits.max_connections_per_ip: released at close */
    weft_peer_key peer;
    weft_sockaddr local;    /* getsockname once, at its first request (AF_UNSPEC until then) */
    weft_sockaddr remote;   /* the peer (the PROXY header's, if any) and its key, at its first request */
    weft_peer_key remote_key;
    int listener;           /* index of the main listener it came in on (config listen[]); -1: admin */
    /* While its PROXY header is read (core/proxyproto.h), before h2o has it. */
    weft_timer pp_timer;
    void (*pp_done)(struct weft_conn *c, int rc);
    h2o_accept_ctx_t *pp_actx;
    /* Per-connection state of the layers above, zeroed at accept and gone
     * with the record: it lives exactly as long as the connection, so no
     * shared table can fill up (http/abuse.c keeps its budget here). */
    _Alignas(8) unsigned char ext[32];
} weft_conn;

/** The record of an accepted client socket (NULL for any other socket). Loop thread. */
weft_conn *weft_conn_of(h2o_socket_t *sock);
/** The local address `c` was accepted on, or NULL (not IPv4/IPv6, or closed before it was asked). Loop thread. */
const struct sockaddr *weft_conn_local_addr(weft_conn *c);
/**
 * The peer `c` was accepted from (the PROXY header's address when the
 * listener reads one) and its key, or NULL (not IPv4/IPv6, or closed before
 * it was asked). Asked once per connection. Loop thread.
 */
const weft_sockaddr *weft_conn_remote_addr(weft_conn *c, const weft_peer_key **key);
/** A request on `c` starts (+1) or completes (-1) at `now_ns` (weft_now_ns(), read by the caller anyway). Loop thread. */
void weft_conn_busy(weft_conn *c, int delta, uint64_t now_ns);

/** What the loops serve; filled by the process before weft_loops_start(). */
typedef struct weft_loops_conf {
    h2o_globalconf_t *h2o;
    h2o_hostconf_t **main_hosts, **admin_hosts;
    int admin_fd;              /* -1: none; served by loop 0 */
    const int *fds;            /* n_loops × n_listen SO_REUSEPORT sockets, loop-major */
    size_t n_listen;
    /* Sockets handed over beyond the loops' own (core/listener.h): loop t
     * accepts on extra[k] for every k % n_loops == t as well. */
    const struct weft_listen_extra *extra;
    size_t n_extra;
    SSL_CTX *const *tls;       /* per listener, NULL for plain */
    size_t max_connections;    /* for the whole process */
    const int *proxy_protocol; /* per listener: a PROXY header first (core/proxyproto.h); NULL: none */
    unsigned proxy_timeout_ms; /* how long that header may take */
} weft_loops_conf;

/** Per-loop state of a subsystem; setup runs on the loop thread before it serves, teardown after it drained. */
typedef struct weft_loop_hook {
    int (*setup)(weft_loop *L);
    void (*teardown)(weft_loop *L);
    void (*stop)(weft_loop *L); /* optional: the loop starts draining (SIGTERM) */
    void (*tick)(weft_loop *L); /* optional: every 100 ms, for housekeeping that can wait */
    void (*pass)(weft_loop *L); /* optional: after each turn of the loop, before it waits again (keep it cheap) */
} weft_loop_hook;

/** The loop running on this thread, or NULL off the loops. */
extern _Thread_local weft_loop *weft_loop_current;

/**
 * A new per-loop slot, NULL on every loop until its owner sets it. Call it
 * before the loops start (from a constructor or the owner's attach); the
 * process aborts past WEFT_LOOP_SLOTS, a build error rather than a runtime one.
 */
int weft_loop_slot_new(void);
/** The value of `slot` on `L`. Loop thread (or before/after it runs). */
static inline void *weft_loop_get(const weft_loop *L, int slot) { return L->slots[slot]; }
static inline void weft_loop_set(weft_loop *L, int slot, void *value) { L->slots[slot] = value; }
/** Defines `static int NAME`, a slot taken before main() runs: no start-up order can leave it unset. */
#define WEFT_LOOP_SLOT(name)                                                                                        \
    static int name = -1;                                                                                           \
    __attribute__((constructor)) static void name##_take(void) { name = weft_loop_slot_new(); }

/** Registers a hook (control thread, before weft_loops_start). Teardowns run in reverse order. */
void weft_loop_add_hook(const weft_loop_hook *h);

/** Starts n loop threads and waits until each serves; 0 on success. */
int weft_loops_start(int n, const weft_loops_conf *conf);
/** Asks every loop to stop accepting and drain for up to grace_s seconds. Any thread. */
void weft_loops_stop(int grace_s);
/**
 * From now on the process is leaving: readiness says so while the loops
 * still accept and serve (shutdown.unready_ms), until weft_loops_stop().
 * Any thread.
 */
void weft_loops_announce_stop(void);
/** 1 once weft_loops_announce_stop() or weft_loops_stop() ran. Any thread. */
int weft_loops_stop_announced(void);
/** Loops still running (not yet drained or abandoned). */
int weft_loops_running(void);
/** Joins the loop threads; returns 1 if one abandoned requests at its deadline (its memory stays). */
int weft_loops_join(void);
/** Frees what the loops left (after weft_loops_join returned 0). */
void weft_loops_free(void);

int weft_loop_count(void);
weft_loop *weft_loop_at(int i);

/** Runs m->fn(m) on `loop`'s thread. Any thread. */
void weft_loop_post(weft_loop *loop, weft_msg *m, void (*fn)(weft_msg *m));
/** New TLS handshakes on this loop use `tls` (one per main listener). Loop thread. */
void weft_loop_use_tls(weft_loop *L, SSL_CTX *const *tls);

#endif
