/*
 * hello — the smallest complete weft plugin; copy it to start a new one.
 * Answers every request with the `greeting` option (default "hello").
 */
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h> /* the only weft header a plugin may use */

/* The host table is the same for every route and outlives the plugin, so one
 * static copy is enough; init() sets it before any handler can run. */
static const weft_host *host;

/* Per-route state: one route can say "hi", another "hello". Read-only after
 * init, because loop threads and worker threads share it without locks. */
struct hello_route {
    char *greeting;
};

static int hello_init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    struct hello_route *rt = calloc(1, sizeof *rt);
    /* Option strings belong to the config, which is freed after init (and on
     * every reload): keep a private copy. */
    const char *greeting = host->opt_string(ctx, "greeting", "hello");
    if (rt == NULL || (rt->greeting = strdup(greeting)) == NULL) {
        free(rt);
        host->init_error(ctx, "out of memory");
        return WEFT_ERROR; /* the route, and with it the (re)load, fails */
    }
    *state = rt;
    return WEFT_OK;
}

static void hello_fini(void *state)
{
    struct hello_route *rt = state;
    free(rt->greeting);
    free(rt);
}

/* Shared by both entry points. res_* fail only when the host cannot take the
 * bytes (out of memory); WEFT_ERROR hands that to the host, which answers 500. */
static int respond(weft_req *req, const struct hello_route *rt)
{
    host->res_status(req, 200);
    if (host->res_header(req, "content-type", "text/plain") < 0 ||
        host->res_write(req, rt->greeting, strlen(rt->greeting)) < 0)
        return WEFT_ERROR;
    return WEFT_OK;
}

/* Blocking style (`pool` and `coroutine` policies): may call blocking host
 * primitives such as sleep_ms; this one has nothing to wait for. */
static int hello_handle(weft_req *req, void *state)
{
    return respond(req, state);
}

/* Reactive style (`reactive` policy) runs on the event loop and must never
 * block. Work that finishes at once returns WEFT_OK; work that waits would
 * return WEFT_AGAIN and call host->done() from a callback (see delay.c). */
static int hello_handle_async(weft_req *req, void *state)
{
    return respond(req, state);
}

/* `static const`: the descriptor is data the host only reads, and it must
 * start with WEFT_PLUGIN_HEADER so magic, ABI and size can be checked before
 * anything here is called. */
static const weft_plugin hello_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "hello", /* equals the folder and the .so name used in config */
    .version = "1.0.0",
    .description = "answers with a configurable greeting; the template plugin",
    .init = hello_init,
    .fini = hello_fini,
    .handle = hello_handle,
    .handle_async = hello_handle_async,
};

/* The one exported symbol (plugins are built with hidden visibility). */
const weft_plugin *weft_plugin_entry(void)
{
    return &hello_plugin;
}
