/* The `log` group: plugin lines in weft's log, with route and request id. */
#include <stdio.h>

#include "base/log.h"
#include "plugin/host.h"
#include "request/request.h"
#include "request/route.h"

static void host_logv(const weft_req *r, int level, const char *fmt, va_list ap)
{
    char prefix[400] = "";
    weft_log_ctx ctx = {.text_prefix = prefix};
    if (r != NULL && r->route != NULL) {
        snprintf(prefix, sizeof(prefix), "%s [%s]: ", r->route->label, r->id);
        ctx.route = r->route->cfg->path;
        ctx.plugin = r->route->cfg->plugin;
        ctx.request_id = r->id;
        ctx.trace_id = r->trace.trace_id_hex;
    }
    weft_vlog_in(level, &ctx, fmt, ap);
}

void weft_host_log_msg(const weft_req *r, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    host_logv(r, level, fmt, ap);
    va_end(ap);
}

const weft_host_log weft_host_log_group = {
    .struct_size = sizeof(weft_host_log),
    .version = WEFT_HOST_LOG_VERSION,
    .msg = weft_host_log_msg,
    .msgv = host_logv,
};
