/*
 * API 2's host table: one pointer per group. A new host service is one
 * more line here (appended: the table only grows) pointing at the group its
 * folder exports; see docs/PLUGIN-API.md.
 */
#include "plugin/host.h"

#include "version.h"

const weft_host weft_host_api2 = {
    .struct_size = sizeof(weft_host),
    .abi_version = WEFT_PLUGIN_ABI,
    .server_version = WEFT_VERSION,
    .log = &weft_host_log_group,
    .init = &weft_host_init_group,
    .request = &weft_host_request_group,
    .response = &weft_host_response_group,
    .sync = &weft_host_sync_group,
    .db = &weft_host_db_group,
    .tx = &weft_host_tx_group,
    .stream = &weft_host_stream_group,
    .http = &weft_host_http_group,
    .ws = &weft_host_ws_group,
    .fd = &weft_host_fd_group,
    .timer = &weft_host_timer_group,
    .metric = &weft_host_metric_group,
};

const weft_host_set weft_host_table = {.abi2 = &weft_host_api2, .abi1 = &weft_host_api1};
