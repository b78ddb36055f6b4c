/*
 * weft/host_response.h — the `response` group: building the answer, and
 * completing it from a reactive handler. The response is buffered in the
 * host (streamed with the `stream` group); calls return WEFT_ERROR, and
 * change nothing, when an argument is not allowed (header injection, a bad
 * status): never a partial effect.
 */
#ifndef WEFT_HOST_RESPONSE_H
#define WEFT_HOST_RESPONSE_H

#include <weft/types.h>

#define WEFT_HOST_RESPONSE_VERSION 1u

/** Set-Cookie attribute flags for cookie(). */
enum {
    WEFT_COOKIE_SECURE = 1u,
    WEFT_COOKIE_HTTPONLY = 2u,
    WEFT_COOKIE_SAMESITE_LAX = 4u,
    WEFT_COOKIE_SAMESITE_STRICT = 8u,
    WEFT_COOKIE_SAMESITE_NONE = 16u /**< needs WEFT_COOKIE_SECURE */
};

typedef struct weft_host_response {
    uint32_t struct_size;
    uint32_t version; /**< WEFT_HOST_RESPONSE_VERSION of the running host */
    /** Sets the status (default 200). WEFT_ERROR, and the status unchanged, outside 100..599. */
    weft_rc (*status)(weft_req *req, int status);
    /** Adds a header. WEFT_ERROR for an empty name, a name with space or ':' or either with CR/LF. */
    weft_rc (*header)(weft_req *req, const char *name, const char *value);
    /** Appends bytes to the body. WEFT_ERROR when out of memory. */
    weft_rc (*write)(weft_req *req, const void *data, size_t len);
    /** Appends formatted text to the body, as write. */
    weft_rc (*writef)(weft_req *req, const char *fmt, ...) WEFT_PRINTF(2, 3);
    /**
     * Replaces the response with `status` and a plain-text `message`.
     * Headers set before are dropped with the body: add Retry-After and the
     * like after.
     */
    weft_rc (*error)(weft_req *req, int status, const char *message);
    /** As error() with {"error": message, "status": status} as application/json (escaped by the host). */
    weft_rc (*error_json)(weft_req *req, int status, const char *message);
    /**
     * Adds a Set-Cookie header. `value` must be cookie-octets; max_age < 0
     * is a session cookie, 0 deletes it; path and domain may be NULL; flags
     * are WEFT_COOKIE_*. WEFT_ERROR, and nothing added, if anything is not allowed.
     */
    weft_rc (*cookie)(weft_req *req, const char *name, const char *value, long long max_age, const char *path,
                      const char *domain, unsigned flags);
    /** Redirect: status 301, 302, 303, 307 or 308 with Location; WEFT_ERROR for another status. */
    weft_rc (*redirect)(weft_req *req, int status, const char *location);
    /**
     * Reactive handlers: the response is complete, with outcome `rc`, after
     * handle_async returned WEFT_AGAIN. Exactly once per such request; any
     * thread (from another one the completion is posted to the request's
     * loop); safe inside a host callback. `req` is gone when it returns.
     * A wait the handler started and did not see end (a sleep, lock,
     * descriptor, body read, fetch or statement with a callback) is
     * stopped then and its callback never runs; a lock granted meanwhile
     * goes to the next waiter.
     */
    void (*done)(weft_req *req, int rc);
} weft_host_response;

#endif
