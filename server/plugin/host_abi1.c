#include "plugin/host.h"
#include "plugin/abi1.h"

#include <stdio.h>

#include "db/db.h"
#include "db/db_tx.h"
#include "dispatch/dispatch.h"
#include "request/route.h"
#include "dispatch/fdwait.h"
#include "dispatch/hostsync.h"
#include "outbound/outbound.h"
#include "ws/ws.h"
#include "base/log.h"
#include "request/cancel.h"
#include "request/request.h"
#include "request/stream.h"
#include "plugin/route_init.h"
#include "plugin/pmetric.h"
#include "plugin/ptimer.h"
#include "version.h"

/*
 * One naming scheme behind the table: the function for field F lives in
 * module M and is called weft_M_F (weft_request_res_write is `res_write` in
 * request/request.c, weft_hostsync_mutex_lock is `mutex_lock` in
 * dispatch/hostsync.c), so a field's implementation is found by its name.
 */
/* ABI 1's flat table, kept as it was: the compatibility table every ABI 1
 * plugin gets (tests/abi holds the headers they were built against). */
const weft_host_v1 weft_host_api1 = {
    .struct_size = sizeof(weft_host_v1),
    .abi_version = 1,
    .server_version = WEFT_VERSION,
    .log = weft_host_log_msg,
    .init_route = weft_route_init_init_route,
    .opt_string = weft_route_init_opt_string,
    .opt_int = weft_route_init_opt_int,
    .opt_float = weft_route_init_opt_float,
    .opt_bool = weft_route_init_opt_bool,
    .init_error = weft_route_init_init_error,
    .req_method = weft_request_req_method,
    .req_path = weft_request_req_path,
    .req_param = weft_request_req_param,
    .req_query = weft_request_req_query,
    .req_header = weft_request_req_header,
    .req_body = weft_request_req_body,
    .res_status = weft_request_res_status,
    .res_header = weft_request_res_header,
    .res_write = weft_request_res_write,
    .res_printf = weft_request_res_printf,
    .res_error = weft_request_res_error,
    .done = weft_dispatch_done,
    .sleep_ms = weft_hostsync_sleep_ms,
    .mutex_lock = weft_hostsync_mutex_lock,
    .mutex_unlock = weft_hostsync_mutex_unlock,
    .sleep_async = weft_hostsync_sleep_async,
    .mutex_lock_async = weft_hostsync_mutex_lock_async,
    .mutex_new = weft_hostsync_mutex_new,
    .mutex_free = weft_hostsync_mutex_free,
    .db_query = weft_db_host_db_query,
    .db_query_async = weft_db_host_db_query_async,
    .result_rows = weft_db_host_result_rows,
    .result_cols = weft_db_host_result_cols,
    .result_name = weft_db_host_result_name,
    .result_value = weft_db_host_result_value,
    .result_affected = weft_db_host_result_affected,
    .result_sqlstate = weft_db_host_result_sqlstate,
    .result_error = weft_db_host_result_error,
    .result_free = weft_db_host_result_free,
    .db_begin = weft_db_tx_db_begin,
    .db_commit = weft_db_tx_db_commit,
    .db_rollback = weft_db_tx_db_rollback,
    .db_begin_async = weft_db_tx_db_begin_async,
    .db_commit_async = weft_db_tx_db_commit_async,
    .db_rollback_async = weft_db_tx_db_rollback_async,
    .req_peer_addr = weft_access_req_peer_addr,
    .req_local_addr = weft_access_req_local_addr,
    .req_header_at = weft_access_req_header_at,
    .req_query_at = weft_access_req_query_at,
    .req_query_string = weft_access_req_query_string,
    .req_param_len = weft_access_req_param_len,
    .req_query_len = weft_access_req_query_len,
    .req_header_len = weft_access_req_header_len,
    .req_cookie = weft_access_req_cookie,
    .req_id = weft_access_req_id,
    .res_error_json = weft_access_res_error_json,
    .res_cookie = weft_access_res_cookie,
    .res_redirect = weft_access_res_redirect,
    .res_flush = weft_flush_res_flush,
    .res_flush_async = weft_flush_res_flush_async,
    .res_sse = weft_stream_res_sse,
    .init_plugin_state = weft_route_init_init_plugin_state,
    .req_cancelled = weft_cancel_req_cancelled,
    .fd_wait = weft_fdwait_fd_wait,
    .fd_wait_async = weft_fdwait_fd_wait_async,
    .http_fetch = weft_http_host_http_fetch,
    .http_fetch_all = weft_http_host_http_fetch_all,
    .http_fetch_async = weft_http_host_http_fetch_async,
    .http_header = weft_fetch_http_header,
    .http_free = weft_fetch_http_free,
    .ws_accept = weft_host_ws_accept,
    .ws_recv = weft_ws_ws_recv,
    .ws_on_message = weft_ws_ws_on_message,
    .ws_send = weft_ws_ws_send,
    .ws_close = weft_ws_ws_close,
    .timer_start = weft_ptimer_timer_start,
    .timer_stop = weft_ptimer_timer_stop,
    .metric_counter = weft_pmetric_metric_counter,
    .metric_gauge = weft_pmetric_metric_gauge,
    .metric_histogram = weft_pmetric_metric_histogram,
    .metric_add = weft_pmetric_metric_add,
    .metric_set = weft_pmetric_metric_set,
    .metric_observe = weft_pmetric_metric_observe,
    .req_body_read = weft_bodyread_req_body_read,
    .req_body_read_async = weft_bodyread_req_body_read_async,
};
