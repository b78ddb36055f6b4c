/* The limits group: sizes, counts and timeouts that bound what one client, connection or request may hold. */
#include "config/schema.h"

void weft_cfg_load_limits(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const limits_keys[] = {"max_body",        "max_uri",         "max_connections", "max_connections_per_ip",
                                              "request_timeout_ms", "idle_timeout_ms", "timeout_ms",
                                              "max_resets", "reset_window_ms", "max_inflight_per_conn",
                                              "max_header_line", "max_headers",
                                              "max_route_file_size", "max_route_file_routes",
                                              "rate_limit_clients", "max_buffered_response", "max_buffered_response_total",
                                              "max_buffered_body_total", "max_compressing_responses", NULL};
    config_setting_t *g;
    cfg->limits.max_body = 1024 * 1024;
    cfg->limits.max_uri = 8192;
    cfg->limits.max_connections = 10000;
    cfg->limits.request_timeout_ms = 10000;
    cfg->limits.idle_timeout_ms = 10000;
    /* Well above what a browser cancelling navigations or a gRPC client
     * cancelling calls does, far below a Rapid Reset's thousands per second;
     * in-flight work above h2o's 100 concurrent streams only builds up from
     * streams that were reset while their handler ran on. */
    cfg->limits.max_resets = 100;
    cfg->limits.reset_window_ms = 10000;
    cfg->limits.max_inflight_per_conn = 256;
    /* nginx and Apache stop a header line at 8 KiB. */
    cfg->limits.max_header_line = 8192;
    cfg->limits.max_headers = 32768;
    /* A fragment is one plugin's routes: ten thousand is far beyond any
     * real one, and reading, checking and routing that many stays well
     * under a second of the control thread's time. */
    cfg->limits.max_route_file_size = 4 * 1024 * 1024;
    cfg->limits.max_route_file_routes = 10000;
    cfg->limits.rate_limit_clients = 65536;
    /* A few socket buffers' worth per client; the total keeps the process
     * well under 256 MiB whatever the clients do (request/backlog.c). */
    cfg->limits.max_buffered_response = 4 * 1024 * 1024;
    cfg->limits.max_buffered_response_total = 64 * 1024 * 1024;
    /* Bodies of routes that do not stream them, all together: 128 at the
     * default max_body at once. A route taking larger uploads streams them
     * (stream_body), which holds one part each. */
    cfg->limits.max_buffered_body_total = 128 * 1024 * 1024;
    /* An on-the-fly compressor of a stream of unknown length holds 1.4 MB
     * (zstd level 1: a 512 KiB window and its tables), so a few thousand
     * Server-Sent Event subscribers would hold gigabytes; 256 of them stay
     * under 350 MiB. Answers past the bound go out uncompressed. */
    cfg->limits.max_compressing_responses = 256;
    if ((g = weft_cfg_member(v, root, "", "limits", CONFIG_TYPE_GROUP)) != NULL) {
        weft_cfg_check_keys(v, g, "limits", limits_keys);
        cfg->limits.rate_limit_clients =
            (int)weft_cfg_int(v, g, "limits", "rate_limit_clients", 64, 16777216, 65536);
        cfg->limits.max_body = (size_t)weft_cfg_int(v, g, "limits", "max_body", 0, 1LL << 40, 1024 * 1024);
        cfg->limits.max_uri = (size_t)weft_cfg_int(v, g, "limits", "max_uri", 256, 400000, 8192);
        cfg->limits.max_connections = (int)weft_cfg_int(v, g, "limits", "max_connections", 1, 10000000, 10000);
        cfg->limits.max_connections_per_ip =
            (int)weft_cfg_int(v, g, "limits", "max_connections_per_ip", 0, 10000000, 0);
        cfg->limits.request_timeout_ms = (int)weft_cfg_int(v, g, "limits", "request_timeout_ms", 100, 3600000, 10000);
        cfg->limits.idle_timeout_ms = (int)weft_cfg_int(v, g, "limits", "idle_timeout_ms", 100, 3600000, 10000);
        cfg->limits.timeout_ms = (int)weft_cfg_int(v, g, "limits", "timeout_ms", 0, 3600000, 0);
        cfg->limits.max_resets = (int)weft_cfg_int(v, g, "limits", "max_resets", 1, 100000000, 100);
        cfg->limits.reset_window_ms = (int)weft_cfg_int(v, g, "limits", "reset_window_ms", 100, 3600000, 10000);
        cfg->limits.max_inflight_per_conn =
            (int)weft_cfg_int(v, g, "limits", "max_inflight_per_conn", 1, 100000000, 256);
        cfg->limits.max_header_line = (size_t)weft_cfg_int(v, g, "limits", "max_header_line", 256, 400000, 8192);
        cfg->limits.max_headers = (size_t)weft_cfg_int(v, g, "limits", "max_headers", 1024, 400000, 32768);
        cfg->limits.max_route_file_size =
            (size_t)weft_cfg_int(v, g, "limits", "max_route_file_size", 1024, 1LL << 30, 4 * 1024 * 1024);
        cfg->limits.max_route_file_routes =
            (size_t)weft_cfg_int(v, g, "limits", "max_route_file_routes", 1, 10000000, 10000);
        cfg->limits.max_buffered_response = (size_t)weft_cfg_int(v, g, "limits", "max_buffered_response", 16384,
                                                                 1LL << 40, 4 * 1024 * 1024);
        cfg->limits.max_buffered_response_total = (size_t)weft_cfg_int(
            v, g, "limits", "max_buffered_response_total", 65536, 1LL << 40, 64 * 1024 * 1024);
        cfg->limits.max_buffered_body_total = (size_t)weft_cfg_int(v, g, "limits", "max_buffered_body_total", 65536,
                                                                   1LL << 40, 128 * 1024 * 1024);
        cfg->limits.max_compressing_responses =
            (int)weft_cfg_int(v, g, "limits", "max_compressing_responses", 0, 10000000, 256);
    }
}
