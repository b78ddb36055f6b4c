/*
 * What db/'s unit tests share besides the libpq double (fakepq.h): one loop
 * (support/unitloop.h) serving a route whose handler runs one statement,
 * `SELECT $1`, with its request's parameter, and answers
 * "rc=RC value=VALUE" (VALUE "-" without a row): a blocking call under
 * pool and coroutine, db_query_async under reactive. The route's database
 * settings have one loop connection, `pool_connections` blocking ones and
 * a statement timeout far beyond any test (wt_db_statement_timeout). With wt_db_transactions(1) the
 * statement runs inside db_begin/db_commit (their _async forms under
 * reactive), and the body is "begin=B rc=RC value=VALUE commit=C".
 */
#ifndef WEFT_TEST_DBUNIT_H
#define WEFT_TEST_DBUNIT_H

#include <stddef.h>

#include "request/request.h"
#include "unitloop.h"

/** The settings' statement_timeout_ms (before wt_db_start; default 60000). */
void wt_db_statement_timeout(int ms);
/** database.pooler (WEFT_POOLER_*) and whether statements are unnamed (before wt_db_start; default none, named). */
void wt_db_pooler(int mode, int unnamed_statements);
/** Whether the route's statement runs in a transaction (before wt_db_start; default 0). */
void wt_db_transactions(int on);
/** Installs the double (libpq 17 or 15), then starts a loop serving the route under `policy`. */
void wt_db_start(int policy, int pool_connections, int libpq17);
/** The same with the test's own plugin instead of the one statement (its request's path is "/t/PARAM"). */
void wt_db_start_with(const weft_plugin *desc, int policy, int pool_connections, int libpq17);
/** A request `id` of the route whose statement's parameter is `param`; started at once unless `start` is 0. */
weft_req *wt_db_req(int id, const char *param, int start);
/** Starts several requests made with start = 0 in one loop pass (their statements queue together). */
void wt_db_start_together(weft_req **rs, int n);
/** Cancels `r` on its loop (the client went away, or `reason`'s deadline passed). */
void wt_db_cancel(weft_req *r, int reason);
/** Stops the loop (closing its connections) and frees the route. */
void wt_db_stop(void);
/** A gauge of db/'s /metrics, e.g. "weft_db_connection_waiters" (any thread). */
long wt_db_gauge(const char *name);
/** Waits until gauge `name` reads `value` (fails the test after limit_ms). */
void wt_db_wait_gauge(const char *name, long value, double limit_ms);
/** Writes the body a request answered with `rc` and `value` (NULL: no row) has. */
void wt_db_format(char *buf, size_t size, int rc, const char *value);
/** Asserts that completed request `d` answered with `rc` and `value`. */
void wt_db_expect(const wt_done *d, int rc, const char *value);

#endif
