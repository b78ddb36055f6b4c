/*
 * Fixture "abi10": a plugin built against the frozen ABI 1.0 header. It uses
 * the ABI 1.0 calls a typical plugin uses (options, request accessors, the
 * response builder, sleep and mutex in both styles) and answers
 *
 *     abi=1 host_abi=1 size_ok=1 greeting=<option> id=<param> q=<query> x=<header> body=<body>
 *
 * so the test can tell that each field reached the right host function.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

static const weft_host *host;

struct route {
    char greeting[64];
    long long sleep_ms;
    weft_mutex *mu;
};

static int abi_init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    struct route *rt = calloc(1, sizeof *rt);
    if (rt == NULL) {
        h->init_error(ctx, "out of memory");
        return WEFT_ERROR;
    }
    snprintf(rt->greeting, sizeof rt->greeting, "%s", h->opt_string(ctx, "greeting", "hi"));
    rt->sleep_ms = h->opt_int(ctx, "sleep_ms", 5);
    if ((rt->mu = h->mutex_new()) == NULL) {
        free(rt);
        h->init_error(ctx, "out of memory");
        return WEFT_ERROR;
    }
    *state = rt;
    return WEFT_OK;
}

static void abi_fini(void *state)
{
    struct route *rt = state;
    host->mutex_free(rt->mu);
    free(rt);
}

static const char *nz(const char *s) { return s != NULL ? s : "-"; }

static int answer(weft_req *req, const struct route *rt)
{
    size_t len = 0;
    const char *body = host->req_body(req, &len);
    host->res_status(req, 200);
    host->res_header(req, "content-type", "text/plain");
    host->res_header(req, "x-abi", "1.0");
    host->res_printf(req, "abi=%u host_abi=%u size_ok=%d greeting=%s method=%s path=%s id=%s q=%s x=%s body=",
                     (unsigned)WEFT_PLUGIN_ABI, (unsigned)host->abi_version,
                     host->struct_size >= sizeof(weft_host), rt->greeting, host->req_method(req),
                     host->req_path(req), nz(host->req_param(req, "id")), nz(host->req_query(req, "q")),
                     nz(host->req_header(req, "x-test")));
    host->res_write(req, body, len);
    if (host->req_query(req, "fail") != NULL)
        return host->res_error(req, 418, "teapot") == WEFT_OK ? WEFT_OK : WEFT_ERROR;
    return WEFT_OK;
}

static int abi_handle(weft_req *req, void *state)
{
    const struct route *rt = state;
    if (host->sleep_ms(req, (uint32_t)rt->sleep_ms) != WEFT_OK || host->mutex_lock(req, rt->mu) != WEFT_OK)
        return WEFT_ERROR;
    host->mutex_unlock(req, rt->mu);
    return answer(req, rt);
}

static void on_locked(weft_req *req, void *arg, int rc)
{
    if (rc == WEFT_OK) {
        host->mutex_unlock(req, ((struct route *)arg)->mu);
        rc = answer(req, arg);
    }
    host->done(req, rc);
}

static void on_slept(weft_req *req, void *arg, int rc)
{
    if (rc != WEFT_OK) {
        host->done(req, rc);
        return;
    }
    host->mutex_lock_async(req, ((struct route *)arg)->mu, on_locked, arg);
}

static int abi_handle_async(weft_req *req, void *state)
{
    const struct route *rt = state;
    host->sleep_async(req, (uint32_t)rt->sleep_ms, on_slept, state);
    return WEFT_AGAIN;
}

static const weft_plugin abi10_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "abi10",
    .version = "1.0.0",
    .description = "test fixture built against the frozen ABI 1.0 header",
    .init = abi_init,
    .fini = abi_fini,
    .handle = abi_handle,
    .handle_async = abi_handle_async,
};

const weft_plugin *weft_plugin_entry(void) { return &abi10_plugin; }
