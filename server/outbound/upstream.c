#include "outbound/outbound.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/log.h"

/* Idle pooled connections close after this; shorter than the keep-alive of
 * common servers (h2o 10 s, nginx 75 s), so a pooled socket is rarely one
 * the upstream is closing at the same moment. */
#define POOL_IDLE_MS 2000
/* h2o's own I/O timeout per read or write: a safety net behind the call's
 * connect and total timeouts, which are weft timers. */
#define IO_TIMEOUT_MS 120000

struct weft_upstream {
    weft_upstream *next;
    weft_loop *loop;
    char *host, *ca_file;
    uint16_t port;
    int is_ssl;
    h2o_socketpool_t sockpool;
    h2o_httpclient_connection_pool_t connpool;
    h2o_httpclient_ctx_t ctx;
    SSL_CTX *ssl;
    size_t active, max;
    h2o_linklist_t waiting;
    weft_timer kick;
};

/* Per loop. */
typedef struct weft_outbound {
    h2o_multithread_receiver_t getaddr; /* h2o's resolver threads answer here */
    weft_upstream *upstreams;
} weft_outbound;

static int same(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Certificate chain and host name both verified by OpenSSL, in the context's
 * verify parameters (one context per upstream, so one name each), whatever
 * h2o's socket layer checks besides. ALPN offers h2 and http/1.1: the
 * upstream picks. */
static SSL_CTX *client_tls(const char *host, const char *ca_file, const char **why)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        *why = "cannot create a TLS context";
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    X509_VERIFY_PARAM *vp = SSL_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    /* an IP literal is matched against IP addresses in the certificate */
    static const unsigned char alpn[] = "\x02h2\x08http/1.1";
    if (SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1) != 0) {
        *why = "cannot set the ALPN protocols";
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (X509_VERIFY_PARAM_set1_ip_asc(vp, host) != 1 && X509_VERIFY_PARAM_set1_host(vp, host, 0) != 1) {
        *why = "cannot set the name to verify";
        SSL_CTX_free(ctx);
        return NULL;
    }
    int ok = ca_file != NULL ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL) : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
        *why = ca_file != NULL ? "cannot load the CA file" : "cannot load the system CA store";
        ERR_clear_error();
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static void on_kick(weft_timer *t);

WEFT_LOOP_SLOT(outbound_slot) /* the loop's weft_outbound */

weft_upstream *weft_upstream_get(weft_loop *L, const weft_fetch *f, const char **why)
{
    weft_outbound *o = weft_loop_get(L, outbound_slot);
    for (weft_upstream *u = o->upstreams; u != NULL; u = u->next)
        if (u->port == f->port && u->is_ssl == f->is_ssl && strcmp(u->host, f->host) == 0 && same(u->ca_file, f->ca_file))
            return u;
    weft_upstream *u = calloc(1, sizeof(*u));
    *why = "out of memory";
    if (u == NULL || (u->host = strdup(f->host)) == NULL || (f->ca_file != NULL && (u->ca_file = strdup(f->ca_file)) == NULL))
        goto fail;
    if (f->is_ssl && (u->ssl = client_tls(f->host, f->ca_file, why)) == NULL)
        goto fail;
    u->loop = L;
    u->port = f->port;
    u->is_ssl = f->is_ssl;
    u->max = (size_t)f->max_connections;
    h2o_linklist_init_anchor(&u->waiting);
    /* The pool's one target: this scheme, host and port (the path is not used). */
    h2o_url_t origin;
    if (h2o_url_init_with_hostport(&origin, NULL, u->is_ssl ? &H2O_URL_SCHEME_HTTPS : &H2O_URL_SCHEME_HTTP,
                                   h2o_iovec_init(u->host, strlen(u->host)), u->port, h2o_iovec_init(H2O_STRLIT("/"))) != 0) {
        *why = "the host is not valid in a URL";
        goto fail;
    }
    h2o_socketpool_target_t *target = h2o_socketpool_create_target(&origin, NULL);
    free(origin.authority.base); /* host points into it, path is static; the target has its copies */
    h2o_socketpool_init_specific(&u->sockpool, u->max, &target, 1, NULL);
    h2o_socketpool_set_timeout(&u->sockpool, POOL_IDLE_MS);
    if (u->ssl != NULL)
        h2o_socketpool_set_ssl_ctx(&u->sockpool, u->ssl);
    h2o_socketpool_register_loop(&u->sockpool, L->evloop);
    h2o_httpclient_connection_pool_init(&u->connpool, &u->sockpool);
    u->ctx = (h2o_httpclient_ctx_t){.loop = L->evloop,
                                    .getaddr_receiver = &o->getaddr,
                                    .io_timeout = IO_TIMEOUT_MS,
                                    .connect_timeout = IO_TIMEOUT_MS, /* the call's own timer comes first */
                                    .first_byte_timeout = IO_TIMEOUT_MS,
                                    .keepalive_timeout = POOL_IDLE_MS,
                                    .max_buffer_size = 64 * 1024,
                                    .protocol_selector = {.ratio = {.http2 = -1}},
                                    .http2 = {.max_concurrent_streams = 100}};
    u->next = o->upstreams;
    o->upstreams = u;
    return u;
fail:
    if (u != NULL) {
        free(u->host);
        free(u->ca_file);
        free(u);
    }
    return NULL;
}

