/*
 * Built-in observability endpoints, on the main listener by default (Knative
 * gives a service one port) or on the admin listener:
 *   GET /metrics        Prometheus text format
 *   GET /health/live    the process serves
 *   GET /health/ready   config loaded, database reachable when configured,
 *                       not draining — JSON listing each check (SmallRye style)
 */
#ifndef WEFT_OBSERVE_H
#define WEFT_OBSERVE_H

#include "base/h2o_glue.h"

/** Answers `req` if it is for an endpoint enabled on this listener (WEFT_ON_MAIN/ADMIN); returns 1 then. */
int weft_observe_handle(h2o_req_t *req, int listener);

#endif
