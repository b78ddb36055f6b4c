/*
 * Something to do when h2o frees a request, with no allocation beyond the
 * request's own pool: a logger appended to this request's list
 * (h2o_req_t.loggers, which h2o takes from the path and lets a request
 * replace, as it does for subrequests). h2o runs it after the request's
 * generator and filters are closed and before its pool is cleared, on the
 * loop's thread, whether the answer was sent, cut short by the client or
 * reset; a stream reset is seen as a request that did not send all its
 * bytes. h2o_mem_alloc_shared's dispose would do the same with a malloc and
 * a free per request: on a static file's path that was 2 % of its cost.
 * h2o rebinds the list when it reprocesses a request (weft never does).
 */
#ifndef WEFT_REQUEST_END_HOOK_H
#define WEFT_REQUEST_END_HOOK_H

#include <stddef.h>

#include "base/h2o_glue.h"

/**
 * `size` bytes in `req`'s pool (aligned for any type, uninitialised);
 * `on_end(data, req)` runs when h2o frees `req`, after its access log
 * line. One per request. Loop thread.
 */
void *weft_end_hook_alloc(h2o_req_t *req, size_t size, void (*on_end)(void *data, h2o_req_t *req));

#endif
