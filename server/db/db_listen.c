/*
 * LISTEN/NOTIFY for plugins (the db group's version 2).
 *
 * A notification reaches only sessions that listen, and only between their
 * transactions, so listening needs a session of its own: each loop opens
 * one listener connection (a single-connection weft_dbloop, no pipelined
 * statements of requests on it) the first time one of its requests
 * listens, to database.listen_conninfo or else the conninfo. Every channel
 * a request of the loop listens to is LISTENed there once; each
 * registration (request, channel, function, argument) gets the
 * notifications of its channel on that loop thread. After a reconnect the
 * loop LISTENs again on every channel (logged, weft_db_relistens_total);
 * what was notified in between is lost, as PostgreSQL has no backlog for a
 * session that was not there.
 *
 * A registration belongs to its request: unlisten, or the request's end,
 * removes it from any thread. Its mutex is held while its function runs,
 * so that once unlisten returns the function neither runs nor will (the
 * plugin may free what `arg` points to); the loop unlinks it later, by a
 * message.
 *
 * notify is db_notify.c's.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/db_tx.h"
#include "base/log.h"
#include "core/loop.h"
#include "dispatch/await.h"
#include "dispatch/dispatch.h"
#include "request/route.h"

#define MAX_CHANNEL 63 /* NAMEDATALEN - 1 */

typedef struct lreg lreg;
typedef struct listener listener;

typedef struct lchan {
    struct lchan *next;
    lreg *regs;
    char name[MAX_CHANNEL + 1];
} lchan;

struct listener {
    listener *next;
    weft_loop *loop;
    weft_dbloop *d;
    weft_db_cfg cfg; /* as the route had it: a reload with other settings gets another listener */
    lchan *chans;
    size_t n_regs;
    lreg *pending; /* listens waiting for the connection to come up */
};

typedef struct listen_op listen_op;

struct lreg {
    pthread_mutex_t mu; /* held while `fn` runs; recursive: fn may unlisten itself (reactive) */
    int active;
    atomic_int refs;
    weft_db_notify_fn fn;
    void *arg;
    char channel[MAX_CHANNEL + 1];
    weft_req *r;
    lreg *req_next; /* the request's registrations (its handler's thread) */
    /* loop side */
    listener *l;
    lreg *chan_next, *pending_next;
    int attached, posted;
    listen_op *op; /* the listen waiting for its LISTEN, or NULL */
    weft_msg msg;
};

struct listen_op {
    weft_await a; /* first: the await's callbacks get it back as a listen_op */
    lreg *reg;
    weft_callback cb; /* reactive form */
    void *arg;
};

WEFT_REQ_SLOT(listen_req_slot, lreg *)
WEFT_LOOP_SLOT(listener_slot)

/* ---- names and payloads ---- */