static void run(weft_upstream *u, weft_fetch *f)
{
    u->active++;
    f->active = 1;
    f->go(f, &u->connpool, &u->ctx);
}

void weft_upstream_submit(weft_upstream *u, weft_fetch *f)
{
    if (u->active < u->max && h2o_linklist_is_empty(&u->waiting)) {
        run(u, f);
        return;
    }
    h2o_linklist_insert(&u->waiting, &f->queued);
}

/* A slot freed inside an h2o callback: the connection goes back to the pool
 * only when that callback returns, so the next call starts a turn later and
 * finds it there. */
static void on_kick(weft_timer *t)
{
    weft_upstream *u = H2O_STRUCT_FROM_MEMBER(weft_upstream, kick, t);
    while (u->active < u->max && !h2o_linklist_is_empty(&u->waiting)) {
        weft_fetch *f = H2O_STRUCT_FROM_MEMBER(weft_fetch, queued, u->waiting.next);
        h2o_linklist_unlink(&f->queued);
        run(u, f);
    }
}

void weft_upstream_release(weft_upstream *u, weft_fetch *f)
{
    if (h2o_linklist_is_linked(&f->queued))
        h2o_linklist_unlink(&f->queued);
    if (f->active) {
        f->active = 0;
        u->active--;
        if (!h2o_linklist_is_empty(&u->waiting) && u->kick.heap_index == 0 &&
            weft_timers_add(u->loop->timers, &u->kick, 0, on_kick) != 0)
            weft_log_error("outbound: out of memory for a timer; calls queued for %s wait for the next one", u->host);
    }
}

/* ---- per-loop state ---- */

static int outbound_setup(weft_loop *L)
{
    weft_outbound *o = calloc(1, sizeof(*o));
    if (o == NULL)
        return -1;
    h2o_multithread_register_receiver(L->queue, &o->getaddr, h2o_hostinfo_getaddr_receiver);
    weft_loop_set(L, outbound_slot, o);
    return 0;
}

/* Idle HTTP/2 upstream connections have no close of their own in h2o's
 * API, and their keep-alive timer would outlive the loop: shutting their
 * sockets down makes h2o's next read fail, and h2o closes and frees each
 * one on that turn. Bounded: a connection that does not go is left. */
static void close_http2_connections(weft_loop *L, weft_outbound *o)
{
    int open = 0;
    for (weft_upstream *u = o->upstreams; u != NULL; u = u->next)
        for (h2o_linklist_t *l = u->connpool.http2.conns.next; l != &u->connpool.http2.conns; l = l->next) {
            h2o_httpclient__h2_conn_t *c = H2O_STRUCT_FROM_MEMBER(h2o_httpclient__h2_conn_t, link, l);
            shutdown(h2o_socket_get_fd(c->sock), SHUT_RDWR);
            open = 1;
        }
    for (int turn = 0; open && turn < 100; turn++) {
        h2o_evloop_run(L->evloop, 10);
        open = 0;
        for (weft_upstream *u = o->upstreams; u != NULL; u = u->next)
            open |= !h2o_linklist_is_empty(&u->connpool.http2.conns);
    }
}

/* After the loop drained: no call runs, only idle pooled connections. */
static void outbound_teardown(weft_loop *L)
{
    weft_outbound *o = weft_loop_get(L, outbound_slot);
    if (o == NULL)
        return;
    close_http2_connections(L, o);
    while (o->upstreams != NULL) {
        weft_upstream *u = o->upstreams;
        o->upstreams = u->next;
        weft_timers_cancel(L->timers, &u->kick);
        h2o_socketpool_dispose(&u->sockpool);
        SSL_CTX_free(u->ssl);
        free(u->host);
        free(u->ca_file);
        free(u);
    }
    h2o_multithread_unregister_receiver(L->queue, &o->getaddr);
    free(o);
    weft_loop_set(L, outbound_slot, NULL);
}

static const weft_loop_hook outbound_hook = {.setup = outbound_setup, .teardown = outbound_teardown};

void weft_outbound_attach(void) { weft_loop_add_hook(&outbound_hook); }
