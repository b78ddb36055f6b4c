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
 * Built against API 2: the handlers reach the host through weft_req_host().
 */
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

struct echo_route {
    char *param;
    char *prefix;
};

static weft_rc echo_init(const weft_host *h, weft_init *ctx, void **state)
{
    /* Option strings die with the config: copy them. */
    const char *param = h->init->opt_string(ctx, "param", "id");
    const char *prefix = h->init->opt_string(ctx, "prefix", "");
    struct echo_route *rt = calloc(1, sizeof *rt);
    if (rt == NULL || (rt->param = strdup(param)) == NULL || (rt->prefix = strdup(prefix)) == NULL) {
        if (rt != NULL)
            free(rt->param);
        free(rt);
        h->init->error(ctx, "out of memory");
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

static weft_rc respond(weft_req *req, const struct echo_route *rt)
{
    const weft_host *h = weft_req_host(req);
    const weft_host_request *in = h->request;
    const weft_host_response *out = h->response;
    const char *status = in->query(req, "status", NULL);
    if (status != NULL)
        out->status(req, atoi(status));
    size_t body_len = 0;
    const char *body = in->body(req, &body_len);
    const char *p = rt->prefix;
    if (out->header(req, "content-type", "text/plain") != WEFT_OK ||
        out->writef(req, "%smethod=%s\n", p, in->method(req)) != WEFT_OK ||
        out->writef(req, "%spath=%s\n", p, in->path(req)) != WEFT_OK ||
        out->writef(req, "%sparam.%s=%s\n", p, rt->param, or_none(in->param(req, rt->param, NULL))) != WEFT_OK ||
        out->writef(req, "%squery.q=%s\n", p, or_none(in->query(req, "q", NULL))) != WEFT_OK ||
        out->writef(req, "%sheader.x-test=%s\n", p, or_none(in->header(req, "x-test", NULL))) != WEFT_OK ||
        out->writef(req, "%sbody=", p) != WEFT_OK || out->write(req, body, body_len) != WEFT_OK ||
        out->write(req, "\n", 1) != WEFT_OK)
        return WEFT_ERROR;
    return WEFT_OK;
}

static weft_rc echo_handle(weft_req *req, void *state)
{
    return respond(req, state);
}

static weft_rc echo_handle_async(weft_req *req, void *state)
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
