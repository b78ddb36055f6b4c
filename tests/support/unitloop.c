#include "unitloop.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dispatch/dispatch.h"
#include "dispatch/workpool.h"
#include "harness.h"
#include "reload/generation.h"

static h2o_globalconf_t globalconf;
static h2o_hostconf_t *no_hosts[1];
static int loops_started, n_loops;
static int generation_set; /* wt_loops_generation: cleared before the loops stop */
static int (*test_on_req)(h2o_handler_t *self, h2o_req_t *req);
static void (*test_register)(h2o_pathconf_t *pathconf);

void wt_loops_hook(const weft_loop_hook *hook) { weft_loop_add_hook(hook); }

void wt_loops_handler(int (*on_req)(h2o_handler_t *self, h2o_req_t *req)) { test_on_req = on_req; }

void wt_loops_register(void (*reg)(h2o_pathconf_t *pathconf)) { test_register = reg; }

/* h2o keeps the accept context's context and hosts for the connection's life. */
static h2o_accept_ctx_t accept_ctx;
static h2o_socket_t *listener; /* loop `listener_loop`'s */
static int listener_loop, listener_port;

static void on_accept(h2o_socket_t *l, const char *err)
{
    h2o_socket_t *sock;
    if (err == NULL && (sock = h2o_evloop_socket_accept(l)) != NULL)
        h2o_accept(&accept_ctx, sock);
}

static void listen_on_loop(void *arg)
{
    int fd = *(int *)arg;
    accept_ctx = (h2o_accept_ctx_t){.ctx = &weft_loop_current->ctx, .hosts = globalconf.hosts};
    listener = h2o_evloop_socket_create(weft_loop_current->evloop, fd, H2O_SOCKET_FLAG_DONT_READ);
    h2o_socket_read_start(listener, on_accept);
}

static void unlisten_on_loop(void *arg)
{
    (void)arg;
    h2o_socket_read_stop(listener);
    h2o_socket_close(listener);
    listener = NULL;
}

/* Loopback TCP, not a socketpair: the server sees an IP peer (127.0.0.1), as http/client_addr.c needs. */
int wt_h1_listen(int i)
{
    if (listener != NULL)
        return listener_port;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    cr_assert_geq(fd, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(fd, 16), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    listener_loop = i;
    listener_port = ntohs(a.sin_port);
    wt_on_loop(i, listen_on_loop, &fd);
    return listener_port;
}

int wt_h1_connect(int i)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)wt_h1_listen(i))};
    int c = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(c, 0);
    cr_assert_eq(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
    return c;
}

