/*
 * The running server: h2o's global configuration, the loop threads, the
 * listening sockets, and the start/serve/stop sequence driven by main().
 */
#ifndef WEFT_SERVER_H
#define WEFT_SERVER_H

#include "config.h"
#include "generation.h"
#include "h2o_glue.h"
#include "loop.h"

typedef struct weft_server {
    weft_config *cfg; /* owned by gen */
    weft_generation *gen;
    h2o_globalconf_t h2o;
    h2o_hostconf_t *hostconf;
    h2o_access_log_filehandle_t *access_log;
    int n_loops;
    weft_loop *loops;
    int started_ok;
} weft_server;

extern weft_server weft_srv;

/** Binds, starts the loops, serves until SIGTERM/SIGINT, drains, returns the exit code. */
int weft_server_run(weft_generation *gen);

#endif
