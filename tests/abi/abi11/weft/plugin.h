/*
 * weft/plugin.h — the public plugin API of the weft application server.
 *
 * This is the only header a plugin includes. It depends on libc alone: no h2o,
 * libpq or libconfig type ever appears here, so the server can upgrade those
 * libraries (libh2o changes its SONAME with every minor release) without
 * breaking a plugin that was built years ago.
 *
 * Stability rules (the "ABI contract"):
 *   - A plugin exports one function, weft_plugin_entry(), returning a pointer
 *     to a `static const weft_plugin` descriptor.
 *   - The host checks magic, abi_version and struct_size before it calls
 *     anything in the plugin, and refuses a mismatch with a message that says
 *     exactly which field differs.
 *   - Both structures below only ever grow at the end. A plugin built against
 *     an older header has a smaller struct_size, and the host treats the
 *     missing trailing fields as NULL. A plugin that wants a host service added
 *     later checks `host->struct_size` (WEFT_HOST_HAS) before calling it.
 *   - WEFT_PLUGIN_ABI changes only when an existing field changes meaning;
 *     the host then refuses older plugins by name rather than crashing.
 */
#ifndef WEFT_PLUGIN_H
#define WEFT_PLUGIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** "WEFT" in little-endian ASCII; first field of every descriptor. */
#define WEFT_PLUGIN_MAGIC 0x54464557u
/** Incompatible-change counter of this header. */
#define WEFT_PLUGIN_ABI 1u
/** The symbol the host looks up with dlsym(). */
#define WEFT_PLUGIN_ENTRY_SYMBOL "weft_plugin_entry"

#if defined(__GNUC__)
#define WEFT_EXPORT __attribute__((visibility("default")))
#define WEFT_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define WEFT_EXPORT
#define WEFT_PRINTF(fmt, args)
#endif

/** One result code for the whole API. */
typedef enum weft_rc {
    WEFT_OK = 0,           /**< done */
    WEFT_ERROR = -1,       /**< failed; the host answers 500 if no status was set */
    WEFT_AGAIN = -2,       /**< reactive handler: the response is completed later by host->done() */
    WEFT_TIMEOUT = -3,     /**< a host primitive gave up (e.g. statement timeout) */
    WEFT_UNAVAILABLE = -4, /**< a host service (database, pool) cannot take the work now */
    WEFT_CANCELLED = -5    /**< the server is shutting down or the work was withdrawn */
} weft_rc;

/** Log levels, numbered as syslog priorities so journald understands them. */
typedef enum weft_log_level {
    WEFT_LOG_ERROR = 3,
    WEFT_LOG_WARN = 4,
    WEFT_LOG_INFO = 6,
    WEFT_LOG_DEBUG = 7
} weft_log_level;

/** A request in flight. Opaque; valid from handler entry until the response is complete. */
typedef struct weft_req weft_req;
/** A route being initialised. Opaque; valid only during init(). */
typedef struct weft_init weft_init;
/** A database result owned by the plugin until result_free(). Opaque. */
typedef struct weft_result weft_result;
/** A host-provided fair (FIFO) lock that works across worker threads, coroutines and callbacks. */
typedef struct weft_mutex weft_mutex;
/** A plugin timer (ABI 1.1). Opaque; valid until the plugin load that started it is unloaded. */
typedef struct weft_plugin_timer weft_plugin_timer;

/** A plugin's own metric series (ABI 1.1). Opaque; valid for the life of the process. */
typedef struct weft_metric weft_metric;

/** A timer's callback (ABI 1.1): runs on an event-loop thread, must not block. */
typedef void (*weft_timer_fn)(void *arg);

/**
 * Completion callback of a reactive host primitive. Always runs on the event
 * loop thread that owns `req`. `rc` is WEFT_OK or an error code.
 */
typedef void (*weft_callback)(weft_req *req, void *arg, int rc);

/**
 * Completion of req_body_read_async() (ABI 1.2), on the loop thread that
 * owns `req`: `rc` and the part as req_body_read() would return them.
 */
typedef void (*weft_body_callback)(weft_req *req, void *arg, int rc, const void *data, size_t len);

/**
 * Completion of db_query_async(), on the loop thread that owns `req`. On
 * WEFT_OK `res` holds the rows; on WEFT_ERROR it may carry the SQL error
 * (result_sqlstate); on WEFT_UNAVAILABLE / WEFT_TIMEOUT it is NULL. The
 * callback owns `res` and frees it with result_free().
 */
