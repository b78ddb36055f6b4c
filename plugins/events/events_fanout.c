/*
 * events with fanout = "postgres": a channel of events across every weft
 * process on one database (PostgreSQL's LISTEN/NOTIFY through the db
 * group's version 2).
 *
 *   GET  ?count=N   text/event-stream: first "event: ready" (the channel is
 *                   listened to), then every event published on the channel,
 *                   "id: K" counting from 1, until N came (default 100000) or
 *                   the client left
 *   POST            the body (text, at most 7999 bytes) is one event for
 *                   every subscriber; 200 {"published":true}, 413 past the
 *                   size, 503 while the database is down
 *
 * A subscriber's notifications arrive on its loop thread (db->listen's
 * callback), outside its handler: they are queued under a mutex and an
 * eventfd wakes the handler, which waits on it with fd->wait under every
 * policy. A subscriber more than 1024 events behind gets "event: overflow"
 * and its stream ends (it reconnects).
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "events.h"

#define MAX_PAYLOAD 7999
#define MAX_QUEUED 1024
#define WAIT_MS 30000

typedef struct note {
    struct note *next;
    char data[]; /* NUL-terminated */
} note;

typedef struct sub {
    pthread_mutex_t mu;
    note *head, *tail;
    size_t queued;
    int overflow;
    int efd;
    long n, count;
    const ev_cfg *cfg;
    int ended; /* reactive: the last flush is on its way */
} sub;

/* ---- options ---- */

int ev_fanout_init(const weft_host *h, weft_init *ctx, ev_cfg *cfg)
{
    const char *fanout = h->init->opt_string(ctx, "fanout", "none");
    if (strcmp(fanout, "none") != 0 && strcmp(fanout, "postgres") != 0) {
        h->init->error(ctx, "fanout: '%s' is not one of none, postgres", fanout);
        return -1;
    }
    cfg->fanout = strcmp(fanout, "postgres") == 0;
    if (!cfg->fanout)
        return 0;
    if (!WEFT_GROUP_AT_LEAST(h->db, 2)) {
        h->init->error(ctx, "fanout = \"postgres\" needs the database group's LISTEN/NOTIFY (version 2)");
        return -1;
    }
    /* "/pool/events" -> "events_pool_events": the same on every replica of the route. */
    char dflt[64];
    size_t n = (size_t)snprintf(dflt, sizeof(dflt), "events");
    for (const char *c = h->init->route(ctx); *c != '\0' && n + 1 < sizeof(dflt); c++)
        dflt[n++] = ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')) ? *c : '_';
    dflt[n] = '\0';
    snprintf(cfg->channel, sizeof(cfg->channel), "%s", h->init->opt_string(ctx, "channel", dflt));
    if (!h->db->channel_ok(cfg->channel)) {
        h->init->error(ctx, "channel: '%s' is not a channel name (1 to 63 letters, digits and _, not first a digit)",
                       cfg->channel);
        return -1;
    }
    return 0;
}

/* ---- a subscriber's queue ---- */

/* The loop thread of the subscriber's request, outside its handler. */
static void on_note(void *arg, const char *channel, const char *payload, size_t len)
{
    (void)channel;
    sub *s = arg;
    note *nt = malloc(sizeof(*nt) + len + 1);
    pthread_mutex_lock(&s->mu);
    if (nt == NULL || s->queued >= MAX_QUEUED) {
        s->overflow = 1;
        free(nt);
    } else {
        nt->next = NULL;
        memcpy(nt->data, payload, len + 1);
        if (s->tail != NULL)
            s->tail->next = nt;
        else
            s->head = nt;
        s->tail = nt;
        s->queued++;
    }
    pthread_mutex_unlock(&s->mu);
    uint64_t one = 1;
    if (write(s->efd, &one, sizeof(one)) < 0) {
        /* the counter is full: the handler is woken anyway */
    }
}

