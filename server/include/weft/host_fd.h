/*
 * weft/host_fd.h — the `fd` group: waiting on the plugin's own file
 * descriptors (any non-blocking client library). The `cb` convention is the
 * one of weft/host_sync.h.
 */
#ifndef WEFT_HOST_FD_H
#define WEFT_HOST_FD_H

#include <weft/types.h>

#define WEFT_HOST_FD_VERSION 1u

/** wait() events: the descriptor is readable / writable (a hang-up or error counts as both). */
#define WEFT_FD_READ 1u
#define WEFT_FD_WRITE 2u

/**
 * Completion of wait() started with a callback, on the loop thread that
 * owns `req`: `rc` as the blocking form, with the ready events in `revents`.
 */
typedef void (*weft_fd_callback)(weft_req *req, void *arg, int rc, unsigned revents);

typedef struct weft_host_fd {
    uint32_t struct_size;
    uint32_t version; /**< WEFT_HOST_FD_VERSION of the running host */
    /**
     * Waits until `fd` is ready for `events` (WEFT_FD_READ and/or
     * WEFT_FD_WRITE) or `timeout_ms` passed (< 0: no timeout). WEFT_OK with
     * the ready events in *revents (may be NULL); WEFT_TIMEOUT; WEFT_ERROR
     * (bad descriptor or events); WEFT_UNAVAILABLE (out of memory or of
     * descriptors); WEFT_CANCELLED (the request was withdrawn). The plugin
     * keeps owning `fd` and must not close it while the wait runs; the loop
     * watches a private dup() of it, and the open file is switched to
     * O_NONBLOCK for good. Level-triggered: read or write until EAGAIN
     * before waiting again. Blocking style from a reactive handler blocks
     * the loop (poll) and is reported. With a callback: WEFT_AGAIN, revents
     * not written, `cb` runs exactly once.
     */
    weft_rc (*wait)(weft_req *req, int fd, unsigned events, int timeout_ms, unsigned *revents, weft_fd_callback cb,
                    void *arg);
} weft_host_fd;

#endif