typedef void (*weft_db_callback)(weft_req *req, void *arg, int rc, weft_result *res);

/** Set-Cookie attribute flags for res_cookie (ABI 1.1). */
enum {
    WEFT_COOKIE_SECURE = 1u,
    WEFT_COOKIE_HTTPONLY = 2u,
    WEFT_COOKIE_SAMESITE_LAX = 4u,
    WEFT_COOKIE_SAMESITE_STRICT = 8u,
    WEFT_COOKIE_SAMESITE_NONE = 16u /**< needs WEFT_COOKIE_SECURE */
};

/** Isolation levels for db_begin (ABI 1.1). */
typedef enum weft_isolation {
    WEFT_READ_COMMITTED = 0, /**< PostgreSQL's default */
    WEFT_REPEATABLE_READ = 1,
    WEFT_SERIALIZABLE = 2 /**< may fail with SQLSTATE 40001: retry the whole transaction */
} weft_isolation;
/** fd_wait events: the descriptor is readable / writable (a hang-up or error counts as both). */
#define WEFT_FD_READ 1u
#define WEFT_FD_WRITE 2u

/**
 * Completion of fd_wait_async(), on the loop thread that owns `req`. `rc` is
 * WEFT_OK with the ready events in `revents`, WEFT_TIMEOUT (revents 0), or an
 * error (WEFT_ERROR: a bad descriptor; WEFT_UNAVAILABLE: out of memory or of
 * file descriptors; WEFT_CANCELLED: the request was withdrawn).
 */
typedef void (*weft_fd_callback)(weft_req *req, void *arg, int rc, unsigned revents);

/** Why an outbound HTTP call gave no response (weft_http_response.error). */
typedef enum weft_http_error {
    WEFT_HTTP_OK = 0,               /**< a response arrived, whatever its status */
    WEFT_HTTP_BAD_REQUEST = 1,      /**< the call itself is wrong: URL, method or header (logged) */
    WEFT_HTTP_DNS = 2,              /**< the host name did not resolve */
    WEFT_HTTP_REFUSED = 3,          /**< connection refused or host unreachable */
    WEFT_HTTP_CONNECT_TIMEOUT = 4,  /**< no connection (DNS, TCP and TLS) within connect_timeout_ms */
    WEFT_HTTP_TIMEOUT = 5,          /**< no complete response within timeout_ms */
    WEFT_HTTP_TLS = 6,              /**< TLS handshake or certificate verification failed */
    WEFT_HTTP_RESET = 7,            /**< the upstream closed or reset the connection mid-exchange */
    WEFT_HTTP_TOO_LARGE = 8,        /**< the response body is larger than max_body */
    WEFT_HTTP_PROTOCOL = 9,         /**< the answer is not valid HTTP/1.x */
    WEFT_HTTP_NO_RESOURCES = 10,    /**< out of memory or of file descriptors here */
    WEFT_HTTP_CANCELLED = 11        /**< the request was withdrawn (client gone, deadline) or the server stops */
} weft_http_error;

/**
 * One outbound HTTP/1.1 request, built by the plugin; the host copies what it
 * needs before the call returns. Initialise with WEFT_HTTP_REQUEST_INIT (the
 * host reads struct_size to know which fields the plugin has).
 */
typedef struct weft_http_request {
    uint32_t struct_size;
    const char *method;          /**< NULL: "GET" */
    const char *url;             /**< "http://host[:port]/path?query" or "https://..." */
    const char *const *headers;  /**< NULL, or name, value, name, value, ..., NULL */
    const void *body;            /**< sent with a Content-Length */
    size_t body_len;
    int connect_timeout_ms;      /**< DNS + TCP + TLS; 0: 5000 */
    int timeout_ms;              /**< the whole exchange; 0: 30000 */
    size_t max_body;             /**< largest response body accepted; 0: 1 MiB */
    const char *ca_file;         /**< https: trust only the CAs in this PEM file; NULL: the system store */
    int max_connections;         /**< per loop and upstream, set by the first call to it; 0: 64 */
} weft_http_request;

#define WEFT_HTTP_REQUEST_INIT {.struct_size = sizeof(weft_http_request)}

