/*
 * weft/host_tx.h — the `tx` group: one transaction per request, on a
 * connection held for that request alone. NULL in weft_host without
 * database support. The `cb` convention is the one of weft/host_sync.h.
 */
#ifndef WEFT_HOST_TX_H
#define WEFT_HOST_TX_H

#include <weft/types.h>

#define WEFT_HOST_TX_VERSION 1u

/** Isolation levels for begin(). */
typedef enum weft_isolation {
    WEFT_READ_COMMITTED = 0, /**< PostgreSQL's default */
    WEFT_REPEATABLE_READ = 1,
    WEFT_SERIALIZABLE = 2 /**< may fail with SQLSTATE 40001: retry the whole transaction */
} weft_isolation;

typedef struct weft_host_tx {
    uint32_t struct_size;
    uint32_t version; /**< WEFT_HOST_TX_VERSION of the running host */
    /**
     * Begins a transaction for `req` (a weft_isolation level); until commit
     * or rollback the request's db->query statements run inside it.
     * WEFT_OK; WEFT_UNAVAILABLE when the database is down or no transaction
     * connection freed up within database.tx_wait_ms (answer 503);
     * WEFT_ERROR on misuse (one already open, bad level, blocking style
     * from a reactive handler). A statement that fails inside leaves the
     * transaction aborted: roll back. A handler that finishes with one open
     * is a plugin bug: the host rolls it back and logs it. Once the request
     * is withdrawn the host rolls back at once and every later call returns
     * WEFT_CANCELLED.
     */
    weft_rc (*begin)(weft_req *req, int isolation, weft_callback cb, void *arg);
    /**
     * Commits and releases the connection. WEFT_OK when committed;
     * WEFT_ERROR when the database rolled back instead (a failed statement,
     * a serialization failure); WEFT_UNAVAILABLE when the connection was
     * lost (nothing committed unless the loss came after COMMIT was sent).
     */
    weft_rc (*commit)(weft_req *req, weft_callback cb, void *arg);
    /** Rolls back and releases the connection; WEFT_OK or an error (rolled back either way). */
    weft_rc (*rollback)(weft_req *req, weft_callback cb, void *arg);
} weft_host_tx;

#endif
