/*
 * The admin listener (config `admin`, default 127.0.0.1:9901, loopback only
 * unless allowed): operational endpoints that must never face the public.
 *   GET  /status   generation, routes with plugin version and policy, loaded
 *                  plugin versions (old ones still draining included), last
 *                  reload outcome — JSON
 *   POST /reload   asks the control thread to reload the config (202)
 * Served by loop 0 only.
 */
#ifndef WEFT_ADMIN_H
#define WEFT_ADMIN_H

#include "base/h2o_glue.h"

/** Registers /status and /reload on the admin host's path; the last handler there, it answers 404 to the rest. */
void weft_admin_register(h2o_pathconf_t *path);
/** Set by POST /reload; the control thread takes it. */
int weft_admin_take_reload_request(void);
/** The callback POST /reload uses to wake the control thread. */
void weft_admin_set_waker(void (*wake)(void));

/**
 * Registered first on the admin path: 1 when it refused the request (a Host
 * that is neither loopback nor in admin.allowed_hosts: 403; a state change
 * from a cross-site Origin or Sec-Fetch-Site: 403; /reload without the
 * admin.token_file bearer: 401), 0 to let the request through.
 */
int weft_admin_guard(h2o_req_t *req);

#endif