/** The outcome of one outbound call; owned by the plugin until http_free(). */
typedef struct weft_http_response {
    int error;                  /**< weft_http_error */
    int status;                 /**< the HTTP status; 0 unless error is WEFT_HTTP_OK */
    const char *error_text;     /**< what went wrong, for logs ("" when nothing did) */
    size_t n_headers;
    const char *const *headers; /**< name (lower case), value, name, value, ... */
    const char *body;           /**< followed by a NUL (the body may contain NULs) */
    size_t body_len;
} weft_http_response;

/**
 * Completion of http_fetch_async(), on the loop thread that owns `req`. `rc`
 * as for http_fetch; `res` (NULL only when out of memory) belongs to the
 * callback, which frees it with http_free().
 */
typedef void (*weft_http_callback)(weft_req *req, void *arg, int rc, weft_http_response *res);

/** An accepted WebSocket. Opaque; valid until its request is complete. */
typedef struct weft_ws weft_ws;

/** WebSocket message types (the RFC 6455 opcodes). */
#define WEFT_WS_TEXT 1
#define WEFT_WS_BINARY 2
#define WEFT_WS_CLOSE 8
#define WEFT_WS_PING 9
#define WEFT_WS_PONG 10

/**
 * A message for a reactive WebSocket, on the loop thread that owns it: type
 * WEFT_WS_TEXT, WEFT_WS_BINARY or WEFT_WS_PONG with the payload (valid during
 * the call), or WEFT_WS_CLOSE once it closed, with data NULL and `len` the
 * close code (1006: the connection just went). After the WEFT_WS_CLOSE call
 * returns the host completes the request; the handler never calls done().
 */
typedef void (*weft_ws_callback)(weft_ws *ws, void *arg, int type, const void *data, size_t len);

/**
 * Services the host offers a plugin. Handed to init(); a plugin keeps the
 * pointer (it stays valid until the plugin is unloaded).
 */
