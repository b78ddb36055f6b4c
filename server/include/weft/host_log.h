/* weft/host_log.h — the `log` group: lines in weft's log. */
#ifndef WEFT_HOST_LOG_H
#define WEFT_HOST_LOG_H

#include <weft/types.h>

#define WEFT_HOST_LOG_VERSION 1u

typedef struct weft_host_log {
    uint32_t struct_size; /**< sizeof(weft_host_log) of the running host */
    uint32_t version;     /**< WEFT_HOST_LOG_VERSION of the running host */
    /**
     * Logs one line at `level` (weft_log_level), prefixed with the route and
     * request id when `req` is not NULL (NULL: a line of the plugin's own,
     * e.g. from a timer). Any thread, any policy; never blocks on I/O the
     * plugin could notice. Returns nothing: logging cannot fail visibly.
     */
    void (*msg)(const weft_req *req, int level, const char *fmt, ...) WEFT_PRINTF(3, 4);
    /** msg() with a va_list, for a plugin's own logging wrapper. */
    void (*msgv)(const weft_req *req, int level, const char *fmt, va_list ap);
} weft_host_log;

#endif
