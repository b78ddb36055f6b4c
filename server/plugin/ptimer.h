/*
 * Plugin timers (host->timer_start/timer_stop). Every timer belongs to one
 * plugin load of one generation (a weft_ptimers set): started only once that
 * generation serves, stopped — and waited for — before its fini and unload
 * hooks run, so plugin code never runs after unload nor on a loop that is
 * shutting down. Callbacks run on a loop thread as timed slices.
 */
#ifndef WEFT_PTIMER_H
#define WEFT_PTIMER_H

#include <weft/plugin.h>

typedef struct weft_ptimers weft_ptimers;

/** Registers the per-loop hook (control thread, before the loops start). */
void weft_ptimers_attach(void);
/** An empty set for plugin `name` (copied, for log lines); NULL without memory. */
weft_ptimers *weft_ptimers_new(const char *name);
/** Starts the set's timers on the running loops (control thread, once the generation serves). */
void weft_ptimers_activate(weft_ptimers *set);
/** Stops every timer of the set and waits until no callback runs or is due. Not on a loop thread. */
void weft_ptimers_stop_all(weft_ptimers *set);
/** Frees a stopped set (after unload: handles stay valid in unload). */
void weft_ptimers_free(weft_ptimers *set);

weft_plugin_timer *weft_ptimer_timer_start(weft_init *ctx, uint32_t delay_ms, uint32_t period_ms, weft_timer_fn cb,
                                           void *arg);
int weft_ptimer_timer_stop(weft_plugin_timer *t);

#endif
