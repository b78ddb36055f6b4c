/*
 * The probe: new plugin code runs first in a short-lived child process.
 * Before a generation that loads a new or changed plugin version is built,
 * a child loads those versions and runs each affected route's init and fini:
 * at start-up, while the process has a single thread, a fork of it; later
 * the same binary exec'd (never a bare fork of the threaded server). If the
 * child dies by a signal, exits, or hangs, the generation is refused with
 * the plugin, version and route named, and nothing of that code ever ran in
 * the server. `weft -t` builds its generation the same way.
 */
#ifndef WEFT_PROBE_H
#define WEFT_PROBE_H

#include <stddef.h>

#include "base/errors.h"
#include "config/config.h"

/** argv[1] of a probe child. */
#define WEFT_PROBE_ARG "__probe"

/**
 * Turns probing on: only the weft binary can be its own probe (a unit test
 * linking the server's code is not).
 */
void weft_probe_enable(void);

/**
 * Runs a probe child for the routes of `cfg` that use one of `names` and
 * waits for it (WEFT_PROBE_TIMEOUT_MS, default 10000). Returns 0 when it
 * finished on its own, or -1 with the reason in `errs`.
 */
int weft_probe_run(const weft_config *cfg, const char *const *names, size_t n, weft_errors *errs);

/** The child: `weft __probe CONFIG NAME...`, the config text on stdin. */
int weft_probe_child_main(int argc, char **argv);

#endif
