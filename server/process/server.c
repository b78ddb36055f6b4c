#include "process/server.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/log.h"
#include "core/inherited.h"
#include "core/listener.h"
#include "core/loop.h"
#include "core/peers.h"
#include "db/db.h"
#include "db/db_tx.h"
#include "outbound/outbound.h"
#include "ws/ws.h"
#include "dev/dev.h"
#include "edge/edge.h"
#include "dispatch/dispatch.h"
#include "edge/static_cache.h"
#include "http/abuse.h"
#include "http/framing.h"
#include "http/http.h"
#include "ops/admin.h"
#include "ops/observe.h"
#include "plugin/module.h"
#include "plugin/ptimer.h"
#include "process/control.h"
#include "process/handover.h"
#include "process/privileges.h"
#include "reload/generation.h"
#include "ops/accesslog.h"
#include "base/otlp.h"
#include "request/trace.h"
#include "ops/trim.h"
#include "reload/reload.h"
#include "request/backlog.h"
#include "request/respond.h"
#include "version.h"

/* The process-wide h2o state; control thread only, read by the loops once
 * they run (h2o's configuration is immutable while it serves). */
static struct {
    h2o_globalconf_t h2o;
    h2o_hostconf_t *main_hosts[2];
    h2o_hostconf_t *admin_hosts[2];
    weft_generation *first; /* what each loop serves when it starts */
    int *passed;            /* every listening socket, for a hand-over (the loops own them) */
    weft_listen_extra *extra; /* sockets handed over beyond the loops' own (the loops own them too) */
    size_t n_extra;
} proc;

/* Each loop holds a reference to the generation it serves (swapped by reload/). */
static int gen_setup(weft_loop *L)
{
    weft_generation_retain(proc.first);
    weft_generation_set_loop(L, proc.first);
    return 0;
}

static void gen_teardown(weft_loop *L)
{
    weft_generation *g = weft_generation_of_loop(L);
    weft_generation_set_loop(L, NULL); /* its requests' loop-local references become shared first */
    weft_generation_release(g);
}

static const weft_loop_hook gen_hook = {.setup = gen_setup, .teardown = gen_teardown};

/* The config of the generation this loop serves (the edge filter's rules
 * for answers no route took). */
static const weft_config *serving_config(void)
{
    weft_loop *L = weft_loop_current;
    const weft_generation *g = L != NULL ? weft_generation_of_loop(L) : NULL;
    return g != NULL ? g->cfg : NULL;
}

/* Handlers run in registration order and built-in endpoints decline what is
 * not theirs, so the route dispatcher never needs to know they exist. */
