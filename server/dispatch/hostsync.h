/*
 * The host's sleep and lock primitives, one implementation per execution
 * context: on a pool worker they block the thread; in a coroutine they
 * suspend it and the loop resumes it later; the *_async forms take a
 * callback for reactive handlers. This is what lets one blocking-style
 * handler run unchanged on platform-thread-like and virtual-thread-like
 * policies.
 */
#ifndef WEFT_HOSTSYNC_H
#define WEFT_HOSTSYNC_H

#include <weft/plugin.h>

int weft_hostsync_sleep_ms(weft_req *r, uint32_t ms);
void weft_hostsync_sleep_async(weft_req *r, uint32_t ms, weft_callback cb, void *arg);

weft_mutex *weft_hostsync_mutex_new(void);
void weft_hostsync_mutex_free(weft_mutex *m);
int weft_hostsync_mutex_lock(weft_req *r, weft_mutex *m);
void weft_hostsync_mutex_lock_async(weft_req *r, weft_mutex *m, weft_callback cb, void *arg);
void weft_hostsync_mutex_unlock(weft_req *r, weft_mutex *m);
/** Requests queued for `m` now (any thread; for tests and diagnostics). */
int weft_hostsync_mutex_waiters(weft_mutex *m);

#endif
