#include "plugin/host.h"

#include <stdio.h>

#include "db/db.h"
#include "dispatch/dispatch.h"
#include "request/route.h"
#include "dispatch/hostsync.h"
#include "base/log.h"
#include "request/request.h"
#include "plugin/route_init.h"
#include "version.h"

static void host_log(const weft_req *r, int level, const char *fmt, ...)
{
    char prefix[400] = "";
    if (r != NULL && r->route != NULL)
        snprintf(prefix, sizeof(prefix), "%s: ", r->route->label);
    va_list ap;
    va_start(ap, fmt);
    weft_vlog(level, prefix, fmt, ap);
    va_end(ap);
}

const weft_host weft_host_table = {
    .struct_size = sizeof(weft_host),
    .abi_version = WEFT_PLUGIN_ABI,
    .server_version = WEFT_VERSION,
    .log = host_log,
    .init_route = weft_init_route,
    .opt_string = weft_init_opt_string,
    .opt_int = weft_init_opt_int,
    .opt_float = weft_init_opt_float,
    .opt_bool = weft_init_opt_bool,
    .init_error = weft_init_error,
    .req_method = weft_req_method,
    .req_path = weft_req_path,
    .req_param = weft_req_param,
    .req_query = weft_req_query,
    .req_header = weft_req_header,
    .req_body = weft_req_body,
    .res_status = weft_res_status,
    .res_header = weft_res_header,
    .res_write = weft_res_write,
    .res_printf = weft_res_printf,
    .res_error = weft_res_error,
    .done = weft_dispatch_done,
    .sleep_ms = weft_host_sleep_ms,
    .mutex_lock = weft_mutex_lock,
    .mutex_unlock = weft_mutex_unlock,
    .sleep_async = weft_host_sleep_async,
    .mutex_lock_async = weft_mutex_lock_async,
    .mutex_new = weft_mutex_new,
    .mutex_free = weft_mutex_free,
    .db_query = weft_host_db_query,
    .db_query_async = weft_host_db_query_async,
    .result_rows = weft_result_rows,
    .result_cols = weft_result_cols,
    .result_name = weft_result_name,
    .result_value = weft_result_value,
    .result_affected = weft_result_affected,
    .result_sqlstate = weft_result_sqlstate,
    .result_error = weft_result_error,
    .result_free = weft_result_free,
};
