/*
 * libpq, loaded on demand. weft links no libpq: a server whose routes use no
 * database must not map it (libpq and its own dependencies are ~3 MiB of
 * shared pages, a third of an idle server's memory). The generation that
 * needs a database calls weft_pq_load(), which dlopen()s libpq.so.5 and fills
 * a table of function pointers; db/ calls libpq through that table.
 *
 * Call sites keep libpq's names and shape: after this header, `PQclear(r)`
 * means `(weft_pq.PQclear)(r)`. libpq-fe.h still comes from the build's
 * pkg-config, for the types and to check every pointer against libpq's own
 * prototype (each slot is declared with __typeof__ of the function).
 *
 * Which servers load it: see weft_db_needed().
 */
#ifndef WEFT_DB_PQ_H
#define WEFT_DB_PQ_H

#include <libpq-fe.h>
#include <stddef.h>

#include "config/config.h"

/* Every libpq function db/ (and the /health probe) calls. A new call site
 * needs its function added here, or the build fails (the name would link to
 * libpq, which is not linked). */
#define WEFT_PQ_FUNCTIONS(X)                                                                                         \
    X(PQcancel)                                                                                                    \
    X(PQclear)                                                                                                     \
    X(PQcmdStatus)                                                                                                 \
    X(PQcmdTuples)                                                                                                 \
    X(PQconnectPoll)                                                                                               \
    X(PQconnectStartParams)                                                                                        \
    X(PQconnectdbParams)                                                                                           \
    X(PQconsumeInput)                                                                                              \
    X(PQenterPipelineMode)                                                                                         \
    X(PQerrorMessage)                                                                                              \
    X(PQfinish)                                                                                                    \
    X(PQflush)                                                                                                     \
    X(PQescapeIdentifier)                                                                                          \
    X(PQfname)                                                                                                     \
    X(PQfreemem)                                                                                                   \
    X(PQfreeCancel)                                                                                                \
    X(PQgetCancel)                                                                                                 \
    X(PQgetResult)                                                                                                 \
    X(PQgetisnull)                                                                                                 \
    X(PQgetvalue)                                                                                                  \
    X(PQisBusy)                                                                                                    \
    X(PQlibVersion)                                                                                                \
    X(PQnotifies)                                                                                                  \
    X(PQnfields)                                                                                                   \
    X(PQntuples)                                                                                                   \
    X(PQpipelineSync)                                                                                              \
    X(PQresultErrorField)                                                                                          \
    X(PQresultErrorMessage)                                                                                        \
    X(PQresultStatus)                                                                                              \
    X(PQsendPrepare)                                                                                               \
    X(PQsendQueryParams)                                                                                           \
    X(PQsendQueryPrepared)                                                                                         \
    X(PQsetnonblocking)                                                                                            \
    X(PQsocket)                                                                                                    \
    X(PQstatus)                                                                                                    \
    X(PQtransactionStatus)

/*
 * libpq 17's additions, used when the loaded libpq has them (NULL slots
 * otherwise: check weft_pq_has_*() first). Declared here when the build's
 * libpq-fe.h is older (15 on Debian 12), with libpq 17's own prototypes, so
 * that one binary takes them wherever libpq 17 is installed: the choice is
 * made at run time, by what dlsym finds, not by the headers of the build.
 */
#define WEFT_PQ_OPTIONAL(X)                                                                                          \
    X(PQsendPipelineSync)                                                                                          \
    X(PQcancelCreate)                                                                                              \
    X(PQcancelStart)                                                                                               \
    X(PQcancelPoll)                                                                                                \
    X(PQcancelStatus)                                                                                              \
    X(PQcancelSocket)                                                                                              \
    X(PQcancelErrorMessage)                                                                                        \
    X(PQcancelFinish)

#ifndef LIBPQ_HAS_SEND_PIPELINE_SYNC
extern int PQsendPipelineSync(PGconn *conn);
#endif
#ifndef LIBPQ_HAS_ASYNC_CANCEL
typedef struct pg_cancel_conn PGcancelConn;
extern PGcancelConn *PQcancelCreate(PGconn *conn);
extern int PQcancelStart(PGcancelConn *cancelConn);
extern PostgresPollingStatusType PQcancelPoll(PGcancelConn *cancelConn);
extern ConnStatusType PQcancelStatus(const PGcancelConn *cancelConn);
extern int PQcancelSocket(const PGcancelConn *cancelConn);
extern char *PQcancelErrorMessage(const PGcancelConn *cancelConn);
extern void PQcancelFinish(PGcancelConn *cancelConn);
#endif

