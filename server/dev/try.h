/*
 * The Dev UI's "try it" box: a form on the /dev page, and POST /dev/try,
 * which sends the request it describes to this server's own main listener
 * and answers with what came back. The page lives on the admin listener and
 * the routes on the main one (another origin), so the browser cannot send
 * there itself; the server relays, and only ever to itself.
 */
#ifndef WEFT_DEV_TRY_H
#define WEFT_DEV_TRY_H

#include <stdio.h>

#include "base/h2o_glue.h"
#include "reload/generation.h"

/** The box's HTML: a select of the generation's routes with their methods, path, query, headers, body. */
void weft_dev_try_box(FILE *f, const weft_generation *g);
/**
 * POST /dev/try {"method", "path" (with the query), "headers": [[name,
 * value]...], "body"}: answers {"status", "headers", "body" (the first 64
 * KiB, as UTF-8), "body_bytes", "truncated", "ms"}, or {"error"} with 400
 * (a bad request) or 502 (no answer). Loop thread.
 */
void weft_dev_try(h2o_req_t *req);

#endif
