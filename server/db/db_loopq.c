/*
 * A loop's statements themselves (db_loop.c owns the connections and sends
 * them): each one's copy of its text and parameters, the wait list while no
 * connection is up, and handing the outcome to the caller.
 *
 * Everything here runs on the owning loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_loop.h"

/* One allocation for the statement and copies of its text and parameters:
 * a timed-out request is freed while its statement is still in flight. */
dbq *weft__dbq_new(weft_dbloop *d, const char *sql, int n, const char *const *params, weft_dbloop_cb cb, void *arg)
{
    size_t size = sizeof(dbq) + strlen(sql) + 1 + (size_t)n * sizeof(char *);
    for (int i = 0; i < n; i++)
        size += params[i] != NULL ? strlen(params[i]) + 1 : 0;
    dbq *q = calloc(1, size);
    if (q == NULL)
        return NULL;
    q->owner = d;
    q->start_ns = weft_now_ns();
    q->cb = cb;
    q->arg = arg;
    char **copies = (char **)(q + 1);
    char *p = (char *)(copies + n);
    for (int i = 0; i < n; i++) {
        if (params[i] == NULL) {
            copies[i] = NULL;
            continue;
        }
        size_t len = strlen(params[i]) + 1;
        copies[i] = memcpy(p, params[i], len);
        p += len;
    }
    q->st.nparams = n;
    q->st.params = (const char *const *)copies;
    q->st.sql = strcpy(p, sql);
    return q;
}

void weft__dbq_free(dbq *q)
{
    weft_dbstmt_clear(&q->st);
    free(q);
}

/* Hands the outcome to the caller (unless it already gave up) and frees q. */
void weft__dbq_finish(dbq *q, int rc, PGresult *res)
{
    weft_timers_cancel(q->owner->loop->timers, &q->timeout);
    if (!q->abandoned) {
        q->abandoned = 1;
        q->cb(q->arg, rc, res);
    } else {
        PQclear(res);
    }
    /* `res` was handed over above; whatever else q still holds (a result
     * that arrived before the connection broke) is freed with it. */
    weft__dbq_free(q);
}

/* Takes a statement that was never sent out of the wait list. */
void weft__dbloop_wait_unlink(dbq *q)
{
    weft_dbloop *d = q->owner;
    dbq **pp = &d->wait_head, *prev = NULL;
    while (*pp != NULL && *pp != q) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp == q) {
        *pp = q->next;
        if (d->wait_tail == q)
            d->wait_tail = prev;
    }
}

void weft__dbloop_fail_waiting(weft_dbloop *d, int rc)
{
    while (d->wait_head != NULL) {
        dbq *q = d->wait_head;
        d->wait_head = q->next;
        weft__dbq_finish(q, rc, NULL);
    }
    d->wait_tail = NULL;
}

void weft_dbloop_abandon(weft_dbq *q)
{
    q->abandoned = 1;
    /* Not sent yet: it need never run. A sent one stays in the pipeline,
     * whose results arrive in order; its result is read and dropped. */
    if (q->conn == NULL) {
        weft__dbloop_wait_unlink(q);
        weft__dbq_finish(q, WEFT_CANCELLED, NULL);
    }
}