static int sub_init(weft_req *req, sub *s, const ev_cfg *cfg)
{
    const weft_host *h = weft_req_host(req);
    memset(s, 0, sizeof(*s));
    s->cfg = cfg;
    const char *c = h->request->query(req, "count", NULL);
    char *end = NULL;
    s->count = c != NULL ? strtol(c, &end, 10) : 100000;
    if (c != NULL && (*c == '\0' || *end != '\0' || s->count < 1 || s->count > 100000)) {
        h->response->error_json(req, 400, "count must be an integer between 1 and 100000");
        return -1;
    }
    if ((s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        h->response->error_json(req, 503, "out of descriptors");
        return -1;
    }
    pthread_mutex_init(&s->mu, NULL);
    return 0;
}

static void sub_fini(sub *s)
{
    close(s->efd);
    pthread_mutex_destroy(&s->mu);
    while (s->head != NULL) {
        note *nt = s->head;
        s->head = nt->next;
        free(nt);
    }
}

/* Appends what is queued as events: how many, or -1 after "event: overflow" (the stream ends). */
static int drain(weft_req *req, sub *s)
{
    const weft_host *h = weft_req_host(req);
    uint64_t v;
    if (read(s->efd, &v, sizeof(v)) < 0) {
        /* nothing counted yet: fine */
    }
    pthread_mutex_lock(&s->mu);
    note *list = s->head;
    s->head = s->tail = NULL;
    s->queued = 0;
    int over = s->overflow;
    pthread_mutex_unlock(&s->mu);
    int k = 0;
    while (list != NULL) {
        note *nt = list;
        list = nt->next;
        if (s->n < s->count) {
            char id[24];
            snprintf(id, sizeof(id), "%ld", ++s->n);
            h->stream->sse(req, id, NULL, nt->data);
            k++;
        }
        free(nt);
    }
    if (over) {
        h->stream->sse(req, NULL, "overflow", "this subscriber fell more than 1024 events behind; reconnect");
        return -1;
    }
    return k;
}

static int listen_failed(weft_req *req, int rc)
{
    const weft_host *h = weft_req_host(req);
    if (rc == WEFT_CANCELLED)
        return WEFT_OK;
    return h->response->error_json(req, rc == WEFT_UNAVAILABLE ? 503 : 500, "cannot listen to the channel");
}

/* ---- subscribing: blocking style ---- */

weft_rc ev_subscribe(weft_req *req, const ev_cfg *cfg)
{
    const weft_host *h = weft_req_host(req);
    sub s;
    if (sub_init(req, &s, cfg) != 0)
        return WEFT_OK;
    /* `s` is on this stack: unlistened before the handler returns. */
    int rc = h->db->listen(req, cfg->channel, on_note, &s, NULL, NULL);
    if (rc != WEFT_OK) {
        sub_fini(&s);
        return listen_failed(req, rc);
    }
    h->stream->sse(req, NULL, "ready", cfg->channel);
    rc = h->stream->flush(req, NULL, NULL);
    while (rc == WEFT_OK && s.n < s.count) {
        int k = drain(req, &s);
        if (k != 0) {
            rc = h->stream->flush(req, NULL, NULL);
            if (k < 0)
                break;
            continue;
        }
        unsigned rev = 0;
        rc = h->fd->wait(req, s.efd, WEFT_FD_READ, WAIT_MS, &rev, NULL, NULL);
        if (rc == WEFT_TIMEOUT)
            rc = WEFT_OK; /* nothing for a while: wait on */
    }
    h->db->unlisten(req, cfg->channel, on_note, &s);
    sub_fini(&s);
    return WEFT_OK;
}

/* ---- subscribing: reactive ---- */

static void r_next(weft_req *req, sub *s);

static void r_finish(weft_req *req, sub *s, int listening)
{
    const weft_host *h = weft_req_host(req);
    if (listening)
        h->db->unlisten(req, s->cfg->channel, on_note, s);
    sub_fini(s);
    free(s);
    h->response->done(req, WEFT_OK);
}

static void r_flushed(weft_req *req, void *arg, int rc)
{
    sub *s = arg;
    if (rc != WEFT_OK || s->ended || s->n >= s->count)
        r_finish(req, s, 1);
    else
        r_next(req, s);
}

static void r_ready(weft_req *req, void *arg, int rc, unsigned revents)
{
    (void)revents;
    sub *s = arg;
    if (rc != WEFT_OK && rc != WEFT_TIMEOUT)
        r_finish(req, s, 1);
    else
        r_next(req, s);
}

static void r_next(weft_req *req, sub *s)
{
    const weft_host *h = weft_req_host(req);
    int k = drain(req, s);
    if (k < 0)
        s->ended = 1;
    if (k != 0)
        h->stream->flush(req, r_flushed, s);
    else
        h->fd->wait(req, s->efd, WEFT_FD_READ, WAIT_MS, NULL, r_ready, s);
}

static void r_listened(weft_req *req, void *arg, int rc)
{
    const weft_host *h = weft_req_host(req);
    sub *s = arg;
    if (rc != WEFT_OK) {
        listen_failed(req, rc);
        r_finish(req, s, 0);
        return;
    }
    h->stream->sse(req, NULL, "ready", s->cfg->channel);
    h->stream->flush(req, r_flushed, s);
}

weft_rc ev_subscribe_async(weft_req *req, const ev_cfg *cfg)
{
    const weft_host *h = weft_req_host(req);
    sub *s = malloc(sizeof(*s));
    if (s == NULL)
        return h->response->error_json(req, 503, "out of memory");
    if (sub_init(req, s, cfg) != 0) {
        free(s);
        return WEFT_OK;
    }
    h->db->listen(req, cfg->channel, on_note, s, r_listened, s);
    return WEFT_AGAIN;
}

/* ---- publishing ---- */

/* The body as a C string (malloc'd), or NULL after answering why not. */
static char *payload_of(weft_req *req)
{
    const weft_host *h = weft_req_host(req);
    size_t len = 0;
    const char *body = h->request->body(req, &len);
    if (len > MAX_PAYLOAD) {
        h->response->error_json(req, 413, "an event is at most 7999 bytes (PostgreSQL's NOTIFY payload)");
        return NULL;
    }
    if (body != NULL && memchr(body, '\0', len) != NULL) {
        h->response->error_json(req, 400, "an event is text: no NUL bytes");
        return NULL;
    }
    char *p = malloc(len + 1);
    if (p == NULL) {
        h->response->error_json(req, 503, "out of memory");
        return NULL;
    }
    if (len > 0)
        memcpy(p, body, len);
    p[len] = '\0';
    return p;
}

static weft_rc published(weft_req *req, int rc)
{
    const weft_host *h = weft_req_host(req);
    if (rc == WEFT_OK) {
        h->response->header(req, "content-type", "application/json");
        return h->response->write(req, "{\"published\":true}", 18);
    }
    if (rc == WEFT_CANCELLED)
        return WEFT_OK;
    return h->response->error_json(req, rc == WEFT_UNAVAILABLE || rc == WEFT_TIMEOUT ? 503 : 500,
                                   "the event could not be published");
}

weft_rc ev_publish(weft_req *req, const ev_cfg *cfg)
{
    const weft_host *h = weft_req_host(req);
    char *p = payload_of(req);
    if (p == NULL)
        return WEFT_OK;
    int rc = h->db->notify(req, cfg->channel, p, NULL, NULL);
    free(p);
    return published(req, rc);
}

static void on_published(weft_req *req, void *arg, int rc)
{
    (void)arg;
    published(req, rc);
    weft_req_host(req)->response->done(req, WEFT_OK);
}

weft_rc ev_publish_async(weft_req *req, const ev_cfg *cfg)
{
    char *p = payload_of(req);
    if (p == NULL)
        return WEFT_OK;
    /* The host copies the payload into the statement before it returns. */
    weft_req_host(req)->db->notify(req, cfg->channel, p, on_published, NULL);
    free(p);
    return WEFT_AGAIN;
}