#define WEFT_PQ_SLOT(f) __typeof__(f) *f;
/** The loaded functions; valid once weft_pq_load() succeeded. */
typedef struct weft_pq_api {
    WEFT_PQ_FUNCTIONS(WEFT_PQ_SLOT)
    WEFT_PQ_OPTIONAL(WEFT_PQ_SLOT)
} weft_pq_api;
#undef WEFT_PQ_SLOT

extern weft_pq_api weft_pq;

/**
 * Whether a server with these settings talks to a database, so loads libpq:
 * the config has a `database` group, or a PG* variable is in the environment
 * (libpq's own way of being pointed at a server, and what packaging/run.sh and
 * the test suite set). Otherwise database calls answer 503 and say why.
 */
int weft_db_needed(const weft_db_cfg *cfg);

/**
 * Loads libpq once per process (control thread, at generation build; the
 * library stays loaded). Returns 0, or -1 with the reason in `why`.
 */
int weft_pq_load(char *why, size_t why_size);

/**
 * Installs `api` as the loaded libpq instead of dlopen()ing libpq.so.5: the
 * seam of db/'s unit tests (tests/support/fakepq.c, a double of libpq whose
 * connections are socketpairs the test answers on). The server never calls
 * it. Before any database use; the optional slots decide the paths taken,
 * as dlsym's findings do (NULL: libpq 15's).
 */
void weft_pq_install(const weft_pq_api *api);

/** Whether libpq is loaded (any thread; set before any generation using it serves). */
int weft_pq_loaded(void);

/** The loaded libpq's version (PQlibVersion(): 150018 is 15.18); 0 before weft_pq_load(). */
int weft_pq_version(void);
/** PQsendPipelineSync (libpq 17): a loop's pipelined statements leave in one write per loop pass. */
int weft_pq_has_send_pipeline_sync(void);
/** PQcancelCreate/Start/Poll (libpq 17): a statement is cancelled from its loop, no thread per cancel. */
int weft_pq_has_async_cancel(void);

#ifndef WEFT_PQ_IMPL
#define PQcancel (weft_pq.PQcancel)
#define PQclear (weft_pq.PQclear)
#define PQcmdStatus (weft_pq.PQcmdStatus)
#define PQcmdTuples (weft_pq.PQcmdTuples)
#define PQconnectPoll (weft_pq.PQconnectPoll)
#define PQconnectStartParams (weft_pq.PQconnectStartParams)
#define PQconnectdbParams (weft_pq.PQconnectdbParams)
#define PQconsumeInput (weft_pq.PQconsumeInput)
#define PQenterPipelineMode (weft_pq.PQenterPipelineMode)
#define PQerrorMessage (weft_pq.PQerrorMessage)
#define PQfinish (weft_pq.PQfinish)
#define PQflush (weft_pq.PQflush)
#define PQescapeIdentifier (weft_pq.PQescapeIdentifier)
#define PQfname (weft_pq.PQfname)
#define PQfreemem (weft_pq.PQfreemem)
#define PQfreeCancel (weft_pq.PQfreeCancel)
#define PQgetCancel (weft_pq.PQgetCancel)
#define PQgetResult (weft_pq.PQgetResult)
#define PQgetisnull (weft_pq.PQgetisnull)
#define PQgetvalue (weft_pq.PQgetvalue)
#define PQisBusy (weft_pq.PQisBusy)
#define PQlibVersion (weft_pq.PQlibVersion)
#define PQnotifies (weft_pq.PQnotifies)
#define PQnfields (weft_pq.PQnfields)
#define PQntuples (weft_pq.PQntuples)
#define PQpipelineSync (weft_pq.PQpipelineSync)
#define PQresultErrorField (weft_pq.PQresultErrorField)
#define PQresultErrorMessage (weft_pq.PQresultErrorMessage)
#define PQresultStatus (weft_pq.PQresultStatus)
#define PQsendPrepare (weft_pq.PQsendPrepare)
#define PQsendQueryParams (weft_pq.PQsendQueryParams)
#define PQsendQueryPrepared (weft_pq.PQsendQueryPrepared)
#define PQsetnonblocking (weft_pq.PQsetnonblocking)
#define PQsocket (weft_pq.PQsocket)
#define PQstatus (weft_pq.PQstatus)
#define PQtransactionStatus (weft_pq.PQtransactionStatus)
#define PQsendPipelineSync (weft_pq.PQsendPipelineSync)
#define PQcancelCreate (weft_pq.PQcancelCreate)
#define PQcancelStart (weft_pq.PQcancelStart)
#define PQcancelPoll (weft_pq.PQcancelPoll)
#define PQcancelStatus (weft_pq.PQcancelStatus)
#define PQcancelSocket (weft_pq.PQcancelSocket)
#define PQcancelErrorMessage (weft_pq.PQcancelErrorMessage)
#define PQcancelFinish (weft_pq.PQcancelFinish)
#endif

#endif
