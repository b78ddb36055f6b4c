/*
 * The running server: h2o's global configuration and host list, the
 * listening sockets, the loops, and the control thread (main) that starts,
 * reloads and stops everything. Its state is private to process/server.c;
 * the loops' list belongs to core/loop.c and the serving generation to
 * reload/reload.c.
 */
#ifndef WEFT_SERVER_H
#define WEFT_SERVER_H

#include "reload/generation.h"

/** Binds, starts the loops, serves until SIGTERM/SIGINT, drains, returns the exit code. */
int weft_server_run(weft_generation *gen);

#endif
