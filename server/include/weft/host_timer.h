/*
 * weft/host_timer.h — the `timer` group: periodic work owned by a plugin's
 * load for one configuration.
 */
#ifndef WEFT_HOST_TIMER_H
#define WEFT_HOST_TIMER_H

#include <weft/types.h>

#define WEFT_HOST_TIMER_VERSION 1u

typedef struct weft_host_timer {
    uint32_t struct_size;
    uint32_t version; /**< WEFT_HOST_TIMER_VERSION of the running host */
    /**
     * In load() or init() only: calls cb(arg) on one event-loop thread
     * after `delay_ms`, then every `period_ms` (0: once). It starts once
     * that configuration serves (never for `weft -t` or a refused reload),
     * and the host stops it before the routes' fini and the plugin's unload
     * run, so unload never races a callback. A callback is timed like a
     * reactive handler and never runs on a loop that is shutting down.
     * NULL (with the init error set) when cb is NULL or memory ran out.
     */
    weft_plugin_timer *(*start)(weft_init *ctx, uint32_t delay_ms, uint32_t period_ms, weft_timer_fn cb, void *arg);
    /**
     * Stops a timer: its callback does not run again (one already running
     * on its loop is not waited for). Any thread, also inside its own
     * callback and in unload. Idempotent: WEFT_OK whether this call stopped
     * it or it was stopped already (by an earlier call, or by the host
     * before unload); WEFT_ERROR only for NULL.
     */
    weft_rc (*stop)(weft_plugin_timer *t);
} weft_host_timer;

#endif