int weft_db_channel_ok(const char *channel)
{
    size_t n = channel != NULL ? strlen(channel) : 0;
    if (n == 0 || n > MAX_CHANNEL || !((channel[0] >= 'a' && channel[0] <= 'z') ||
                                       (channel[0] >= 'A' && channel[0] <= 'Z') || channel[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++) {
        char c = channel[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
            return 0;
    }
    return 1;
}

int weft_db_channel_refused(weft_req *r, const char *call, const char *channel)
{
    if (weft_db_channel_ok(channel))
        return 0;
    weft_log_error("%s: %s: channel \"%.80s\" is not a valid name (1 to 63 letters, digits and _, not starting "
                   "with a digit)",
                   r->route->label, call, channel != NULL ? channel : "(null)");
    return 1;
}

/* ---- registrations ---- */

static void reg_unref(lreg *g)
{
    if (atomic_fetch_sub(&g->refs, 1) == 1) {
        pthread_mutex_destroy(&g->mu);
        free(g);
    }
}

static lreg *reg_new(weft_req *r, const char *channel, weft_db_notify_fn fn, void *arg)
{
    lreg *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return NULL;
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&g->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    g->active = 1;
    atomic_init(&g->refs, 1); /* the request's */
    g->fn = fn;
    g->arg = arg;
    snprintf(g->channel, sizeof(g->channel), "%s", channel);
    g->r = r;
    return g;
}

static lreg **req_regs(weft_req *r) { return (lreg **)weft_req_ext(r, listen_req_slot); }

static void on_detach_msg(weft_msg *m);

/* Loop thread: the listen waiting for g's LISTEN (if any) is over. */
static void finish_op(lreg *g, int rc)
{
    listen_op *op = g->op;
    g->op = NULL;
    if (op != NULL)
        weft_await_done(&op->a, rc);
}

/* From the thread running r's handler: the function never runs again, the
 * loop lets go of the registration later. */
static void reg_release(lreg *g)
{
    /* A reactive listen still waiting for its LISTEN ends now, while its
     * request is still there to be called back (the request may be ending). */
    if (weft_loop_current == g->r->loop && g->op != NULL)
        finish_op(g, WEFT_CANCELLED);
    pthread_mutex_lock(&g->mu);
    g->active = 0;
    pthread_mutex_unlock(&g->mu);
    atomic_fetch_add(&g->refs, 1); /* the message's */
    g->posted = 1;
    weft_loop_post(g->r->loop, &g->msg, on_detach_msg);
    reg_unref(g);
}

static void release_all(weft_req *r, void *arg)
{
    (void)arg;
    lreg *g = *req_regs(r);
    *req_regs(r) = NULL;
    while (g != NULL) {
        lreg *next = g->req_next;
        reg_release(g);
        g = next;
    }
}

/* ---- the loop's listener ---- */

static void listener_up(void *ctx, uint64_t epoch);
static void listener_notify(void *ctx, const char *channel, const char *payload);
static void listener_down(void *ctx);

static lchan *chan_find(listener *l, const char *name)
{
    for (lchan *c = l->chans; c != NULL; c = c->next)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

static void on_listen_result(void *arg, int rc, PGresult *res)
{
    lreg *g = arg;
    if (rc != WEFT_OK && rc != WEFT_CANCELLED && g->l != NULL) /* cancelled: its loop is stopping */
        weft_log_error("database (loop %d listener): LISTEN %s failed: %s", g->l->loop->index, g->channel,
                       res != NULL ? PQresultErrorMessage(res) : "no answer");
    PQclear(res);
    finish_op(g, rc);
    reg_unref(g);
}

static void on_relisten(void *arg, int rc, PGresult *res)
{
    listener *l = arg;
    if (rc != WEFT_OK && rc != WEFT_CANCELLED)
        weft_log_error("database (loop %d listener): LISTEN again after a reconnect failed: %s", l->loop->index,
                       res != NULL ? PQresultErrorMessage(res) : "no answer");
    PQclear(res);
}

/* "LISTEN <channel>" (or UNLISTEN), the name quoted by libpq on the live connection. */
static int listen_sql(listener *l, const char *verb, const char *channel, char *out, size_t size)
{
    PGconn *pg = weft_dbloop_pg(l->d);
    char *q = pg != NULL ? PQescapeIdentifier(pg, channel, strlen(channel)) : NULL;
    if (q == NULL)
        return -1;
    snprintf(out, size, "%s %s", verb, q);
    PQfreemem(q);
    return 0;
}

/* Sends g's LISTEN now (connection up) or once it is (pending). */
static void send_listen(listener *l, lreg *g)
{
    char sql[MAX_CHANNEL * 2 + 16];
    if (!weft_dbloop_ready(l->d)) {
        g->pending_next = l->pending;
        l->pending = g;
        return;
    }
    if (listen_sql(l, "LISTEN", g->channel, sql, sizeof(sql)) != 0) {
        finish_op(g, WEFT_UNAVAILABLE);
        return;
    }
    atomic_fetch_add(&g->refs, 1); /* the statement's */
    weft_dbloop_query(l->d, sql, 0, NULL, on_listen_result, g);
}

static void listener_up(void *ctx, uint64_t epoch)
{
    listener *l = ctx;
    char sql[MAX_CHANNEL * 2 + 16];
    size_t n = 0;
    if (epoch > 1) {
        for (lchan *c = l->chans; c != NULL; c = c->next)
            if (listen_sql(l, "LISTEN", c->name, sql, sizeof(sql)) == 0) {
                weft_dbloop_query(l->d, sql, 0, NULL, on_relisten, l);
                n++;
            }
        weft_db_metric_relisten();
        weft_log_info("database (loop %d listener): connection re-established; LISTEN again on %zu channel(s) "
                      "(notifications sent meanwhile are lost)",
                      l->loop->index, n);
    }
    lreg *g = l->pending;
    l->pending = NULL;
    while (g != NULL) {
        lreg *next = g->pending_next;
        send_listen(l, g);
        g = next;
    }
}

/* Every connection of the listener failed: listens waiting for it fail too. */
static void listener_down(void *ctx)
{
    listener *l = ctx;
    lreg *g = l->pending;
    l->pending = NULL;
    for (; g != NULL; g = g->pending_next)
        finish_op(g, WEFT_UNAVAILABLE);
}

static void listener_notify(void *ctx, const char *channel, const char *payload)
{
    listener *l = ctx;
    weft_db_metric_notification();
    lchan *c = chan_find(l, channel);
    if (c == NULL)
        return;
    size_t len = strlen(payload);
    /* A function may listen (reactive): new registrations go in front, so
     * the walk goes on where it was. Unlisten only marks them. */
    for (lreg *g = c->regs; g != NULL; g = g->chan_next) {
        pthread_mutex_lock(&g->mu);
        if (g->active)
            g->fn(g->arg, channel, payload, len);
        pthread_mutex_unlock(&g->mu);
    }
}

/* The listener for `cfg` on L, opened on first use; NULL out of memory. */
static listener *listener_for(weft_loop *L, const weft_db_cfg *cfg)
{
    for (listener *l = weft_loop_get(L, listener_slot); l != NULL; l = l->next)
        if (weft_db_cfg_equal(&l->cfg, cfg))
            return l;
    listener *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return NULL;
    weft_db_cfg_copy(&l->cfg, cfg);
    /* Its own session: one connection, unnamed statements, and, unless it
     * goes straight to PostgreSQL, no startup option (a session pooler). */
    weft_db_cfg own = l->cfg;
    own.loop_connections = 1;
    own.unnamed = 1;
    if (own.listen_conninfo != NULL || own.pooler != WEFT_POOLER_NONE)
        own.pooler = WEFT_POOLER_SESSION;
    l->loop = L;
    l->d = weft_dbloop_new_to(L, &own, own.listen_conninfo);
    if (l->d == NULL) {
        weft_db_cfg_release(&l->cfg);
        free(l);
        return NULL;
    }
    weft_dbloop_watch(l->d, listener_up, listener_down, listener_notify, l);
    l->next = weft_loop_get(L, listener_slot);
    weft_loop_set(L, listener_slot, l);
    return l;
}

static void attach(listener *l, lreg *g)
{
    lchan *c = chan_find(l, g->channel);
    if (c == NULL) {
        c = calloc(1, sizeof(*c));
        if (c == NULL) {
            finish_op(g, WEFT_UNAVAILABLE);
            return;
        }
        snprintf(c->name, sizeof(c->name), "%s", g->channel);
        c->next = l->chans;
        l->chans = c;
        weft_db_metric_listen_channels(1);
    }
    g->chan_next = c->regs;
    c->regs = g;
    g->l = l;
    g->attached = 1;
    atomic_fetch_add(&g->refs, 1); /* the channel's */
    l->n_regs++;
    /* Every registration sends its own LISTEN (the same channel again is a
     * no-op for PostgreSQL): once it is answered, the channel is surely
     * listened to, whatever was sent before. */
    send_listen(l, g);
}

/* Loop thread: out of its channel (UNLISTEN when it was the last) and the pending list. */
static void detach(lreg *g)
{
    listener *l = g->l;
    if (!g->attached)
        return;
    g->attached = 0;
    for (lreg **pp = &l->pending; *pp != NULL; pp = &(*pp)->pending_next)
        if (*pp == g) {
            *pp = g->pending_next;
            break;
        }
    finish_op(g, WEFT_CANCELLED);
    lchan **cp = &l->chans;
    while (*cp != NULL && strcmp((*cp)->name, g->channel) != 0)
        cp = &(*cp)->next;
    lchan *c = *cp;
    for (lreg **pp = &c->regs; *pp != NULL; pp = &(*pp)->chan_next)
        if (*pp == g) {
            *pp = g->chan_next;
            break;
        }
    l->n_regs--;
    if (c->regs == NULL) {
        char sql[MAX_CHANNEL * 2 + 16];
        if (listen_sql(l, "UNLISTEN", c->name, sql, sizeof(sql)) == 0)
            weft_dbloop_query(l->d, sql, 0, NULL, on_relisten, l);
        *cp = c->next;
        free(c);
        weft_db_metric_listen_channels(-1);
    }
    reg_unref(g); /* the channel's */
}

static void on_detach_msg(weft_msg *m)
{
    lreg *g = H2O_STRUCT_FROM_MEMBER(lreg, msg, m);
    detach(g);
    reg_unref(g); /* the message's */
}

/* ---- listen: an operation on the request's loop ---- */

static void start_listen(weft_await *a)
{
    listen_op *op = (listen_op *)a;
    listener *l = listener_for(a->r->loop, a->r->route->db_cfg);
    if (l == NULL) {
        weft_await_done(a, WEFT_UNAVAILABLE);
        return;
    }
    if (!weft_dbloop_ready(l->d) && !weft_dbloop_connecting(l->d)) {
        weft_await_done(a, WEFT_UNAVAILABLE); /* down, between reconnect attempts: fail fast */
        return;
    }
    op->reg->op = op;
    attach(l, op->reg);
}

static void cancel_listen(weft_await *a)
{
    listen_op *op = (listen_op *)a;
    if (op->reg->op == op)
        finish_op(op->reg, WEFT_CANCELLED);
}

/* The checks every form makes; 0 to go on, else the rc to answer. */
static int listen_refused(weft_req *r, const char *call, const char *channel, weft_db_notify_fn fn)
{
    static atomic_int told_pooler;
    if (weft_req_cancelled(r))
        return WEFT_CANCELLED;
    if (weft_db_channel_refused(r, call, channel))
        return WEFT_ERROR;
    if (fn == NULL) {
        weft_log_error("%s: %s: no notification function", r->route->label, call);
        return WEFT_ERROR;
    }
    if (weft_route_dbpool(r->route) == NULL)
        return WEFT_UNAVAILABLE; /* no database configured: db_query says why */
    const weft_db_cfg *cfg = r->route->db_cfg;
    if (cfg->pooler == WEFT_POOLER_TRANSACTION && cfg->listen_conninfo == NULL) {
        if (!atomic_exchange(&told_pooler, 1))
            weft_log_error("%s: %s: database.pooler = \"transaction\" hands each transaction to any server "
                           "connection, and a notification reaches only the session that listens: set "
                           "database.listen_conninfo to a direct (or session-pooled) connection; answering "
                           "WEFT_ERROR",
                           r->route->label, call);
        return WEFT_ERROR;
    }
    return 0;
}

/* A new registration of r's, in its list; the request's end releases them all. */
static lreg *reg_add(weft_req *r, const char *channel, weft_db_notify_fn fn, void *arg)
{
    if (*req_regs(r) == NULL && weft_req_defer(r, release_all, NULL) != 0)
        return NULL;
    lreg *g = reg_new(r, channel, fn, arg);
    if (g == NULL)
        return NULL;
    g->req_next = *req_regs(r);
    *req_regs(r) = g;
    return g;
}

static int reg_remove(weft_req *r, lreg *g)
{
    for (lreg **pp = req_regs(r); *pp != NULL; pp = &(*pp)->req_next)
        if (*pp == g) {
            *pp = g->req_next;
            reg_release(g);
            return 1;
        }
    return 0;
}

int weft_db_listen(weft_req *r, const char *channel, weft_db_notify_fn fn, void *arg)
{
    int rc = listen_refused(r, "db->listen()", channel, fn);
    if (rc != 0)
        return rc;
    if (weft_await_refused(r, "db->listen()", "db->listen() with a callback"))
        return WEFT_ERROR;
    lreg *g = reg_add(r, channel, fn, arg);
    if (g == NULL)
        return WEFT_UNAVAILABLE;
    /* `op` lives on the waiter's stack, which stays put until the loop answered. */
    listen_op op = {.a = {.r = r, .start = start_listen, .cancel = cancel_listen}, .reg = g};
    rc = weft_await_block(&op.a);
    if (rc != WEFT_OK)
        reg_remove(r, g);
    return rc;
}

static void listen_complete(weft_await *a)
{
    listen_op *op = (listen_op *)a;
    weft_req *r = a->r;
    int rc = a->rc;
    weft_callback cb = op->cb;
    void *arg = op->arg;
    if (rc != WEFT_OK)
        reg_remove(r, op->reg);
    free(op);
    weft_dispatch_callback(r, cb, arg, rc);
}

/* The handler finished before its LISTEN was answered: the registration
 * goes with the request's others (release_all), the record now. */
static void listen_abandon(weft_await *a) { free(a); }

void weft_db_listen_async(weft_req *r, const char *channel, weft_db_notify_fn fn, void *arg, weft_callback cb,
                          void *cb_arg)
{
    int rc = listen_refused(r, "db->listen()", channel, fn);
    if (rc == 0 && !weft_await_reactive(r)) {
        weft_log_error("%s: db->listen() with a callback outside a reactive handler; pass none", r->route->label);
        rc = WEFT_ERROR;
    }
    listen_op *op = rc == 0 ? calloc(1, sizeof(*op)) : NULL;
    lreg *g = op != NULL ? reg_add(r, channel, fn, arg) : NULL;
    if (g == NULL) {
        free(op);
        cb(r, cb_arg, rc != 0 ? rc : WEFT_UNAVAILABLE);
        return;
    }
    *op = (listen_op){.a = {.r = r, .start = start_listen, .cancel = cancel_listen, .complete = listen_complete, .abandon = listen_abandon},
                      .reg = g,
                      .cb = cb,
                      .arg = cb_arg};
    weft_await_async(&op->a);
}

int weft_db_unlisten(weft_req *r, const char *channel, weft_db_notify_fn fn, void *arg)
{
    for (lreg *g = *req_regs(r); g != NULL; g = g->req_next)
        if (g->fn == fn && g->arg == arg && channel != NULL && strcmp(g->channel, channel) == 0)
            return reg_remove(r, g) ? WEFT_OK : WEFT_ERROR;
    return WEFT_ERROR;
}

/* ---- the loop's listeners end with it ---- */

static void listener_free(listener *l)
{
    weft_dbloop_free(l->d); /* LISTENs still on their way complete, cancelled */
    while (l->chans != NULL) {
        lchan *c = l->chans;
        l->chans = c->next;
        while (c->regs != NULL) {
            lreg *g = c->regs;
            c->regs = g->chan_next;
            g->attached = 0;
            reg_unref(g);
        }
        free(c);
        weft_db_metric_listen_channels(-1);
    }
    weft_db_cfg_release(&l->cfg);
    free(l);
}

void weft_db_listen_close(weft_loop *L)
{
    listener *l = weft_loop_get(L, listener_slot);
    weft_loop_set(L, listener_slot, NULL);
    while (l != NULL) {
        listener *next = l->next;
        listener_free(l);
        l = next;
    }
}

void weft_db_listen_tick(weft_loop *L)
{
    /* A reload with other settings opened a new listener first in the list:
     * the older ones close once nobody listens on them. Never from inside
     * one of their own callbacks, hence the tick. */
    listener *head = weft_loop_get(L, listener_slot);
    if (head == NULL)
        return;
    for (listener **pp = &head->next; *pp != NULL;) {
        listener *l = *pp;
        if (l->n_regs == 0 && l->pending == NULL) {
            *pp = l->next;
            listener_free(l);
        } else {
            pp = &l->next;
        }
    }
}
