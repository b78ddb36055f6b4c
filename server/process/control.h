/*
 * The control thread (main): turns signals, file changes and admin requests
 * into reloads, and destroys old generations once their last request is
 * done — so neither loop threads nor workers ever run a plugin's fini or
 * join a pool.
 */
#ifndef WEFT_CONTROL_H
#define WEFT_CONTROL_H

#include "reload/generation.h"

/** Blocks SIGINT/SIGTERM/SIGHUP for all threads, writes the pid file, sets up watching. */
int weft_control_init(weft_generation *first);
/** Serves control events until SIGTERM or SIGINT; returns that signal. */
int weft_control_run(void);
/** Destroys generations whose last reference is gone. Control thread. */
void weft_control_reap(void);
/** Removes the pid file, stops the watcher. */
void weft_control_cleanup(void);
/** Wakes the control thread (any thread). */
void weft_control_wake(void);

#endif
