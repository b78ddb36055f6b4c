/*
 * Live reconfiguration. A reload builds a complete new generation from the
 * config file (or, when only plugin files changed, from the config text that
 * is serving) and swaps it in on every loop; requests already running finish
 * on the generation they started on, and the old one is destroyed — fini,
 * dlclose — by the control thread when its last request is done. If anything
 * fails, nothing changes and the old generation keeps serving.
 */
#ifndef WEFT_RELOAD_H
#define WEFT_RELOAD_H

#include <time.h>

#include "reload/generation.h"

typedef enum { WEFT_RELOAD_CONFIG, WEFT_RELOAD_PLUGINS } weft_reload_kind;

typedef struct weft_reload_status {
    unsigned long generation; /* serving generation */
    unsigned long ok, failed; /* reload counts */
    time_t at;                /* last attempt, 0 if none */
    int last_ok;
    char message[2048]; /* last outcome, one line per problem */
} weft_reload_status;

/** Runs a reload on the control thread; returns 0 if the new generation serves. */
int weft_reload(weft_reload_kind kind, const char *why);
/** A copy of the latest reload outcome (any thread). */
void weft_reload_status_get(weft_reload_status *out);
/** Records the first generation (start-up); reload owns its reference from now on. */
void weft_reload_init(weft_generation *first);
/** The serving generation (control thread). */
weft_generation *weft_reload_serving(void);
/** Drops the serving generation (at exit, after the loops stopped). */
void weft_reload_shutdown(void);

#endif
