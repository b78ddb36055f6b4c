/*
 * The bridge between h2o and weft requests, on the loop thread: routing an
 * h2o request, copying it into a weft_req, and turning the finished weft_req
 * back into an h2o response.
 */
#ifndef WEFT_HTTP_H
#define WEFT_HTTP_H

#include "base/h2o_glue.h"
#include "request/request.h"

/** Installs weft's request handler on an h2o path. */
void weft_http_register(h2o_pathconf_t *pathconf);

#endif
