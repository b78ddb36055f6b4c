/*
 * Answers queued for clients that do not read them (limits.max_buffered_response
 * and limits.max_buffered_response_total). Every body weft hands to h2o — a
 * whole answer, a stream's part — is charged to its connection and to the
 * process until h2o has written it (or the request is gone), so a client that
 * stops reading holds a known number of bytes, and the process as a whole a
 * bounded one: past the total, the connections whose unread bytes are the
 * oldest are closed first. Loop thread, except the counters.
 */
#ifndef WEFT_BACKLOG_H
#define WEFT_BACKLOG_H

#include <stddef.h>
#include <stdint.h>

#include "base/h2o_glue.h"

typedef struct weft_charge weft_charge;

/**
 * A charge for what `req` has queued, living in req's pool (released with
 * it at the latest). per_conn / total: the route's limits (0: defaults).
 * NULL without memory (nothing is then accounted).
 */
weft_charge *weft_backlog_new(h2o_req_t *req, size_t per_conn, size_t total);
/**
 * The charge now stands for `bytes` unread (0 once h2o took them). Raising it
 * enforces the bounds: a connection that holds more than per_conn unread
 * from earlier answers is closed, and past the process total the oldest
 * unread answers of this loop are closed until it is back under. Returns 0,
 * or -1 when this charge's own connection was closed for it.
 */
int weft_backlog_set(weft_charge *c, size_t bytes);
/** True once the charge's connection was closed as a slow reader. */
int weft_backlog_closed(const weft_charge *c);
/** Bytes of answers queued and unread in the process (any thread). */
size_t weft_backlog_bytes(void);
/** Connections closed because their client did not read (any thread). */
uint64_t weft_backlog_closed_total(void);
/** Registers the loop hook whose tick applies the total to this loop's older
 *  answers when another loop's raised it (control thread, before the loops start). */
void weft_backlog_attach(void);

#endif
