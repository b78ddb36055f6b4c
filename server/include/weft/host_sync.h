/*
 * weft/host_sync.h — the `sync` group: sleeping and fair locks that suit
 * every policy. The calls with a `cb` follow one convention (libuv's):
 *   cb NULL  — blocking style, for `pool` and `coroutine` handlers: the
 *              worker blocks or the coroutine suspends while its loop serves
 *              others; the call returns the outcome.
 *   cb set   — reactive style, on the request's loop thread only: the call
 *              returns WEFT_AGAIN and cb(req, arg, rc) runs exactly once
 *              with the outcome, possibly before the call returns.
 */
#ifndef WEFT_HOST_SYNC_H
#define WEFT_HOST_SYNC_H

#include <weft/types.h>

#define WEFT_HOST_SYNC_VERSION 1u

typedef struct weft_host_sync {
    uint32_t struct_size;
    uint32_t version; /**< WEFT_HOST_SYNC_VERSION of the running host */
    /**
     * Waits `ms` milliseconds. WEFT_OK, or WEFT_CANCELLED when the request
     * was withdrawn first. Blocking style from a reactive handler blocks the
     * loop, and the blocked-loop detector reports it.
     */
    weft_rc (*sleep)(weft_req *req, uint32_t ms, weft_callback cb, void *arg);
    /** A new mutex (any thread, also load/init); NULL when out of memory. */
    weft_mutex *(*mutex_new)(void);
    /** Frees a mutex nobody holds or waits for. Any thread. */
    void (*mutex_free)(weft_mutex *m);
    /**
     * Takes `m` for `req` (waiters are served in arrival order, whatever
     * context they wait in). WEFT_OK once held; WEFT_CANCELLED when the
     * request was withdrawn while waiting; blocking style from a reactive
     * handler: WEFT_ERROR (it would block the loop).
     */
    weft_rc (*lock)(weft_req *req, weft_mutex *m, weft_callback cb, void *arg);
    /** Releases `m`, held by `req`; the oldest waiter gets it. Any context. */
    void (*unlock)(weft_req *req, weft_mutex *m);
} weft_host_sync;

#endif
