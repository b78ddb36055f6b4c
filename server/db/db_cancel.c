/*
 * Cancelling a statement that runs on the server, for a request that was
 * withdrawn (its client left, or its deadline passed) inside a transaction
 * or on a worker's blocking connection.
 *
 * A cancel is a connection of its own to the server: a connect, the cancel
 * key, and the server closing it. libpq 17 can do that without blocking
 * (PQcancelCreate/PQcancelStart/PQcancelPoll), so it runs on the loop that
 * asks: its socket is watched like the loop's database connections and a
 * timer bounds it. Before 17 there is only the blocking PQcancel, a round
 * trip or more (and a TCP connect timeout to a server that stopped
 * answering), which must never run on a loop: a short-lived thread of its
 * own does it. Which one a server uses is logged when libpq loads and shown
 * in the admin /status (`libpq`).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db.h"
#include "base/log.h"
#include "core/loop.h"

/* Longer than any useful cancel: the statement ends at statement_timeout anyway. */
#define CANCEL_DEADLINE_MS 10000

static void log_failure(const char *label, const char *why)
{
    char msg[256];
    snprintf(msg, sizeof(msg), "%s", why != NULL && why[0] != '\0' ? why : "unknown error");
    msg[strcspn(msg, "\n")] = '\0';
    weft_log_error("%s: cancelling a withdrawn request's statement failed: %s", label, msg);
}

/* ---- libpq 15: a thread per cancel ---- */

typedef struct cancel_job {
    PGcancel *cancel;
    char label[256];
} cancel_job;

static void cancel_now(cancel_job *j)
{
    char err[256];
    if (!PQcancel(j->cancel, err, sizeof(err)))
        log_failure(j->label, err);
    PQfreeCancel(j->cancel);
    free(j);
}

static void *cancel_thread(void *arg)
{
    cancel_now(arg);
    return NULL;
}

static void cancel_on_thread(PGconn *pg, const char *label)
{
    PGcancel *c = PQgetCancel(pg);
    cancel_job *j = c != NULL ? malloc(sizeof(*j)) : NULL;
    if (j == NULL) {
        if (c != NULL)
            PQfreeCancel(c);
        return; /* out of memory: the statement ends within its timeout */
    }
    j->cancel = c;
    snprintf(j->label, sizeof(j->label), "%s", label);
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &a, cancel_thread, j) != 0)
        cancel_now(j);
    pthread_attr_destroy(&a);
}

/* ---- libpq 17: on the loop ---- */

typedef struct loop_cancel {
    struct loop_cancel *next; /* this loop's cancels in flight, closed when it stops */
    weft_loop *loop;
    PGcancelConn *cc;
    h2o_socket_t *sock;
    int sock_src_fd; /* the libpq fd `sock` wraps a dup of */
    weft_timer deadline;
    char label[256];
} loop_cancel;

static _Thread_local loop_cancel *running;

static void lc_end(loop_cancel *lc, const char *why)
{
    if (why != NULL)
        log_failure(lc->label, why);
    for (loop_cancel **pp = &running; *pp != NULL; pp = &(*pp)->next)
        if (*pp == lc) {
            *pp = lc->next;
            break;
        }
    weft_timers_cancel(lc->loop->timers, &lc->deadline);
    if (lc->sock != NULL)
        h2o_socket_close(lc->sock);
    PQcancelFinish(lc->cc);
    free(lc);
}

static void lc_io(h2o_socket_t *sock, const char *err);

/* (Re)wraps the cancel connection's socket; like a connect, it may change. */
static int lc_watch(loop_cancel *lc, int want_write)
{
    int fd = PQcancelSocket(lc->cc);
    if (fd < 0)
        return -1;
    if (lc->sock == NULL || lc->sock_src_fd != fd) {
        if (lc->sock != NULL)
            h2o_socket_close(lc->sock);
        int dupfd = dup(fd); /* h2o closes what it wraps; libpq keeps its own */
        if (dupfd < 0) {
            lc->sock = NULL;
            return -1;
        }
        lc->sock = h2o_evloop_socket_create(lc->loop->evloop, dupfd, H2O_SOCKET_FLAG_DONT_READ);
        lc->sock->data = lc;
        lc->sock_src_fd = fd;
    }
    if (!h2o_socket_is_reading(lc->sock))
        h2o_socket_read_start(lc->sock, lc_io);
    if (want_write && !h2o_socket_is_writing(lc->sock))
        h2o_socket_notify_write(lc->sock, lc_io);
    return 0;
}

static void lc_step(loop_cancel *lc)
{
    switch (PQcancelPoll(lc->cc)) {
    case PGRES_POLLING_OK:
        lc_end(lc, NULL); /* the server took it */
        return;
    case PGRES_POLLING_FAILED:
        lc_end(lc, PQcancelErrorMessage(lc->cc));
        return;
    case PGRES_POLLING_WRITING:
        if (lc_watch(lc, 1) != 0)
            lc_end(lc, "no socket");
        return;
    default:
        if (lc_watch(lc, 0) != 0)
            lc_end(lc, "no socket");
    }
}

static void lc_io(h2o_socket_t *sock, const char *err)
{
    (void)err; /* libpq sees the socket's error itself */
    lc_step(sock->data);
}

static void on_lc_deadline(weft_timer *t)
{
    loop_cancel *lc = H2O_STRUCT_FROM_MEMBER(loop_cancel, deadline, t);
    char why[64];
    snprintf(why, sizeof(why), "no answer within %d ms", CANCEL_DEADLINE_MS);
    lc_end(lc, why);
}

static void cancel_on_loop(weft_loop *L, PGconn *pg, const char *label)
{
    loop_cancel *lc = calloc(1, sizeof(*lc));
    PGcancelConn *cc = lc != NULL ? PQcancelCreate(pg) : NULL;
    if (cc == NULL) {
        free(lc);
        return; /* out of memory: the statement ends within its timeout */
    }
    lc->loop = L;
    lc->cc = cc;
    snprintf(lc->label, sizeof(lc->label), "%s", label);
    lc->next = running;
    running = lc;
    if (PQcancelStatus(cc) == CONNECTION_BAD || !PQcancelStart(cc)) {
        lc_end(lc, PQcancelErrorMessage(cc));
        return;
    }
    if (weft_timers_add(L->timers, &lc->deadline, CANCEL_DEADLINE_MS, on_lc_deadline) != 0) {
        lc_end(lc, "out of memory");
        return;
    }
    /* Started: libpq now waits to write, as after PQconnectStart. */
    if (lc_watch(lc, 1) != 0)
        lc_end(lc, "no socket");
}

void weft_db_cancels_close(void)
{
    while (running != NULL)
        lc_end(running, NULL);
}

void weft_db_cancel_running(PGconn *pg, const char *label)
{
    if (pg == NULL)
        return;
    weft_loop *L = weft_loop_current;
    if (L != NULL && weft_pq_has_async_cancel())
        cancel_on_loop(L, pg, label);
    else
        cancel_on_thread(pg, label);
}
