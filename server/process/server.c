#include "process/server.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db.h"
#include "ops/admin.h"
#include "process/control.h"
#include "http/http.h"
#include "core/listener.h"
#include "base/log.h"
#include "plugin/module.h"
#include "process/privileges.h"
#include "base/signals.h"
#include "version.h"

weft_server weft_srv;
_Thread_local weft_loop *weft_loop_current;
static atomic_int loops_running;

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

static void pause_accepting(weft_loop *L, uint64_t retry_ms);
static void on_accept(h2o_socket_t *listener, const char *err);
static void on_admin_accept(h2o_socket_t *listener, const char *err);

static void on_conn_close(void *data)
{
    weft_loop *L = data;
    int_fast64_t n = atomic_load_explicit(&L->stats->connections, memory_order_relaxed) - 1;
    atomic_store_explicit(&L->stats->connections, n, memory_order_relaxed);
    if (L->accept_paused && (size_t)n < L->max_connections && !L->stopping) {
        weft_timers_cancel(L->timers, &L->accept_retry);
        L->accept_paused = 0;
        for (size_t i = 0; i < L->n_listeners; i++)
            h2o_socket_read_start(L->listeners[i], i < L->n_main_listeners ? on_accept : on_admin_accept);
    }
}

static void accept_batch(weft_loop *L, h2o_socket_t *listener, h2o_accept_ctx_t *actx)
{
    /* A bounded batch, so one busy listener cannot starve the loop. */
    for (int i = 0; i < 64; i++) {
        if ((size_t)atomic_load_explicit(&L->stats->connections, memory_order_relaxed) >= L->max_connections) {
            /* At the limit: leave new connections in the kernel backlog until
             * one closes, instead of accepting and dropping them. */
            pause_accepting(L, 0);
            return;
        }
        errno = 0;
        h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
        if (sock == NULL) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* Out of descriptors: the listener stays readable, so retrying
                 * at once would spin. Back off; existing connections go on. */
                static _Atomic uint64_t last_log;
                uint64_t now = weft_now_ns(), last = atomic_load(&last_log);
                if (now - last > 10000000000ull && atomic_compare_exchange_strong(&last_log, &last, now))
                    weft_log_error("accept: %s; pausing new connections for 100 ms (raise LimitNOFILE / ulimit -n)",
                                   strerror(errno));
                pause_accepting(L, 100);
            }
            return;
        }
        atomic_store_explicit(&L->stats->connections,
                              atomic_load_explicit(&L->stats->connections, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        sock->on_close.cb = on_conn_close;
        sock->on_close.data = L;
        h2o_accept(actx, sock);
    }
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    weft_loop *L = listener->data;
    size_t i = 0;
    while (i < L->n_main_listeners && L->listeners[i] != listener)
        i++;
    if (err == NULL && i < L->n_main_listeners)
        accept_batch(L, listener, &L->accept_ctxs[i]);
}

static void on_admin_accept(h2o_socket_t *listener, const char *err)
{
    weft_loop *L = listener->data;
    if (err == NULL)
        accept_batch(L, listener, &L->admin_accept_ctx);
}

