/*
 * Fixture "abi11": a plugin built against the frozen 1.1-era header
 * (tests/abi/abi11/weft/plugin.h: ABI 1 with the 1.1 and 1.2 additions),
 * as every plugin built before API 2 was. It keeps the host in a global, as
 * they did, checks WEFT_HOST_HAS, and uses calls of each era: 1.0 options
 * and sleep, 1.1 request access, cookies, JSON errors, timers with ABI 1's
 * "already stopped" answer, 1.2 body reading, in both styles. It answers
 *
 *     abi=1 host_abi=1 size_ok=1 greeting=<option> stop=<0,-5> id=<len>
 *     cookie=<c> q=<q> headers=<n> body=<body>
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
    int stop_rc[2]; /* timer_stop twice: ABI 1 says WEFT_OK, then WEFT_CANCELLED */
    char body[256];
};

static void never(void *arg) { (void)arg; }

static int abi_init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    if (!WEFT_HOST_HAS(h, req_body_read_async)) {
        h->init_error(ctx, "needs a 1.2-era host");
        return WEFT_ERROR;
    }
    struct route *rt = calloc(1, sizeof *rt);
    if (rt == NULL) {
        h->init_error(ctx, "out of memory");
        return WEFT_ERROR;
    }
    snprintf(rt->greeting, sizeof rt->greeting, "%s", h->opt_string(ctx, "greeting", "hi"));
    weft_plugin_timer *t = h->timer_start(ctx, 60000, 0, never, NULL);
    if (t == NULL) {
        free(rt);
        return WEFT_ERROR;
    }
    rt->stop_rc[0] = h->timer_stop(t);
    rt->stop_rc[1] = h->timer_stop(t);
    *state = rt;
    return WEFT_OK;
}

static void abi_fini(void *state) { free(state); }

static const char *nz(const char *s) { return s != NULL ? s : "-"; }

/* The body read so far is in `body` (a per-request copy of the route's). */
static int answer(weft_req *req, const struct route *rt, const char *body)
{
    if (host->req_query(req, "fail") != NULL)
        return host->res_error_json(req, 418, "teapot") == WEFT_OK ? WEFT_OK : WEFT_ERROR;
    size_t n_headers = 0, len = 0;
    const char *name, *value;
    while (host->req_header_at(req, n_headers, &name, &value, &len) == WEFT_OK)
        n_headers++;
    size_t id_len = strlen(host->req_id(req));
    size_t cookie_len = 0;
    const char *cookie = host->req_cookie(req, "c", &cookie_len);
    host->res_status(req, 200);
    host->res_header(req, "content-type", "text/plain");
    host->res_header(req, "x-abi", "1.1");
    return host->res_printf(req,
                            "abi=%u host_abi=%u size_ok=%d greeting=%s stop=%d,%d id=%s cookie=%s q=%s "
                            "headers=%s body=%s",
                            (unsigned)WEFT_PLUGIN_ABI, (unsigned)host->abi_version,
                            host->struct_size >= sizeof(weft_host), rt->greeting, rt->stop_rc[0], rt->stop_rc[1],
                            id_len > 0 ? "set" : "-", nz(cookie), nz(host->req_query_len(req, "q", &len)),
                            n_headers > 0 ? "some" : "none", body);
}

static int abi_handle(weft_req *req, void *state)
{
    char body[256] = "";
    size_t used = 0;
    for (;;) {
        const void *data;
        size_t len;
        int rc = host->req_body_read(req, &data, &len);
        if (rc != WEFT_OK)
            return rc;
        if (len == 0)
            break;
        size_t n = len < sizeof(body) - 1 - used ? len : sizeof(body) - 1 - used;
        memcpy(body + used, data, n);
        used += n;
    }
    body[used] = '\0';
    if (host->sleep_ms(req, 2) != WEFT_OK)
        return WEFT_ERROR;
    return answer(req, state, body);
}

/* Reactive: sleep, then read the (small, unstreamed) body in one part. */
struct call {
    const struct route *rt;
    char body[256];
};

static void on_body(weft_req *req, void *arg, int rc, const void *data, size_t len)
{
    struct call *c = arg;
    if (rc == WEFT_OK) {
        size_t n = len < sizeof(c->body) - 1 ? len : sizeof(c->body) - 1;
        memcpy(c->body, data, n);
        c->body[n] = '\0';
        rc = answer(req, c->rt, c->body);
    }
    free(c);
    host->done(req, rc);
}

static void on_slept(weft_req *req, void *arg, int rc)
{
    if (rc != WEFT_OK) {
        free(arg);
        host->done(req, rc);
        return;
    }
    host->req_body_read_async(req, on_body, arg);
}

static int abi_handle_async(weft_req *req, void *state)
{
    struct call *c = calloc(1, sizeof *c);
    if (c == NULL)
        return WEFT_ERROR;
    c->rt = state;
    host->sleep_async(req, 2, on_slept, c);
    return WEFT_AGAIN;
}

static const weft_plugin abi11_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "abi11",
    .version = "1.2.0",
    .description = "test fixture built against the frozen 1.1-era ABI 1 header",
    .init = abi_init,
    .fini = abi_fini,
    .handle = abi_handle,
    .handle_async = abi_handle_async,
};

const weft_plugin *weft_plugin_entry(void) { return &abi11_plugin; }