void wt_loops_start(int n)
{
    h2o_config_init(&globalconf);
    /* h2o wants a host on every context, even one that never accepts. */
    h2o_hostconf_t *host = h2o_config_register_host(&globalconf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    if (test_register != NULL) {
        test_register(h2o_config_register_path(host, "/", 0));
    } else if (test_on_req != NULL) {
        h2o_handler_t *h = h2o_create_handler(h2o_config_register_path(host, "/", 0), sizeof(*h));
        h->on_req = test_on_req;
        h->supports_request_streaming = 1;
    }
    weft_dispatch_attach(64 * 1024);
    weft_loops_conf conf = {.h2o = &globalconf, .main_hosts = no_hosts, .admin_hosts = no_hosts, .admin_fd = -1,
                            .fds = NULL, .n_listen = 0, .tls = NULL, .max_connections = 100};
    cr_assert_eq(weft_loops_start(n, &conf), 0, "cannot start %d loops", n);
    loops_started = 1;
    n_loops = n;
}

void wt_loops_stop(void)
{
    if (!loops_started)
        return;
    if (generation_set)
        wt_loops_generation(NULL); /* the test's: no loop releases it */
    loops_started = 0;
    if (listener != NULL)
        wt_on_loop(listener_loop, unlisten_on_loop, NULL);
    weft_loops_stop(10);
    cr_assert_eq(weft_loops_join(), 0, "a loop abandoned requests at its deadline");
    weft_loops_free();
    h2o_config_dispose(&globalconf);
}

static void set_generation(void *arg) { weft_generation_set_loop(weft_loop_current, arg); }

void wt_loops_generation(weft_generation *g)
{
    for (int i = 0; i < n_loops; i++)
        wt_on_loop(i, set_generation, g);
    generation_set = g != NULL;
}

typedef struct call_msg {
    weft_msg m;
    void (*fn)(void *arg);
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ran;
} call_msg;

static void on_call(weft_msg *m)
{
    call_msg *c = H2O_STRUCT_FROM_MEMBER(call_msg, m, m);
    c->fn(c->arg);
    pthread_mutex_lock(&c->mu);
    c->ran = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void wt_on_loop(int i, void (*fn)(void *arg), void *arg)
{
    call_msg c = {.fn = fn, .arg = arg};
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    weft_loop_post(weft_loop_at(i), &c.m, on_call);
    pthread_mutex_lock(&c.mu);
    while (!c.ran)
        pthread_cond_wait(&c.cv, &c.mu);
    pthread_mutex_unlock(&c.mu);
    pthread_cond_destroy(&c.cv);
    pthread_mutex_destroy(&c.mu);
}

void wt_route_init(wt_route *rt, const weft_plugin *desc, weft_dispatch dispatch, int pool_size, int queue)
{
    memset(rt, 0, sizeof(*rt));
    rt->cfg = (weft_route_cfg){.path = "/t", .methods = WEFT_M_GET, .plugin = (char *)desc->name,
                               .dispatch = dispatch, .pool = "default", .file = "test.conf", .line = 1};
    rt->route.cfg = &rt->cfg;
    rt->route.desc = desc;
    rt->route.initialised = 1;
    rt->route.stat_slot = -1;
    snprintf(rt->route.label, sizeof(rt->route.label), "route /t (plugin %s)", desc->name);
    if (dispatch == WEFT_DISPATCH_POOL) {
        weft_route_set_pool(&rt->route, weft_workpool_new("default", pool_size, queue));
        cr_assert_not_null(weft_route_pool(&rt->route));
    }
}

void wt_route_fini(wt_route *rt)
{
    if (weft_route_pool(&rt->route) != NULL)
        weft_workpool_free(weft_route_pool(&rt->route));
    weft_route_set_pool(&rt->route, NULL);
}

enum { MAX_DONE = 64 };
static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static wt_done done[MAX_DONE];
static int n_done;

/* Which test request is which: weft_req has no slot of the test's own. */
static struct {
    weft_req *r;
    int id;
} ids[MAX_DONE];

static int id_of(weft_req *r)
{
    int id = -1;
    pthread_mutex_lock(&done_mu);
    for (int i = 0; i < MAX_DONE; i++)
        if (ids[i].r == r) {
            id = ids[i].id;
            ids[i].r = NULL;
            break;
        }
    pthread_mutex_unlock(&done_mu);
    return id;
}

static void on_complete(weft_req *r)
{
    wt_done d = {.id = id_of(r), .rc = r->rc, .status = r->status,
                 .loop = weft_loop_current != NULL ? weft_loop_current->index : -1, .elapsed_ns = weft_req_elapsed_ns(r)};
    snprintf(d.body, sizeof(d.body), "%.*s", (int)r->res_len, r->res_body != NULL ? r->res_body : "");
    for (size_t i = 0; i < r->n_res_headers; i++)
        if (strcmp(r->res_headers[i].name, "retry-after") == 0)
            snprintf(d.retry, sizeof(d.retry), "%s", r->res_headers[i].value);
    weft_req_free(r);
    pthread_mutex_lock(&done_mu);
    if (n_done < MAX_DONE)
        done[n_done++] = d;
    pthread_cond_broadcast(&done_cv);
    pthread_mutex_unlock(&done_mu);
}

weft_req *wt_req_new(wt_route *rt, int loop, int id)
{
    weft_req *r = weft_req_new();
    cr_assert_not_null(r);
    r->method = "GET";
    r->method_bit = WEFT_M_GET;
    r->path = "/t";
    r->route = &rt->route;
    r->loop = weft_loop_at(loop);
    r->on_complete = on_complete;
    pthread_mutex_lock(&done_mu);
    int slot = 0;
    while (slot < MAX_DONE && ids[slot].r != NULL)
        slot++;
    cr_assert_lt(slot, MAX_DONE, "too many requests in flight");
    ids[slot].r = r;
    ids[slot].id = id;
    pthread_mutex_unlock(&done_mu);
    return r;
}

typedef struct start_msg {
    weft_msg m;
    weft_req *r;
} start_msg;

static void on_start(weft_msg *m)
{
    start_msg *s = H2O_STRUCT_FROM_MEMBER(start_msg, m, m);
    weft_req *r = s->r;
    free(s);
    weft_dispatch_start(r);
}

void wt_req_start(weft_req *r)
{
    start_msg *s = calloc(1, sizeof(*s));
    cr_assert_not_null(s);
    s->r = r;
    weft_loop_post(r->loop, &s->m, on_start);
}

const wt_done *wt_wait_done(int n, double limit_ms)
{
    double deadline = wt_now_ms() + limit_ms;
    pthread_mutex_lock(&done_mu);
    while (n_done < n && wt_now_ms() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&done_cv, &done_mu, &ts);
    }
    int got = n_done;
    pthread_mutex_unlock(&done_mu);
    cr_assert_geq(got, n, "%d of %d requests completed within %.0f ms", got, n, limit_ms);
    return done;
}

int wt_done_count(void)
{
    pthread_mutex_lock(&done_mu);
    int n = n_done;
    pthread_mutex_unlock(&done_mu);
    return n;
}

static pthread_mutex_t trace_mu = PTHREAD_MUTEX_INITIALIZER;
static char trace[2048];

void wt_trace(const char *what)
{
    pthread_mutex_lock(&trace_mu);
    size_t n = strlen(trace);
    snprintf(trace + n, sizeof(trace) - n, "%s%s", n ? " " : "", what);
    pthread_mutex_unlock(&trace_mu);
}

const char *wt_trace_text(void)
{
    static char copy[sizeof(trace)];
    pthread_mutex_lock(&trace_mu);
    memcpy(copy, trace, sizeof(copy));
    pthread_mutex_unlock(&trace_mu);
    return copy;
}
