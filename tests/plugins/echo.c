/*
 * Fixture "echo": answers with what it was asked, one `key=value` line each,
 * as text/plain, so tests can check what the host hands a plugin:
 *
 *     method=GET
 *     path=/echo/42
 *     param.id=42            (the path parameter named by option `param`)
 *     query.q=hello          (or "(none)")
 *     header.x-test=abc      (or "(none)")
 *     body=<the request body, byte for byte>
 *
 * Every line starts with option `prefix` (default ""). The status is query
 * parameter `status` when present (e.g. ?status=201), otherwise 200. Both
 * entry points answer at once, so every dispatch policy can route to it.
 */
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

static const weft_host *host;

struct echo_route {
    char *param;
    char *prefix;
};

static int echo_init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    /* Option strings die with the config: copy them. */
    const char *param = host->opt_string(ctx, "param", "id");
    const char *prefix = host->opt_string(ctx, "prefix", "");
    struct echo_route *rt = calloc(1, sizeof *rt);
    if (rt == NULL || (rt->param = strdup(param)) == NULL || (rt->prefix = strdup(prefix)) == NULL) {
        if (rt != NULL)
            free(rt->param);
        free(rt);
        host->init_error(ctx, "out of memory");
        return WEFT_ERROR;
    }
    *state = rt;
    return WEFT_OK;
}

static void echo_fini(void *state)
{
    struct echo_route *rt = state;
    free(rt->param);
    free(rt->prefix);
    free(rt);
}

static const char *or_none(const char *s)
{
    return s != NULL ? s : "(none)";
}

static int respond(weft_req *req, const struct echo_route *rt)
{
    const char *status = host->req_query(req, "status");
    if (status != NULL)
        host->res_status(req, atoi(status));
    size_t body_len = 0;
    const char *body = host->req_body(req, &body_len);
    const char *p = rt->prefix;
    if (host->res_header(req, "content-type", "text/plain") != WEFT_OK ||
        host->res_printf(req, "%smethod=%s\n", p, host->req_method(req)) != WEFT_OK ||
        host->res_printf(req, "%spath=%s\n", p, host->req_path(req)) != WEFT_OK ||
        host->res_printf(req, "%sparam.%s=%s\n", p, rt->param, or_none(host->req_param(req, rt->param))) != WEFT_OK ||
        host->res_printf(req, "%squery.q=%s\n", p, or_none(host->req_query(req, "q"))) != WEFT_OK ||
        host->res_printf(req, "%sheader.x-test=%s\n", p, or_none(host->req_header(req, "x-test"))) != WEFT_OK ||
        host->res_printf(req, "%sbody=", p) != WEFT_OK || host->res_write(req, body, body_len) != WEFT_OK ||
        host->res_write(req, "\n", 1) != WEFT_OK)
        return WEFT_ERROR;
    return WEFT_OK;
}

static int echo_handle(weft_req *req, void *state)
{
    return respond(req, state);
}

static int echo_handle_async(weft_req *req, void *state)
{
    return respond(req, state);
}

static const weft_plugin echo_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "echo",
    .version = "1.0.0",
    .description = "test fixture: echoes method, path, a parameter, query q, header x-test and body",
    .init = echo_init,
    .fini = echo_fini,
    .handle = echo_handle,
    .handle_async = echo_handle_async,
};

const weft_plugin *weft_plugin_entry(void)
{
    return &echo_plugin;
}
