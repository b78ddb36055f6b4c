/*
 * weft/types.h — what every group of the plugin API shares: the result code,
 * log levels, the opaque handles and the completion callbacks. Included by
 * weft/plugin.h and by each weft/host_*.h; libc types only.
 */
#ifndef WEFT_TYPES_H
#define WEFT_TYPES_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

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
    WEFT_ERROR = -1,       /**< failed (misuse, bad argument, SQL error...); the host answers 500 if no status was set */
    WEFT_AGAIN = -2,       /**< started: the callback runs later (or ran already); a reactive handler returns it */
    WEFT_TIMEOUT = -3,     /**< a host primitive gave up (e.g. statement timeout) */
    WEFT_UNAVAILABLE = -4, /**< a host service (database, pool, memory) cannot take the work now */
    WEFT_CANCELLED = -5    /**< the server is shutting down or the work was withdrawn */
} weft_rc;

/** Log levels, numbered as syslog priorities so journald understands them. */
typedef enum weft_log_level {
    WEFT_LOG_ERROR = 3,
    WEFT_LOG_WARN = 4,
    WEFT_LOG_INFO = 6,
    WEFT_LOG_DEBUG = 7
} weft_log_level;

/** A request in flight. Opaque but for its first member (weft_req_host); valid until its response is complete. */
typedef struct weft_req weft_req;
/** A route (or plugin load) being initialised. Opaque; valid only during init() / load(). */
typedef struct weft_init weft_init;
/** A database result owned by the plugin until db->result_free(). Opaque. */
typedef struct weft_result weft_result;
/** A host-provided fair (FIFO) lock that works across worker threads, coroutines and callbacks. */
typedef struct weft_mutex weft_mutex;
/** A plugin timer. Opaque; valid until the plugin load that started it is unloaded. */
typedef struct weft_plugin_timer weft_plugin_timer;
/** A plugin's own metric series. Opaque; valid for the life of the process. */
typedef struct weft_metric weft_metric;
/** An accepted WebSocket. Opaque; valid until its request is complete. */
typedef struct weft_ws weft_ws;
struct weft_host;

/**
 * The public head of every request (API 2): the host table the request is
 * served with. Read it with weft_req_host(); never write it.
 */
struct weft_req_head {
    const struct weft_host *host;
};

/**
 * Completion callback of a host call started with a callback (reactive
 * style). Runs exactly once, on the event-loop thread that owns `req`,
 * possibly before the call that started it returns. `rc` is a weft_rc.
 */
typedef void (*weft_callback)(weft_req *req, void *arg, int rc);

/** A timer's callback: runs on an event-loop thread, must not block. */
typedef void (*weft_timer_fn)(void *arg);

#endif /* WEFT_TYPES_H */