typedef struct weft_host {
    uint32_t struct_size; /**< sizeof(weft_host) of the running host */
    uint32_t abi_version; /**< WEFT_PLUGIN_ABI of the running host */
    const char *server_version;

    /* ---- logging ---- */
    /** Log a line, prefixed with the route and plugin when `req` is not NULL. Any thread. */
    void (*log)(const weft_req *req, int level, const char *fmt, ...) WEFT_PRINTF(3, 4);

    /* ---- route initialisation (valid only inside init) ---- */
    /** The route pattern being initialised, e.g. "/pool/cpu". */
    const char *(*init_route)(const weft_init *ctx);
    /**
     * Options of the route's `options` group. A missing option yields `def`;
     * a wrong type makes init fail with the config file and line, whatever
     * init returns. Options a plugin never asks for are reported as unknown.
     */
    const char *(*opt_string)(weft_init *ctx, const char *name, const char *def);
    long long (*opt_int)(weft_init *ctx, const char *name, long long def);
    double (*opt_float)(weft_init *ctx, const char *name, double def);
    int (*opt_bool)(weft_init *ctx, const char *name, int def);
    /** Explain why init fails; the host logs it with the route and config line. */
    void (*init_error)(weft_init *ctx, const char *fmt, ...) WEFT_PRINTF(2, 3);

    /* ---- request (strings are NUL-terminated and live as long as the request) ---- */
    const char *(*req_method)(const weft_req *req);
    /** Path without the query string, as received. */
    const char *(*req_path)(const weft_req *req);
    /** Named path parameter of the route pattern ("/persons/{id}"), percent-decoded; NULL if absent. */
    const char *(*req_param)(const weft_req *req, const char *name);
    /** Query-string parameter, percent-decoded; NULL if absent. */
    const char *(*req_query)(const weft_req *req, const char *name);
    /** Request header, name case-insensitive; NULL if absent. */
    const char *(*req_header)(const weft_req *req, const char *name);
    /** Request body (may contain NULs; always followed by a NUL); *len gets its size. */
    const char *(*req_body)(const weft_req *req, size_t *len);

    /* ---- response ---- */
    void (*res_status)(weft_req *req, int status);
    int (*res_header)(weft_req *req, const char *name, const char *value);
    /** Append bytes to the response body. */
    int (*res_write)(weft_req *req, const void *data, size_t len);
    int (*res_printf)(weft_req *req, const char *fmt, ...) WEFT_PRINTF(2, 3);
    /**
     * Replace the response with `status` and a plain-text `message`. Headers
     * set before are dropped with the body: add Retry-After and the like after.
     */
    int (*res_error)(weft_req *req, int status, const char *message);
    /**
     * Reactive handlers: the response is complete (after returning WEFT_AGAIN).
     * Any thread; from another thread the completion is posted to the
     * request's loop. Callbacks of the *_async primitives may run before the
     * call that registered them returns (e.g. a free lock, a database known to
     * be down); done() inside them is safe.
     */
    void (*done)(weft_req *req, int rc);

    /* ---- blocking-style primitives: block under `pool`, suspend the coroutine under `coroutine` ---- */
    int (*sleep_ms)(weft_req *req, uint32_t ms);
    int (*mutex_lock)(weft_req *req, weft_mutex *m);
    void (*mutex_unlock)(weft_req *req, weft_mutex *m);

    /* ---- callback-style primitives for `reactive` handlers (loop thread only) ---- */
    void (*sleep_async)(weft_req *req, uint32_t ms, weft_callback cb, void *arg);
    /** `cb` runs once the lock is held by `req`; release it with mutex_unlock. */
    void (*mutex_lock_async)(weft_req *req, weft_mutex *m, weft_callback cb, void *arg);

    /* ---- host objects (any thread) ---- */
    weft_mutex *(*mutex_new)(void);
    void (*mutex_free)(weft_mutex *m);

    /* ---- PostgreSQL: host-managed connections, parameterised statements only ---- */
    /**
     * Runs `sql` with text parameters $1..$nparams (a NULL element is SQL
     * NULL) as a prepared statement. Blocking style: blocks a pool worker,
     * suspends a coroutine; not for reactive handlers. Returns WEFT_OK with
     * *res set; WEFT_UNAVAILABLE when the database is down or no connection
     * frees up in time (answer 503); WEFT_TIMEOUT when the statement timeout
     * passed; WEFT_ERROR for an SQL error (*res then carries it, or is NULL).
     * Free *res with result_free(). No input ever becomes SQL text.
     */
    int (*db_query)(weft_req *req, const char *sql, int nparams, const char *const *params, weft_result **res);
    /** Callback form of db_query for reactive handlers (loop thread only). */
    void (*db_query_async)(weft_req *req, const char *sql, int nparams, const char *const *params,
                           weft_db_callback cb, void *arg);
    int (*result_rows)(const weft_result *res);
    int (*result_cols)(const weft_result *res);
    const char *(*result_name)(const weft_result *res, int col);
    /** Text form of a value; NULL for SQL NULL. Valid until result_free(). */
    const char *(*result_value)(const weft_result *res, int row, int col);
    /** Rows affected by INSERT/UPDATE/DELETE. */
    long long (*result_affected)(const weft_result *res);
    /** The SQLSTATE of a failed statement ("23505"), or "" — for logic, not for clients. */
    const char *(*result_sqlstate)(const weft_result *res);
    /** The database's error text — for logs only: never send it to a client. */
    const char *(*result_error)(const weft_result *res);
    void (*result_free)(weft_result *res);

    /* ==== ABI 1.1 additions: check WEFT_HOST_HAS(host, field) before use ==== */

    /* ---- transactions ---- */
    /**
     * Begins a transaction for `req` with a weft_isolation level. From then on
     * until db_commit/db_rollback, this request's db_query (db_query_async)
     * statements run inside it, on a connection held for this request alone
     * (never shared with other requests' statements). One open transaction per
     * request. Blocking style (pool, coroutine). Returns WEFT_OK;
     * WEFT_UNAVAILABLE when the database is down or no transaction connection
     * freed up within database.tx_wait_ms (answer 503 with Retry-After);
     * WEFT_ERROR on misuse (one already open, bad level, reactive handler).
     * A statement that fails inside leaves the transaction aborted: roll back.
     * A handler that finishes with a transaction open is a plugin bug: the
     * host rolls it back and logs it. When the request is withdrawn (client
     * gone, deadline) the host rolls the transaction back at once and every
     * later call on it returns WEFT_CANCELLED (db_commit never commits then).
     */
    int (*db_begin)(weft_req *req, int isolation);
    /**
     * Commits and releases the connection. WEFT_OK when committed; WEFT_ERROR
     * when the database rolled back instead (a statement had failed, or a
     * serialization failure); WEFT_UNAVAILABLE when the connection was lost
     * (nothing was committed unless the loss came after COMMIT was sent).
     */
    int (*db_commit)(weft_req *req);
    /** Rolls back and releases the connection; WEFT_OK or an error (it is rolled back either way). */
    int (*db_rollback)(weft_req *req);
    /** Callback forms for reactive handlers (loop thread); `cb` gets the rc as above. */
    void (*db_begin_async)(weft_req *req, int isolation, weft_callback cb, void *arg);
    void (*db_commit_async)(weft_req *req, weft_callback cb, void *arg);
    void (*db_rollback_async)(weft_req *req, weft_callback cb, void *arg);

    /* ---- request access (every policy; strings live as long as the request) ---- */
    /** The client's address as text ("203.0.113.7", "2001:db8::1"); *port gets its port. "" and 0 if unknown. */
    const char *(*req_peer_addr)(const weft_req *req, int *port);
    /** The local address and port of the listener the request arrived on. */
    const char *(*req_local_addr)(const weft_req *req, int *port);
    /**
     * The i-th request header (0-based, arrival order, names lowercase):
     * WEFT_OK with *name, *value and *value_len set, WEFT_ERROR past the last.
     * A header sent twice appears twice.
     */
    int (*req_header_at)(const weft_req *req, size_t i, const char **name, const char **value, size_t *value_len);
    /** The i-th query parameter, percent-decoded ('+' is a space), as req_header_at. */
    int (*req_query_at)(const weft_req *req, size_t i, const char **name, const char **value, size_t *value_len);
    /** The raw query string after '?', not decoded; NULL when the target has no '?'. */
    const char *(*req_query_string)(const weft_req *req);
    /** req_param / req_query / req_header with the value's length in *len; NULL if absent. */
    const char *(*req_param_len)(const weft_req *req, const char *name, size_t *len);
    const char *(*req_query_len)(const weft_req *req, const char *name, size_t *len);
    const char *(*req_header_len)(const weft_req *req, const char *name, size_t *len);
    /** The value of cookie `name` (from every Cookie header, quotes removed), its length in *len; NULL if absent. */
    const char *(*req_cookie)(const weft_req *req, const char *name, size_t *len);
    /**
     * The request id: the client's X-Request-Id when it is 1..64 characters
     * of [A-Za-z0-9._:-], else one weft made up. It is sent back as
     * X-Request-Id, written to the access log and put in host->log lines.
     */
    const char *(*req_id)(const weft_req *req);

    /* ---- response helpers ---- */
    /**
     * Replaces the response with `status` and {"error": message, "status":
     * status} as application/json (the message is escaped by the host;
     * invalid UTF-8 becomes U+FFFD). Headers set before are dropped, as by
     * res_error.
     */
    int (*res_error_json)(weft_req *req, int status, const char *message);
    /**
     * Adds a Set-Cookie header. `value` must be cookie-octets (no spaces,
     * quotes, commas, semicolons, backslashes or controls: encode it first);
     * max_age < 0 is a session cookie, 0 deletes it; path and domain may be
     * NULL; flags are WEFT_COOKIE_*. WEFT_ERROR, and nothing added, if
     * anything is not allowed.
     */
    int (*res_cookie)(weft_req *req, const char *name, const char *value, long long max_age, const char *path,
                      const char *domain, unsigned flags);
    /** Redirect: status 301, 302, 303, 307 or 308 with Location `location`; WEFT_ERROR for another status. */
    int (*res_redirect)(weft_req *req, int status, const char *location);

    /* ---- streamed responses ---- */
    /**
     * Sends what res_write/res_printf/res_sse appended since the last flush
     * as the next part of the body; the first flush sends the status and
     * headers (set them first), and the response is then streamed (HTTP/1.1
     * chunked, HTTP/2 DATA frames) until the handler finishes, which sends
     * the rest. Blocking style: waits (worker blocks, coroutine suspends)
     * until the connection took the part, so memory per stream stays at one
     * part. WEFT_OK; WEFT_CANCELLED once the client has left (stop producing
     * and return); WEFT_ERROR on misuse (reactive handler).
     */
    int (*res_flush)(weft_req *req);
    /** Reactive form: `cb` runs with the rc once the part was taken; no writes to the body until then. */
    void (*res_flush_async)(weft_req *req, weft_callback cb, void *arg);
    /**
     * Appends one Server-Sent Event ("id: …", "event: …", one "data: …" per
     * line of `data`, blank line); id and event may be NULL and must not
     * contain CR or LF. Before the first flush it also sets
     * content-type text/event-stream and cache-control no-cache unless a
     * content type was set. Flush to send it.
     */
    int (*res_sse)(weft_req *req, const char *id, const char *event, const char *data);

    /* ---- plugin-level lifecycle ---- */
    /**
     * In init(): the plugin-wide state load() returned for this
     * configuration (NULL without a load hook). In load(): NULL.
     */
    void *(*init_plugin_state)(const weft_init *ctx);

    /* ---- cancellation ---- */
    /**
     * Non-zero once the request is withdrawn: its client went away or its
     * route's timeout_ms passed. Nobody will read the answer, so a long
     * computation should stop and return. Cheap (one atomic load); any
     * thread. The host's own waits (sleep, locks, queries, fd_wait,
     * http_fetch, ws_recv) already end with WEFT_CANCELLED by themselves.
     */
    int (*req_cancelled)(const weft_req *req);
    /* ---- waiting on the plugin's own file descriptors (check WEFT_HOST_HAS(host, fd_wait)) ---- */
    /**
     * Waits until `fd` is ready for `events` (WEFT_FD_READ and/or
     * WEFT_FD_WRITE) or `timeout_ms` passed (< 0: no timeout). Blocking
     * style: blocks a pool worker, suspends a coroutine while its loop
     * serves others. Returns WEFT_OK with the ready events in *revents (may be
     * NULL), WEFT_TIMEOUT, WEFT_ERROR (bad descriptor or events),
     * WEFT_UNAVAILABLE (out of memory or of descriptors) or WEFT_CANCELLED
     * (the request was withdrawn). The plugin keeps owning `fd` and must not
     * close it while the wait runs; the request's loop watches a private
     * dup() of it, and the open file is switched to O_NONBLOCK for good. Readiness is level-triggered: read or write until
     * EAGAIN before waiting again, or the wait returns at once.
     */
    int (*fd_wait)(weft_req *req, int fd, unsigned events, int timeout_ms, unsigned *revents);
    /** Callback form of fd_wait for reactive handlers (loop thread only); `cb` runs exactly once. */
    void (*fd_wait_async)(weft_req *req, int fd, unsigned events, int timeout_ms, weft_fd_callback cb, void *arg);

    /* ---- outbound HTTP/1.1 client (check WEFT_HOST_HAS(host, http_free)) ---- */
    /**
     * Sends `rq` and waits for the whole response. Blocking style: blocks a
     * pool worker, suspends a coroutine. Connections are kept alive and
     * pooled per loop and upstream; https verifies the certificate chain and
     * the host name. Returns WEFT_OK when a response arrived (any status;
     * answer as you see fit), WEFT_TIMEOUT (connect or total timeout: 504),
     * WEFT_UNAVAILABLE (DNS, refused, TLS, reset, malformed, too large, out
     * of resources: 502/503), WEFT_ERROR (a bad request: a bug), or
     * WEFT_CANCELLED. *res is always set (NULL only when out of memory) and
     * tells exactly what happened; free it with http_free().
     */
    int (*http_fetch)(weft_req *req, const weft_http_request *rq, weft_http_response **res);
    /**
     * Sends n requests at once (rqs is an array of n weft_http_request) and
     * waits until every one has its outcome in res[i] (each as http_fetch).
     * Returns WEFT_OK once all are done, or an error when none could start.
     */
    int (*http_fetch_all)(weft_req *req, size_t n, const weft_http_request *rqs, weft_http_response **res);
    /** Callback form for reactive handlers (loop thread only); several may run at once. */
    void (*http_fetch_async)(weft_req *req, const weft_http_request *rq, weft_http_callback cb, void *arg);
    /** A response header's value (name case-insensitive), or NULL. */
    const char *(*http_header)(const weft_http_response *res, const char *name);
    void (*http_free)(weft_http_response *res);

    /* ---- WebSockets (check WEFT_HOST_HAS(host, ws_close)) ---- */
    /**
     * Accepts a WebSocket handshake (HTTP/1.1 GET with Upgrade: websocket):
     * the host answers 101 and the request stays open as long as the socket.
     * NULL when the request is not a handshake (answer 400 yourself) or the
     * client is gone. Blocking style in pool and coroutine, immediate in
     * reactive handlers.
     */
    weft_ws *(*ws_accept)(weft_req *req);
    /**
     * Blocking-style receive (pool: blocks the worker; coroutine: suspends).
     * WEFT_OK with *type (WEFT_WS_TEXT, _BINARY, _PONG), *data and *len (valid
     * until the next ws_recv); WEFT_TIMEOUT after timeout_ms (< 0: none);
     * WEFT_CANCELLED once the socket closed, with *type WEFT_WS_CLOSE and
     * *len the close code, or once the request was withdrawn (its route's
     * timeout_ms passed), with *len 0. Return from the handler then.
     */
    int (*ws_recv)(weft_ws *ws, int timeout_ms, int *type, const void **data, size_t *len);
    /** Reactive handlers: `cb` gets every message (loop thread); return WEFT_AGAIN from handle_async. */
    void (*ws_on_message)(weft_ws *ws, weft_ws_callback cb, void *arg);
    /**
     * Queues a WEFT_WS_TEXT, _BINARY or _PING message (the data is copied).
     * Any thread, for any open socket whose request is not complete — so a
     * room may broadcast from one handler to sockets of every loop. Returns
     * WEFT_OK, WEFT_CANCELLED when the socket is closing, WEFT_UNAVAILABLE
     * when its send queue is full (a slow reader; it is then closed, 1008).
     */
    int (*ws_send)(weft_ws *ws, int type, const void *data, size_t len);
    /** Starts the closing handshake with `code` (1000 normal, 4000-4999 yours) and a short reason. Any thread. */
    void (*ws_close)(weft_ws *ws, int code, const char *reason);


    /* ---- timers (owned by the plugin load) ---- */
    /**
     * In load() or init(): calls cb(arg) on one event-loop thread after
     * `delay_ms`, then every `period_ms` (0: once). The timer belongs to the
     * plugin's load for this configuration: it starts once that
     * configuration serves (never for `weft -t` or a refused reload), and the
     * host stops it before the routes' fini and the plugin's unload run, so
     * unload never races a callback. A callback is timed like a reactive
     * handler (the blocked-loop detector reports one that blocks) and never
     * runs on a loop that is shutting down. NULL (with init_error called)
     * when cb is NULL or memory ran out.
     */
    weft_plugin_timer *(*timer_start)(weft_init *ctx, uint32_t delay_ms, uint32_t period_ms, weft_timer_fn cb,
                                      void *arg);
    /**
     * Stops a timer: its callback does not run again (one already running
     * on its loop is not waited for). Any thread, also inside its own
     * callback and in unload. WEFT_OK when this call stopped it,
     * WEFT_CANCELLED when it was already stopped (by an earlier call, or by
     * the host before unload).
     */
    int (*timer_stop)(weft_plugin_timer *t);

    /* ---- custom metrics (declared in load or init, updated from any thread) ---- */
    /**
     * Declares a series shown in /metrics as plugin_NAME{plugin="PLUGIN"}
     * (the plugin_ prefix keeps it apart from weft's own weft_* series).
     * NAME follows the Prometheus rules: 1..100 characters of [a-zA-Z0-9_],
     * not starting with a digit; a counter's name ends in _total and no
     * other's does; none ends in _bucket, _sum or _count. `help` is one line
     * without backslashes. Declaring the same name again (a reload of the
     * plugin, or a second route's init) returns the same series, whose
     * values carry on. NULL, and the load/init fails with a message naming
     * the plugin, when a rule is broken or the name is another type.
     */
    weft_metric *(*metric_counter)(weft_init *ctx, const char *name, const char *help);
    weft_metric *(*metric_gauge)(weft_init *ctx, const char *name, const char *help);
    /** A histogram over weft's own buckets (0.0005 … 10; seconds are the natural unit). */
    weft_metric *(*metric_histogram)(weft_init *ctx, const char *name, const char *help);
    /** Adds `v` to a counter (v >= 0; anything else is ignored) or a gauge. Any thread, lock-free. */
    void (*metric_add)(weft_metric *m, double v);
    /** Sets a gauge. Any thread. */
    void (*metric_set)(weft_metric *m, double v);
    /** Records one observation in a histogram. Any thread, lock-free. */
    void (*metric_observe)(weft_metric *m, double v);

    /* ==== ABI 1.2 additions: check WEFT_HOST_HAS(host, field) before use ==== */

    /* ---- the request body as it arrives ---- */
    /**
     * The next part of the request body. On a route with `stream_body =
     * true` the body streams: each call returns the next part as it arrives
     * (pool: blocks the worker; coroutine: suspends the coroutine), and the
     * client can send more only as the plugin reads on (backpressure), so a
     * large upload costs one part of memory. On other routes the whole body
     * is one part. Returns WEFT_OK with *data and *len set, valid until the
     * next call, and *len == 0 once the body is over (for an empty body, at
     * the first call); WEFT_ERROR past the route's max_body (the answer is
     * then 413, whatever the handler sets) and from a reactive handler;
     * WEFT_TIMEOUT when the client sent nothing for limits.request_timeout_ms;
     * WEFT_CANCELLED once the client left or the route's timeout_ms passed.
     * On a streaming route req_body() has only what came with the head: use
     * this call.
     */
    int (*req_body_read)(weft_req *req, const void **data, size_t *len);
    /** Reactive form: `cb` gets the rc and the part (loop thread); no other read until it ran. */
    void (*req_body_read_async)(weft_req *req, weft_body_callback cb, void *arg);
} weft_host;

