/*
 * A static route: a directory served by h2o's own file handler
 * (lib/handler/file.c: ETag, Last-Modified, 304, Range, MIME types,
 * precompressed siblings, sendfile on cleartext HTTP/1), behind weft's
 * checks: no hidden file, no encoded slash, no escape from the directory
 * through a symlink (unless follow_symlinks), and no Range that would send
 * a file more than once over. One per route per generation, immutable once
 * built: every loop serves through it unlocked.
 */
#ifndef WEFT_EDGE_STATIC_H
#define WEFT_EDGE_STATIC_H

#include <stddef.h>

#include "base/h2o_glue.h"
#include "config/config.h"

typedef struct weft_static weft_static;

/**
 * Opens cfg->dir (resolved to its real path now: a reload picks up a moved
 * directory) and makes its handler, sharing `mimemap`. NULL with the reason
 * in `why`. Control thread.
 */
weft_static *weft_static_new(const weft_static_cfg *cfg, h2o_mimemap_t *mimemap, char *why, size_t size);
/** Control thread, once no request can reach it any more (its generation is gone). */
void weft_static_free(weft_static *s);
const weft_static_cfg *weft_static_cfg_of(const weft_static *s);

/* A request's path as the router matched it. */
typedef struct weft_static_target {
    const char *norm;  /* dot segments resolved, other escapes still encoded; not NUL-terminated */
    size_t len;
    size_t prefix_len; /* its first bytes: the route's prefix */
    int plain;         /* no escape and no segment starting with '.': nothing to decode or refuse */
} weft_static_target;

/**
 * Answers `req` from the directory for `t`. Returns the status sent (the
 * body may still be streaming: h2o owns it from here). Loop thread.
 */
int weft_static_serve(const weft_static *s, h2o_req_t *req, weft_static_target t);

#endif
