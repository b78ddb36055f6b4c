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

/**
 * Registers the endpoints enabled on a listener (WEFT_ON_MAIN/ADMIN) as an
 * h2o handler on its path; it declines every other request.
 */
void weft_observe_register(h2o_pathconf_t *path, int listener);

#endif