static void h2o_setup(const weft_config *cfg)
{
    h2o_config_init(&proc.h2o);
    proc.h2o.server_name = h2o_iovec_init(H2O_STRLIT("weft/" WEFT_VERSION));
    /* h2o answers 413 itself once a body passes this, before any handler. */
    /* Each route's max_body is enforced by weft (http/): limits.max_body is
     * only their default, and a route may allow more. */
    proc.h2o.max_request_entity_size = (size_t)1 << 40;
    proc.h2o.http1.req_timeout = (uint64_t)cfg->limits.request_timeout_ms;
    /* h2o's own 5 s: between two reads of a request (its head or body), and
     * a write that makes no progress. Left at 5 s it closed an HTTP/1 body
     * that paused, without an answer, before weft's 408 at 3/4 of
     * request_timeout_ms (http/http.c), and an idle keep-alive connection
     * before request_timeout_ms. Restart-only, as request_timeout_ms is. */
    proc.h2o.http1.req_io_timeout = (uint64_t)cfg->limits.request_timeout_ms;
    proc.h2o.http2.idle_timeout = (uint64_t)cfg->limits.idle_timeout_ms;
    /* Static routes: each loop keeps the files it opened for up to 0.1 s
     * (core/loop.c empties the cache every tick), sized as h2o's own server
     * sizes it; without it every request opens and stats its file again. */
    proc.h2o.filecache.capacity = proc.h2o.http2.max_concurrent_requests_per_connection * 2;
    /* The main listeners see only this host list, so no Host header can
     * reach the admin endpoints through them. */
    proc.main_hosts[0] = h2o_config_register_host(&proc.h2o, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(proc.main_hosts[0], "/", 0);
    if (cfg->log.access_log != NULL) /* before anything that may answer: the line's duration starts here */
        weft_respond_register(path, weft_accesslog_stamp);
    weft_respond_register(path, weft_framing_check);
    weft_observe_register(path, WEFT_ON_MAIN);
    weft_respond_register(path, weft_dev_intercept);
    weft_http_register(path);
    weft_edge_register(path, serving_config); /* header rules, CORS and compression of every answer on the main host */
    /* h2o lets a body stream only when the path's first handler says so;
     * those before weft's own read the head alone and decline, so the body
     * reaches http/ as it arrives (streamed or collected there, per route). */
    for (size_t i = 0; i < path->handlers.size; i++)
        path->handlers.entries[i]->supports_request_streaming = 1;
    proc.admin_hosts[0] = h2o_config_register_host(&proc.h2o, h2o_iovec_init(H2O_STRLIT("weft-admin")), 65535);
    h2o_pathconf_t *admin = h2o_config_register_path(proc.admin_hosts[0], "/", 0);
    weft_respond_register(admin, weft_framing_check);
    weft_respond_register(admin, weft_admin_guard);
    weft_observe_register(admin, WEFT_ON_ADMIN);
    weft_respond_register(admin, weft_dev_admin);
    weft_admin_register(admin);
    weft_respond_request_ids(cfg->log.request_id_header, cfg->log.access_log != NULL);
    if (cfg->log.access_log != NULL) {
        /* Apache's combined format, then the request id plugins log with. */
        char fmt[128];
        snprintf(fmt, sizeof(fmt), "%s %s", "%h %l %u %t \"%r\" %s %b \"%{Referer}i\" \"%{User-agent}i\"",
                 weft_respond_request_id_logfield());
        /* weft's own logger: reopened on SIGUSR1 and reloads (ops/accesslog.h). */
        char why[512];
        if (weft_accesslog_open(path, cfg->log.access_log, fmt, why, sizeof(why)) != 0)
            weft_log_error("%s: log.access_log: %s; serving without an access log", cfg->path, why);
        /* h2o's own answers to requests it refuses (400s) come from the
         * host's fallback path, not from the one weft's handlers are on. */
        else if (weft_accesslog_cover(&proc.main_hosts[0]->fallback_path) != 0)
            weft_log_error("%s: log.access_log: out of memory: h2o's own 400s are not logged", cfg->path);
    }
}

/* Waits until the loops have finished, or (deadline_ns > 0) until then;
 * a second SIGTERM/SIGINT means "now". */
static void wait_for_loops(uint64_t deadline_ns)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    uint64_t now = 0;
    while (weft_loops_running() > 0 && (deadline_ns == 0 || (now = weft_now_ns()) < deadline_ns)) {
        uint64_t left = deadline_ns == 0 ? UINT64_MAX : deadline_ns - now;
        struct timespec ts = {0, left < 100000000u ? (long)left : 100000000L};
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGTERM || sig == SIGINT) {
            weft_log_warn("second signal during shutdown: exiting immediately");
            _exit(1);
        }
        weft_control_reap(); /* old generations released by the draining loops */
    }
}

/* shutdown.unready_ms: a load balancer that health-checks /health/ready
 * (HAProxy's httpchk, a Kubernetes readiness probe) takes the replica out
 * on the 503 while it still accepts; closing the listeners first would
 * reset the connections already in their queues and refuse the ones the
 * balancer still sends. Not after a hand-over: the new process serves the
 * same sockets, so nothing is refused. */
