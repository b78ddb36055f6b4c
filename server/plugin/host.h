/*
 * The host tables handed to plugins: API 2's table of groups (host.c, one
 * group per host_*.c) and ABI 1's flat compatibility table (host_abi1.c).
 * route_init.c picks the one a plugin's descriptor was built for.
 */
#ifndef WEFT_HOST_H
#define WEFT_HOST_H

#include <weft/plugin.h>

#include "plugin/abi1.h"

/** Both tables, so that callers of route_init need not know the ABIs. */
typedef struct weft_host_set {
    const weft_host *abi2;
    const weft_host_v1 *abi1;
} weft_host_set;

extern const weft_host_set weft_host_table;
/** API 2's table: weft_req_host() of every request reads it. */
extern const weft_host weft_host_api2;
/** ABI 1's table. */
extern const weft_host_v1 weft_host_api1;

/* The groups (plugin/host_GROUP.c each). */
extern const weft_host_log weft_host_log_group;
extern const weft_host_init weft_host_init_group;
extern const weft_host_request weft_host_request_group;
extern const weft_host_response weft_host_response_group;
extern const weft_host_sync weft_host_sync_group;
extern const weft_host_db weft_host_db_group;
extern const weft_host_tx weft_host_tx_group;
extern const weft_host_stream weft_host_stream_group;
extern const weft_host_http weft_host_http_group;
extern const weft_host_ws weft_host_ws_group;
extern const weft_host_fd weft_host_fd_group;
extern const weft_host_timer weft_host_timer_group;
extern const weft_host_metric weft_host_metric_group;

/* Shared by both tables. */
void weft_host_log_msg(const weft_req *r, int level, const char *fmt, ...) WEFT_PRINTF(3, 4);
weft_ws *weft_host_ws_accept(weft_req *r);

#endif
