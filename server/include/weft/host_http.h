/*
 * weft/host_http.h — the `http` group: calling other HTTP/1.1 services,
 * with keep-alive connections pooled per loop and upstream and verified
 * TLS. The `cb` convention is the one of weft/host_sync.h.
 *
 * One error channel: the call's weft_rc is the outcome, always
 * weft_http_error's mapping below when a response record exists; the
 * record's `error` only refines it (which 502/503 to answer, what to log).
 *   WEFT_HTTP_OK                                  -> WEFT_OK (any HTTP status)
 *   WEFT_HTTP_CONNECT_TIMEOUT, WEFT_HTTP_TIMEOUT  -> WEFT_TIMEOUT   (504)
 *   WEFT_HTTP_CANCELLED                           -> WEFT_CANCELLED
 *   WEFT_HTTP_BAD_REQUEST                         -> WEFT_ERROR     (a bug: URL, method, header)
 *   every other error                             -> WEFT_UNAVAILABLE (502/503)
 * No record (NULL) only when the call could not start: out of memory
 * (WEFT_UNAVAILABLE) or misuse (WEFT_ERROR).
 */
#ifndef WEFT_HOST_HTTP_H
#define WEFT_HOST_HTTP_H

#include <weft/types.h>

#define WEFT_HOST_HTTP_VERSION 1u

/** Why an outbound HTTP call gave no response (weft_http_response.error). */
typedef enum weft_http_error {
    WEFT_HTTP_OK = 0,              /**< a response arrived, whatever its status */
    WEFT_HTTP_BAD_REQUEST = 1,     /**< the call itself is wrong: URL, method or header (logged) */
    WEFT_HTTP_DNS = 2,             /**< the host name did not resolve */
    WEFT_HTTP_REFUSED = 3,         /**< connection refused or host unreachable */
    WEFT_HTTP_CONNECT_TIMEOUT = 4, /**< no connection (DNS, TCP and TLS) within connect_timeout_ms */
    WEFT_HTTP_TIMEOUT = 5,         /**< no complete response within timeout_ms */
    WEFT_HTTP_TLS = 6,             /**< TLS handshake or certificate verification failed */
    WEFT_HTTP_RESET = 7,           /**< the upstream closed or reset the connection mid-exchange */
    WEFT_HTTP_TOO_LARGE = 8,       /**< the response body is larger than max_body */
    WEFT_HTTP_PROTOCOL = 9,        /**< the answer is not valid HTTP/1.x */
    WEFT_HTTP_NO_RESOURCES = 10,   /**< out of memory or of file descriptors here */
    WEFT_HTTP_CANCELLED = 11       /**< the request was withdrawn (client gone, deadline) or the server stops */
} weft_http_error;

/**
 * One outbound request, built by the plugin; the host copies what it needs
 * before the call returns. Initialise with WEFT_HTTP_REQUEST_INIT (the host
 * reads struct_size to know which fields the plugin has).
 */
typedef struct weft_http_request {
    uint32_t struct_size;
    const char *method;         /**< NULL: "GET" */
    const char *url;            /**< "http://host[:port]/path?query" or "https://..." */
    const char *const *headers; /**< NULL, or name, value, name, value, ..., NULL */
    const void *body;           /**< sent with a Content-Length */
    size_t body_len;
    int connect_timeout_ms;     /**< DNS + TCP + TLS; 0: 5000 */
    int timeout_ms;             /**< the whole exchange; 0: 30000 */
    size_t max_body;            /**< largest response body accepted; 0: 1 MiB */
    const char *ca_file;        /**< https: trust only the CAs in this PEM file; NULL: the system store */
    int max_connections;        /**< per loop and upstream, set by the first call to it; 0: 64 */
} weft_http_request;

#define WEFT_HTTP_REQUEST_INIT {.struct_size = sizeof(weft_http_request)}

/** The outcome of one call; owned by the plugin until response_free(). */
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
 * Completion of fetch() started with a callback, on the loop thread that
 * owns `req`: `rc` as above; `res` (NULL only when out of memory) belongs
 * to the callback, which frees it with response_free().
 */
typedef void (*weft_http_callback)(weft_req *req, void *arg, int rc, weft_http_response *res);

typedef struct weft_host_http {
    uint32_t struct_size;
    uint32_t version; /**< WEFT_HOST_HTTP_VERSION of the running host */
    /**
     * Sends `rq` and gets the whole response. cb NULL (pool, coroutine):
     * waits and sets *res (free it; res NULL: the host frees it); from a
     * reactive handler WEFT_ERROR. cb set (reactive, loop thread): WEFT_AGAIN, `res` is not
     * written (may be NULL); several calls may run at once.
     */
    weft_rc (*fetch)(weft_req *req, const weft_http_request *rq, weft_http_response **res, weft_http_callback cb,
                     void *arg);
    /**
     * Blocking style only (pool, coroutine): sends n requests at once (rqs
     * is an array of n) and waits until every res[i] has its outcome (each
     * as fetch). WEFT_OK once all are done, or an error when none could
     * start (every res[i] is then NULL).
     */
    weft_rc (*fetch_all)(weft_req *req, size_t n, const weft_http_request *rqs, weft_http_response **res);
    /** A response header's value (name case-insensitive), or NULL. */
    const char *(*response_header)(const weft_http_response *res, const char *name);
    /** Frees a response (NULL is fine). Any thread. */
    void (*response_free)(weft_http_response *res);
} weft_host_http;

#endif
