/*
 * hello — the smallest complete weft plugin; copy it to start a new one.
 * Answers every request with the `greeting` option (default "hello").
 */
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h> /* the only weft header a plugin may use (it includes weft/host_*.h) */

/* No global host pointer: init() gets the host table, and a handler reaches
 * it from its request with weft_req_host(req). Its groups (h->request,
 * h->response, h->sync, ...) are declared in weft/host_*.h. */

/* Per-route state: one route can say "hi", another "hello". Read-only after
 * init, because loop threads and worker threads share it without locks. */
struct hello_route {
    char *greeting;
};

static weft_rc hello_init(const weft_host *h, weft_init *ctx, void **state)
{
    struct hello_route *rt = calloc(1, sizeof *rt);
    /* Option strings belong to the config, which is freed after init (and on
     * every reload): keep a private copy. */
    const char *greeting = h->init->opt_string(ctx, "greeting", "hello");
    if (rt == NULL || (rt->greeting = strdup(greeting)) == NULL) {
        free(rt);
        h->init->error(ctx, "out of memory");
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

/* Shared by both entry points. The response calls fail only when the host
 * cannot take the bytes (out of memory); WEFT_ERROR hands that to the host,
 * which answers 500. */
static weft_rc respond(weft_req *req, const struct hello_route *rt)
{
    const weft_host_response *res = weft_req_host(req)->response;
    if (res->status(req, 200) != WEFT_OK || res->header(req, "content-type", "text/plain") != WEFT_OK ||
        res->write(req, rt->greeting, strlen(rt->greeting)) != WEFT_OK)
        return WEFT_ERROR;
    return WEFT_OK;
}

/* Blocking style (`pool` and `coroutine` policies): may call the host's
 * waits without a callback (h->sync->sleep(req, ms, NULL, NULL)); this one
 * has nothing to wait for. */
static weft_rc hello_handle(weft_req *req, void *state)
{
    return respond(req, state);
}

/* Reactive style (`reactive` policy) runs on the event loop and must never
 * block. Work that finishes at once returns WEFT_OK; work that waits starts
 * a host call with a callback, returns its WEFT_AGAIN and calls
 * h->response->done() from the callback (see delay.c). */
static weft_rc hello_handle_async(weft_req *req, void *state)
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