static void on_accept_retry(weft_timer *t)
{
    weft_loop *L = H2O_STRUCT_FROM_MEMBER(weft_loop, accept_retry, t);
    if (!L->accept_paused || L->stopping)
        return;
    L->accept_paused = 0;
    for (size_t i = 0; i < L->n_listeners; i++)
        h2o_socket_read_start(L->listeners[i], i < L->n_main_listeners ? on_accept : on_admin_accept);
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

/* Every 100 ms: how late did the loop get round to it? */
static void on_tick(weft_timer *t)
{
    weft_loop *L = H2O_STRUCT_FROM_MEMBER(weft_loop, tick, t);
    uint64_t now = weft_now_ns();
    atomic_store_explicit(&L->stats->lag_ns, now > t->deadline_ns ? now - t->deadline_ns : 0, memory_order_relaxed);
    if (!L->stopping)
        weft_timers_add(L->timers, &L->tick, 100, on_tick);
}

static void on_stop(weft_msg *m)
{
    weft_loop *L = H2O_STRUCT_FROM_MEMBER(weft_loop, stop_msg, m);
    if (L->stopping)
        return;
    L->stopping = 1;
    L->stop_deadline_ns = weft_now_ns() + (uint64_t)L->gen->cfg->shutdown.grace_s * 1000000000u;
    for (size_t i = 0; i < L->n_listeners; i++)
        h2o_socket_close(L->listeners[i]); /* closes the fd: stop accepting */
    L->n_listeners = L->n_main_listeners = 0;
    weft_timers_cancel(L->timers, &L->accept_retry);
    /* Idle keep-alive connections close now; busy ones after their response. */
    h2o_context_request_shutdown(&L->ctx);
}

static int loop_drained(weft_loop *L)
{
    return L->inflight == 0 && h2o_linklist_is_empty(&L->ctx.http1._conns) &&
           h2o_linklist_is_empty(&L->ctx.http2._conns);
}

/* Teardown order matters: h2o asserts that nothing is still linked to a loop
 * it destroys, and closed sockets are only released by one more loop turn. */
static void loop_teardown(weft_loop *L)
{
    weft_generation_release(L->gen);
    L->gen = NULL;
    weft_dbloop_free(L->db);
    L->db = NULL;
    weft_dbloop_reap(L, 1);
    weft_timers_cancel(L->timers, &L->tick);
    weft_timers_cancel(L->timers, &L->accept_retry);
    weft_timers_free(L->timers);
    h2o_evloop_run(L->evloop, 0);
    /* h2o's HTTP/2 shutdown arms a 1 s "second GOAWAY" entry even with no
     * HTTP/2 connection; with every connection gone it has nothing to do. */
    if (h2o_timeout_is_linked(&L->ctx.http2._graceful_shutdown_timeout))
        h2o_timeout_unlink(&L->ctx.http2._graceful_shutdown_timeout);
    h2o_multithread_unregister_receiver(L->queue, &L->receiver);
    h2o_multithread_destroy_queue(L->queue);
    h2o_context_dispose(&L->ctx);
    h2o_evloop_run(L->evloop, 0);
    h2o_evloop_destroy(L->evloop);
    weft_coro_pool_free(L->coros);
    free(L->listeners);
    free(L->accept_ctxs);
}

/* Runs on the loop's own thread: h2o sockets take their buffer allocator
 * from the creating thread's thread-local prototype, so a socket created on
 * the main thread and read on a loop would share the main thread's
 * (unsynchronised) free list with every other loop. */
static int loop_setup(weft_loop *L)
{
    const int *fds = L->setup_fds;
    size_t n_fds = L->setup_n_fds;
    weft_generation *gen = L->setup_gen;
    int index = L->index;
    L->evloop = h2o_evloop_create();
    h2o_context_init(&L->ctx, L->evloop, &weft_srv.h2o);
    L->accept_ctxs = calloc(n_fds, sizeof(*L->accept_ctxs));
    for (size_t i = 0; i < n_fds; i++) {
        L->accept_ctxs[i].ctx = &L->ctx;
        L->accept_ctxs[i].hosts = weft_srv.main_hosts;
        L->accept_ctxs[i].ssl_ctx = gen->tls[i];
    }
    L->admin_accept_ctx.ctx = &L->ctx;
    L->admin_accept_ctx.hosts = weft_srv.admin_hosts;
    L->queue = h2o_multithread_create_queue(L->evloop);
    h2o_multithread_register_receiver(L->queue, &L->receiver, on_messages);
    L->timers = weft_timers_new(L->evloop);
    L->coros = weft_coro_pool_new(gen->cfg->coroutine.stack_size, 256);
    if (L->timers == NULL || L->coros == NULL)
        return -1;
    L->listeners = calloc(n_fds, sizeof(*L->listeners));
    for (size_t i = 0; i < n_fds; i++) {
        L->listeners[i] = h2o_evloop_socket_create(L->evloop, fds[i], H2O_SOCKET_FLAG_DONT_READ);
        L->listeners[i]->data = L;
        h2o_socket_read_start(L->listeners[i], on_accept);
    }
    L->n_listeners = L->n_main_listeners = n_fds;
    L->max_connections = ((size_t)gen->cfg->limits.max_connections + (size_t)weft_srv.n_loops - 1) / (size_t)weft_srv.n_loops;
    weft_timers_add(L->timers, &L->tick, 100, on_tick);
    if (index == 0 && weft_srv.admin_fd >= 0) {
        L->listeners = realloc(L->listeners, (n_fds + 1) * sizeof(*L->listeners));
        h2o_socket_t *a = h2o_evloop_socket_create(L->evloop, weft_srv.admin_fd, H2O_SOCKET_FLAG_DONT_READ);
        a->data = L;
        h2o_socket_read_start(a, on_admin_accept);
        L->listeners[L->n_listeners++] = a;
    }
    weft_generation_retain(gen);
    L->gen = gen;
    return 0;
}

static pthread_mutex_t ready_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cv = PTHREAD_COND_INITIALIZER;
static int loops_ready;

static void *loop_main(void *arg)
{
    weft_loop *L = arg;
    weft_loop_current = L;
    /* EINTR makes h2o_evloop_run return -1; signals go to the main thread. */
    weft_signals_block_async();
    weft_coro_thread_init();
    if (loop_setup(L) != 0)
        weft_fatal("cannot set up event loop %d", L->index);
    /* before "ready": the watchdog must never read a loop that never beat */
    atomic_store_explicit(&L->heartbeat_ns, weft_now_ns(), memory_order_relaxed);
    pthread_mutex_lock(&ready_mu);
    loops_ready++;
    pthread_cond_broadcast(&ready_cv);
    pthread_mutex_unlock(&ready_mu);

    int abandoned = 0;
    while (!L->stopping || !loop_drained(L)) {
        atomic_store_explicit(&L->heartbeat_ns, weft_now_ns(), memory_order_relaxed);
        h2o_evloop_run(L->evloop, L->stopping ? 100 : 1000);
        if (L->stopping && weft_now_ns() > L->stop_deadline_ns && !loop_drained(L)) {
            weft_log_warn("loop %d: %zu request(s) still running after the %d s grace period; exiting anyway",
                          L->index, L->inflight, L->gen->cfg->shutdown.grace_s);
            abandoned = 1;
            break;
        }
    }
    if (!abandoned)
        loop_teardown(L);
    weft_coro_thread_cleanup();
    atomic_fetch_sub(&loops_running, 1);
    return abandoned ? (void *)1 : NULL;
}


static void h2o_setup(const weft_config *cfg)
{
    h2o_config_init(&weft_srv.h2o);
    weft_srv.h2o.server_name = h2o_iovec_init(H2O_STRLIT("weft/" WEFT_VERSION));
    /* h2o answers 413 itself once a body passes this, before any handler. */
    weft_srv.h2o.max_request_entity_size = cfg->limits.max_body;
    weft_srv.h2o.http1.req_timeout = (uint64_t)cfg->limits.request_timeout_ms;
    weft_srv.h2o.http2.idle_timeout = (uint64_t)cfg->limits.idle_timeout_ms;
    /* The main listeners see only this host list, so no Host header can
     * reach the admin endpoints through them. */
    weft_srv.main_hosts[0] = h2o_config_register_host(&weft_srv.h2o, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    weft_srv.main_hosts[1] = NULL;
    h2o_pathconf_t *path = h2o_config_register_path(weft_srv.main_hosts[0], "/", 0);
    weft_http_register(path);
    weft_srv.admin_hosts = weft_admin_setup(&weft_srv.h2o);
    if (cfg->log.access_log != NULL) {
        weft_srv.access_log = h2o_access_log_open_handle(cfg->log.access_log, NULL, H2O_LOGCONF_ESCAPE_APACHE);
        if (weft_srv.access_log != NULL)
            h2o_access_log_register(path, weft_srv.access_log);
        else
            weft_log_error("%s: log.access_log: cannot open %s; serving without an access log", cfg->path,
                           cfg->log.access_log);
    }
}

/* Waits for the loops to finish; a second SIGTERM/SIGINT means "now". */
static void wait_for_loops(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    while (atomic_load(&loops_running) > 0) {
        struct timespec ts = {0, 100 * 1000000};
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGTERM || sig == SIGINT) {
            weft_log_warn("second signal during shutdown: exiting immediately");
            _exit(1);
        }
        weft_control_reap(); /* old generations released by the draining loops */
    }
}

int weft_server_run(weft_generation *gen)
{
    weft_config *cfg = gen->cfg;
    weft_srv.cfg = cfg;
    weft_srv.gen = gen;
    weft_srv.admin_fd = -1;
    weft_log_set_level(cfg->log.level);
    signal(SIGPIPE, SIG_IGN);
    int n = cfg->threads;
    int *fds = NULL;
    if (weft_listeners_bind(cfg, n, &fds) != 0)
        return 1;
    if (cfg->admin.enabled && weft_listeners_bind_admin(cfg, &weft_srv.admin_fd) != 0 && !cfg->admin.is_default) {
        weft_listeners_close(fds, (size_t)n * cfg->n_listen);
        free(fds);
        return 1;
    }
    /* Ports below 1024 and root-only key files are dealt with; nothing after
     * this point needs root. */
    if (weft_privileges_drop(cfg) != 0 || weft_control_init() != 0) {
        weft_listeners_close(fds, (size_t)n * cfg->n_listen);
        free(fds);
        return 1;
    }
    h2o_setup(cfg);
    weft_srv.n_loops = n;
    weft_srv.loops = calloc((size_t)n, sizeof(weft_loop));
    for (int t = 0; t < n; t++)
        if ((weft_srv.loops[t].stats = calloc(1, sizeof(weft_loop_stats))) == NULL)
            weft_fatal("out of memory");
    atomic_store(&loops_running, n);
    for (int t = 0; t < n; t++) {
        weft_loop *L = &weft_srv.loops[t];
        L->index = t;
        L->setup_fds = fds + (size_t)t * cfg->n_listen;
        L->setup_n_fds = cfg->n_listen;
        L->setup_gen = gen;
        if (pthread_create(&L->thread, NULL, loop_main, L) != 0)
            weft_fatal("cannot start event loop thread %d", t);
    }
    /* Nothing may post to a loop before its queue exists. */
    pthread_mutex_lock(&ready_mu);
    while (loops_ready < n)
        pthread_cond_wait(&ready_cv, &ready_mu);
    pthread_mutex_unlock(&ready_mu);
    weft_listeners_announce(cfg, fds);
    free(fds);
    weft_log_info("weft %s serving %zu route(s) from %zu plugin(s) on %d event loop thread(s)", WEFT_VERSION,
                  gen->n_routes, gen->n_modules, n);

    int sig = weft_control_run(); /* reloads until SIGTERM/SIGINT */

    weft_log_info("%s: stopping; in-flight requests get up to %d s to finish", strsignal(sig),
                  weft_srv.cfg->shutdown.grace_s);
    for (int t = 0; t < n; t++)
        weft_loop_post(&weft_srv.loops[t], &weft_srv.loops[t].stop_msg, on_stop);
    wait_for_loops();
    int abandoned = 0;
    for (int t = 0; t < n; t++) {
        void *ret = NULL;
        pthread_join(weft_srv.loops[t].thread, &ret);
        abandoned |= ret != NULL;
    }
    if (abandoned) {
        /* Handlers still own loop memory: tearing it down would be unsafe. */
        weft_control_cleanup();
        weft_log_info("stopped (requests abandoned after the grace period)");
        _exit(0);
    }
    for (int t = 0; t < n; t++)
        free(weft_srv.loops[t].stats);
    free(weft_srv.loops);
    weft_generation_release(weft_srv.gen);
    weft_control_reap();
    weft_control_cleanup();
    if (weft_srv.access_log != NULL)
        h2o_mem_release_shared(weft_srv.access_log);
    h2o_config_dispose(&weft_srv.h2o);
    weft_module_cleanup();
    weft_log_info("stopped");
    return 0;
}