static void announce_stop(int sig, int unready_ms)
{
    if (unready_ms <= 0)
        return;
    weft_loops_announce_stop();
    weft_log_info("%s: not ready: /health/ready answers 503 for %d ms (shutdown.unready_ms) while serving on, "
                  "then the listeners close",
                  strsignal(sig), unready_ms);
    wait_for_loops(weft_now_ns() + (uint64_t)unready_ms * 1000000u);
}

static int fail_bound(int *fds, size_t n, int admin_fd)
{
    weft_listeners_close(fds, n);
    if (admin_fd >= 0)
        close(admin_fd);
    free(fds);
    for (size_t k = 0; k < proc.n_extra; k++)
        close(proc.extra[k].fd);
    free(proc.extra);
    proc.extra = NULL;
    proc.n_extra = 0;
    return 1;
}

/* Login sessions and systemd keep the soft RLIMIT_NOFILE at 1024 for the
 * sake of select(); a program that needs more raises it to the hard limit
 * itself (systemd's advice, and what Go's runtime does). weft waits with
 * epoll and poll only. With fewer descriptors than max_connections they run
 * out before idle connections are evicted to admit new clients, and a pile
 * of idle sockets locks new clients out again: say so. The margin is for
 * listeners, database connections, logs and plugins. */
static void raise_fd_limit(const weft_config *cfg)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur != rl.rlim_max) {
        struct rlimit want = {.rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &want) == 0)
            rl = want;
    }
    rlim_t need = (rlim_t)cfg->limits.max_connections + 256;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need)
        weft_log_warn("only %llu file descriptors allowed (RLIMIT_NOFILE) for limits.max_connections = %d: they run "
                      "out before idle connections are evicted to admit new clients; raise the hard limit "
                      "(LimitNOFILE=, ulimit -Hn) to %llu or lower limits.max_connections",
                      (unsigned long long)rl.rlim_cur, cfg->limits.max_connections, (unsigned long long)need);
}

/* Every folder's loop hooks, before the loops start. */
static void attach_hooks(const weft_config *cfg)
{
    weft_loop_add_hook(&gen_hook);
    weft_loop_add_hook(&weft_static_cache_hook);
    weft_dispatch_attach(cfg->coroutine.stack_size);
    weft_db_attach();
    weft_db_tx_attach();
    weft_outbound_attach();
    weft_ws_attach();
    weft_ptimers_attach();
    weft_trim_attach();
    weft_backlog_attach();
}

static void start_loops(weft_generation *gen, int n, int *fds, int admin_fd)
{
    weft_config *cfg = gen->cfg;
    weft_loops_conf lc = {.h2o = &proc.h2o,
                          .main_hosts = proc.main_hosts,
                          .admin_hosts = proc.admin_hosts,
                          .admin_fd = admin_fd,
                          .fds = fds,
                          .n_listen = cfg->n_listen,
                          .extra = proc.extra,
                          .n_extra = proc.n_extra,
                          .tls = (SSL_CTX *const *)gen->tls,
                          .max_connections = (size_t)cfg->limits.max_connections};
    int proxied[cfg->n_listen + 1]; /* listen[].proxy_protocol: copied by weft_loops_start */
    for (size_t i = 0; i < cfg->n_listen; i++)
        proxied[i] = cfg->listen[i].proxy_protocol;
    lc.proxy_protocol = proxied;
    lc.proxy_timeout_ms = (unsigned)cfg->limits.request_timeout_ms;
    weft_peers_set_limit((unsigned)cfg->limits.max_connections_per_ip);
    weft_trace_configure(cfg);
    if (weft_loops_start(n, &lc) != 0)
        weft_fatal("out of memory starting the event loops");
}