/** True when the running host provides `field` (a host table member added after ABI 1.0). */
#define WEFT_HOST_HAS(host, field) \
    ((host)->struct_size >= offsetof(weft_host, field) + sizeof(((weft_host *)0)->field))

/**
 * The descriptor a plugin returns from weft_plugin_entry(). Declare it
 * `static const` and start it with WEFT_PLUGIN_HEADER.
 *
 * Per-route state returned by init() is shared by every thread that serves
 * the route (several event loops and worker threads at once): keep it
 * read-only after init, or protect it (atomics, host mutexes).
 */
typedef struct weft_plugin {
    uint32_t magic;       /**< WEFT_PLUGIN_MAGIC */
    uint32_t abi_version; /**< WEFT_PLUGIN_ABI the plugin was built against */
    uint32_t struct_size; /**< sizeof(weft_plugin) the plugin was built against */
    uint32_t flags;       /**< reserved, 0 */
    const char *name;     /**< plugin name as used in config; [a-z0-9_-], unique */
    const char *version;  /**< free-form version string shown in logs and status */
    const char *description;

    /** Once per route using the plugin, before it serves. Return WEFT_OK and set *state, or fail. */
    int (*init)(const weft_host *host, weft_init *ctx, void **state);
    /** Once per route when its last request is done (shutdown or reload). */
    void (*fini)(void *state);
    /**
     * Blocking-style handler, used by the `pool` and `coroutine` policies.
     * May call the blocking-style primitives. Returns WEFT_OK or WEFT_ERROR.
     */
    int (*handle)(weft_req *req, void *state);
    /**
     * Callback-style handler, used by the `reactive` policy, on the loop
     * thread. Must never block. Returns WEFT_OK when the response is complete,
     * WEFT_AGAIN when it will call host->done() later, or WEFT_ERROR.
     */
    int (*handle_async)(weft_req *req, void *state);

    /* ==== ABI 1.1 additions (a descriptor from the 1.0 header is widened with NULLs) ==== */
    /**
     * Optional. Once per plugin and configuration (start-up, and each reload
     * builds its own), before the first route's init: reads the plugin's
     * options from the config's `plugins = { NAME = { … }; }` group with
     * host->opt_* (wrong types and unknown options fail like route options;
     * init_route() gives NULL here) and sets *plugin_state, which every
     * route's init gets from host->init_plugin_state(ctx). WEFT_OK or fail
     * (init_error says why).
     */
    int (*load)(const weft_host *host, weft_init *ctx, void **plugin_state);
    /** Optional. After the last route's fini of that configuration. */
    void (*unload)(void *plugin_state);
} weft_plugin;

/** Initialiser for the first four descriptor fields. */
#define WEFT_PLUGIN_HEADER \
    .magic = WEFT_PLUGIN_MAGIC, .abi_version = WEFT_PLUGIN_ABI, .struct_size = sizeof(weft_plugin), .flags = 0

/** Signature of the exported entry function. */
typedef const weft_plugin *(*weft_plugin_entry_fn)(void);

/** Every plugin defines this function (and nothing else needs exporting). */
WEFT_EXPORT const weft_plugin *weft_plugin_entry(void);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_PLUGIN_H */
