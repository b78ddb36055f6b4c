/*
 * weft/plugin.h — the public plugin API of the weft application server
 * (API 2). A plugin includes this header only; it pulls in the group
 * headers weft/host_*.h, which depend on libc alone: no h2o, libpq or
 * libconfig type ever appears here, so the server can upgrade those
 * libraries without breaking a plugin that was built years ago.
 *
 * Shape (docs/PLUGIN-API.md): `weft_host` is a short table of group
 * pointers, one per service; each group is a struct of its own header that
 * starts with its struct_size and version and only grows at the end (a
 * group's version goes up with every addition). A NULL group means the
 * service is absent. Calls return weft_rc, or the value they document;
 * calls that wait take an optional callback (NULL: blocking style under
 * pool and coroutine; set: completion for reactive handlers).
 *
 * Stability rules (the "ABI contract"):
 *   - A plugin exports one function, weft_plugin_entry(), returning a pointer
 *     to a `static const weft_plugin` descriptor.
 *   - The host checks magic, abi_version and struct_size before it calls
 *     anything in the plugin, and refuses a mismatch with a message that
 *     says exactly which field differs. It still loads ABI 1 plugins.
 *   - weft_host, weft_plugin and every group only ever grow at the end. A
 *     plugin that wants something added later checks
 *     WEFT_GROUP_AT_LEAST(host->db, 2) (or WEFT_HOST_HAS for a group added
 *     to weft_host after API 2.0).
 *   - WEFT_PLUGIN_ABI changes only when an existing field changes meaning.
 */
#ifndef WEFT_PLUGIN_H
#define WEFT_PLUGIN_H

#include <weft/types.h>
#include <weft/host_db.h>
#include <weft/host_fd.h>
#include <weft/host_http.h>
#include <weft/host_init.h>
#include <weft/host_log.h>
#include <weft/host_metric.h>
#include <weft/host_request.h>
#include <weft/host_response.h>
#include <weft/host_stream.h>
#include <weft/host_sync.h>
#include <weft/host_timer.h>
#include <weft/host_tx.h>
#include <weft/host_ws.h>

#ifdef __cplusplus
extern "C" {
#endif

/** "WEFT" in little-endian ASCII; first field of every descriptor. */
#define WEFT_PLUGIN_MAGIC 0x54464557u
/** Incompatible-change counter of this header. */
#define WEFT_PLUGIN_ABI 2u
/** The symbol the host looks up with dlsym(). */
#define WEFT_PLUGIN_ENTRY_SYMBOL "weft_plugin_entry"

/**
 * The services the host offers, one group each. The table and every group
 * are static in the host: valid for the life of the process, any thread.
 * A NULL group means the service is absent in this server.
 */
typedef struct weft_host {
    uint32_t struct_size; /**< sizeof(weft_host) of the running host */
    uint32_t abi_version; /**< WEFT_PLUGIN_ABI of the running host */
    const char *server_version;
    const weft_host_log *log;
    const weft_host_init *init;
    const weft_host_request *request;
    const weft_host_response *response;
    const weft_host_sync *sync;
    const weft_host_db *db;
    const weft_host_tx *tx;
    const weft_host_stream *stream;
    const weft_host_http *http;
    const weft_host_ws *ws;
    const weft_host_fd *fd;
    const weft_host_timer *timer;
    const weft_host_metric *metric;
} weft_host;

/** True when the running host's table has the group pointer `field` (a group added after API 2.0). */
#define WEFT_HOST_HAS(host, field) \
    ((host)->struct_size >= offsetof(weft_host, field) + sizeof(((weft_host *)0)->field))

/** True when group `g` is present and has reached version `v` (what a plugin checks before a later call). */
#define WEFT_GROUP_AT_LEAST(g, v) ((g) != NULL && (g)->version >= (v))

/**
 * The host table `req` is served with: how a handler or a callback reaches
 * the host without keeping it in a global. Any thread that holds `req`.
 */
static inline const weft_host *weft_req_host(const weft_req *req)
{
    return ((const struct weft_req_head *)(const void *)req)->host;
}

/**
 * The descriptor a plugin returns from weft_plugin_entry(). Declare it
 * `static const` and start it with WEFT_PLUGIN_HEADER.
 *
 * Per-route state returned by init() is shared by every thread that serves
 * the route (several event loops and worker threads at once): keep it
 * read-only after init, or protect it (atomics, host mutexes).
 */
typedef struct weft_plugin {
    uint32_t magic;       /**< WEFT_PLUGIN_MAGIC */
    uint32_t abi_version; /**< WEFT_PLUGIN_ABI the plugin was built against */
    uint32_t struct_size; /**< sizeof(weft_plugin) the plugin was built against */
    uint32_t flags;       /**< reserved, 0 */
    const char *name;     /**< plugin name as used in config; [a-z0-9_-], unique */
    const char *version;  /**< free-form version string shown in logs and status */
    const char *description;

    /**
     * Once per route using the plugin, before it serves (on the control
     * thread, also in the probe process and for `weft -t`). Reads options
     * with host->init; returns WEFT_OK and sets *state, or fails
     * (host->init->error says why).
     */
    weft_rc (*init)(const weft_host *host, weft_init *ctx, void **state);
    /** Once per route when its last request is done (shutdown or reload). */
    void (*fini)(void *state);
    /**
     * Blocking-style handler, used by the `pool` and `coroutine` policies;
     * may call the host in blocking style (cb NULL). WEFT_OK or WEFT_ERROR.
     */
    weft_rc (*handle)(weft_req *req, void *state);
    /**
     * Callback-style handler, used by the `reactive` policy, on the loop
     * thread. Must never block. WEFT_OK when the response is complete,
     * WEFT_AGAIN when it will call host->response->done() later (a host
     * call started with a callback returns WEFT_AGAIN, so `return
     * h->sync->sleep(req, 10, cb, st);` reads right), or WEFT_ERROR.
     */
    weft_rc (*handle_async)(weft_req *req, void *state);
    /**
     * Optional. Once per plugin and configuration (start-up, and each reload
     * builds its own), before the first route's init: reads the `plugins = {
     * NAME = { … }; }` options with host->init (route() gives NULL here)
     * and sets *plugin_state, which every init gets from
     * host->init->plugin_state(ctx).
     */
    weft_rc (*load)(const weft_host *host, weft_init *ctx, void **plugin_state);
    /** Optional. After the last route's fini of that configuration. */
    void (*unload)(void *plugin_state);
} weft_plugin;

/** Initialiser for the first four descriptor fields. */
#define WEFT_PLUGIN_HEADER \
    .magic = WEFT_PLUGIN_MAGIC, .abi_version = WEFT_PLUGIN_ABI, .struct_size = sizeof(weft_plugin), .flags = 0

/** Signature of the exported entry function. */
typedef const weft_plugin *(*weft_plugin_entry_fn)(void);

/** Every plugin defines this function (and nothing else needs exporting). */
WEFT_EXPORT const weft_plugin *weft_plugin_entry(void);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_PLUGIN_H */