static void pass_listeners(const weft_config *cfg, int n, const int *fds, size_t n_fds, int admin_fd)
{
    /* What a SIGUSR2 hands to the next process: the loops close them only when they stop. */
    proc.passed = malloc((n_fds + proc.n_extra + 1) * sizeof(int));
    if (proc.passed == NULL)
        weft_fatal("out of memory");
    /* Address-major, as the next process claims them: each address's loops
     * in order, then the sockets beyond them in the order they came (the
     * order of their SO_REUSEPORT group, which the next one steers by). */
    size_t np = 0;
    for (size_t i = 0; i < cfg->n_listen; i++) {
        for (int t = 0; t < n; t++)
            proc.passed[np++] = fds[(size_t)t * cfg->n_listen + i];
        for (size_t k = 0; k < proc.n_extra; k++)
            if (proc.extra[k].listener == i)
                proc.passed[np++] = proc.extra[k].fd;
    }
    if (admin_fd >= 0)
        proc.passed[np++] = admin_fd;
    weft_handover_set_listeners(proc.passed, np);
}

/* SIGTERM/SIGINT, or SIGUSR2 once the next process took over: the loops
 * drain, then everything is torn down (or left, if handlers still hold loop
 * memory after the grace period). */
static int stop_serving(int sig)
{
    if (sig != SIGUSR2)
        announce_stop(sig, weft_reload_serving()->cfg->shutdown.unready_ms);
    int grace_s = weft_reload_serving()->cfg->shutdown.grace_s;
    weft_log_info("%s: stopping; in-flight requests get up to %d s to finish",
                  sig == SIGUSR2 ? "handed over" : strsignal(sig), grace_s);
    weft_handover_set_listeners(NULL, 0);
    weft_loops_stop(grace_s);
    wait_for_loops(0);
    if (weft_loops_join()) {
        /* Handlers still own loop memory: tearing it down would be unsafe. */
        weft_control_cleanup();
        weft_log_info("stopped (requests abandoned after the grace period)");
        _exit(0);
    }
    weft_loops_free();
    weft_otlp_shutdown(); /* after the loops: their last spans go out too */
    weft_reload_shutdown();
    weft_control_reap();
    weft_control_cleanup();
    free(proc.passed);
    proc.passed = NULL;
    free(proc.extra);
    proc.extra = NULL;
    proc.n_extra = 0;
    h2o_config_dispose(&proc.h2o);
    weft_accesslog_close();
    weft_module_cleanup();
    weft_log_info("stopped");
    return 0;
}

int weft_server_run(weft_generation *gen)
{
    weft_config *cfg = gen->cfg;
    weft_log_set_level(cfg->log.level);
    signal(SIGPIPE, SIG_IGN);
    int n = cfg->threads, admin_fd = -1;
    int *fds = NULL;
    size_t n_fds = (size_t)n * cfg->n_listen;
    raise_fd_limit(cfg);
    if (weft_listeners_bind(cfg, n, &fds, &proc.extra, &proc.n_extra) != 0)
        return 1;
    if (cfg->admin.enabled && weft_listeners_bind_admin(cfg, &admin_fd) != 0 && !cfg->admin.is_default)
        return fail_bound(fds, n_fds, -1);
    weft_inherited_release(cfg->path); /* systemd's sockets no address took */
    /* Ports below 1024 and root-only key files are dealt with; nothing after
     * this point needs root. */
    if (weft_privileges_drop(cfg) != 0 || weft_control_init(gen) != 0)
        return fail_bound(fds, n_fds, admin_fd);
    h2o_setup(cfg);
    proc.first = gen;
    attach_hooks(cfg);
    start_loops(gen, n, fds, admin_fd);
    weft_generation_start_timers(gen);
    weft_listeners_announce(cfg, fds);
    pass_listeners(cfg, n, fds, n_fds, admin_fd);
    free(fds);
    weft_log_info("weft %s serving %zu route(s) from %zu plugin(s) on %d event loop thread(s)", WEFT_VERSION,
                  gen->n_routes, gen->n_modules, n);

    int sig = weft_control_run(); /* reloads until SIGTERM/SIGINT */

    return stop_serving(sig);
}
