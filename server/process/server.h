/*
 * The running server: h2o's global configuration, the loop threads, the
 * listening sockets, and the control thread (main) that starts, reloads and
 * stops everything.
 */
#ifndef WEFT_SERVER_H
#define WEFT_SERVER_H

#include "config/config.h"
#include "reload/generation.h"
#include "base/h2o_glue.h"
#include "core/loop.h"

typedef struct weft_server {
    weft_config *cfg;     /* the serving generation's config; control thread only */
    weft_generation *gen; /* the serving generation; control thread only */
    h2o_globalconf_t h2o;
    h2o_hostconf_t *main_hosts[2];
    h2o_hostconf_t **admin_hosts;
    h2o_access_log_filehandle_t *access_log;
    int admin_fd; /* -1: no admin listener */
    int n_loops;
    weft_loop *loops;
} weft_server;

extern weft_server weft_srv;

/** Binds, starts the loops, serves until SIGTERM/SIGINT, drains, returns the exit code. */
int weft_server_run(weft_generation *gen);

#endif
