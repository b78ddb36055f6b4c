/*
 * A double of libpq for db/'s unit tests (tests/unit/db_*.c), installed in
 * place of libpq.so.5 with weft_pq_install() (server/db/pq.h), so db/ runs
 * its real code on real loops without a PostgreSQL.
 *
 * Each connection is a socketpair: db/ watches libpq's end on its loop (as
 * it watches a real one), the "server" end is the double's. What db/ sends
 * is recorded in order (Parse, Bind/Execute, Sync); the test decides when
 * the server answers statements (wt_pq_answer, or wt_pq_auto), drops every
 * connection (wt_pq_drop) or refuses new ones (wt_pq_refuse). Answering
 * writes a byte to the server end, so the loop wakes on its socket exactly
 * as it does for PostgreSQL's bytes. A SELECT's one row is its first
 * parameter; BEGIN, COMMIT and ROLLBACK answer with their command tag; the
 * parameter "fail" makes a statement fail (SQLSTATE 42P01), "hang" makes
 * it run until it is cancelled (or its connection dropped); a cancelled
 * statement fails with 57014 as PostgreSQL's does.
 *
 * libpq 15 or 17 is chosen at install: with 17 the table has
 * PQsendPipelineSync and PQcancelCreate/Start/Poll (db/ then batches a
 * loop pass's statements and cancels on the loop), with 15 they are NULL.
 * Blocking calls (PQconnectdbParams, PQcancel) made on a loop thread are
 * counted (WT_PQ_BLOCKING_ON_LOOP): db/ must never make one there.
 * Unnamed statements (PQsendQueryParams) are recorded by their SQL's first
 * word; an answered LISTEN "name" / UNLISTEN "name" changes what the
 * connection listens to, and wt_pq_notify() delivers a notification to
 * those that listen, waking their loop as the server's bytes would.
 */
#ifndef WEFT_TEST_FAKEPQ_H
#define WEFT_TEST_FAKEPQ_H

/** Installs the double as libpq 17 (`libpq17`) or 15; resets its state. Before the loops start. */
void wt_pq_install(int libpq17);
/** New connections fail at once (CONNECTION_BAD), as with a database that is down; 0 lets them succeed again. */
void wt_pq_refuse(int refuse);
/** The server answers every statement as soon as it is written (1), or only when told (0, the default). */
void wt_pq_auto(int on);
/** The server answers the next `n` statements written and not yet answered, oldest first. */
void wt_pq_answer(int n);
/** The server closes every open connection (a restart, a network cut). */
void wt_pq_drop(void);

/** What the double counts. */
enum {
    WT_PQ_ATTEMPTS,         /* connection attempts (refused ones too) */
    WT_PQ_CONNECTS,         /* connections established */
    WT_PQ_OPEN,             /* connections established and not yet finished */
    WT_PQ_PREPARED,         /* Parse messages sent */
    WT_PQ_WRITTEN,          /* statements (Bind/Execute) written to the server */
    WT_PQ_WRITES,           /* writes that carried statements (one per flush) */
    WT_PQ_ANSWERED,         /* statements the server answered */
    WT_PQ_CANCELS,          /* cancel requests the server received */
    WT_PQ_CANCELS_ON_LOOP,  /* of which sent from a loop thread (PQcancelPoll) */
    WT_PQ_BLOCKING_ON_LOOP, /* blocking libpq calls made on a loop thread: must stay 0 */
    WT_PQ_UNNAMED,          /* unnamed statements sent (PQsendQueryParams: Parse + Bind/Execute) */
    WT_PQ_OPTIONS,          /* connections asked for with an `options` startup parameter */
    WT_PQ_N
};
/** A counter's value now (any thread). */
int wt_pq_count(int which);
/** Waits until counter `which` reaches `n` (fails the test after limit_ms). */
void wt_pq_wait_count(int which, int n, double limit_ms);
/** The statements written so far, by the first word of their SQL: "BEGIN SELECT ROLLBACK" (a static copy). */
const char *wt_pq_written_sql(void);
/** The server notifies `channel` with `payload`: every open connection that LISTENs to it gets it. Returns how many. */
int wt_pq_notify(const char *channel, const char *payload);
/** Open connections listening on `channel` (their LISTEN answered, no UNLISTEN since). */
int wt_pq_listening(const char *channel);

#endif
