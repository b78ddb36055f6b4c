/*
 * The control thread (main): turns signals, file changes and admin requests
 * into reloads, and destroys old generations once their last request is
 * done — so neither loop threads nor workers ever run a plugin's fini or
 * join a pool.
 */
#ifndef WEFT_CONTROL_H
#define WEFT_CONTROL_H

#include <stddef.h>

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
/**
 * Where the server keeps a copy of the config text it serves (mode 0600,
 * next to the pid file): `weft reload` compares a new file with it and
 * refuses restart-only changes before signalling.
 */
void weft_control_serving_path(const char *pid_file, char *out, size_t size);

#endif
