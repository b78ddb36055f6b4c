/*
 * Fixture "reqinfo" (API 2): the request accessors and response helpers. It
 * answers text/plain, one "key=value" line per fact:
 *
 *     peer=127.0.0.1:PORT  local=127.0.0.1:PORT  id=ID  qs=RAW
 *     h.NAME=VALUE          (every header, in order)
 *     q.NAME=VALUE/LEN      (every query parameter, decoded)
 *     cookie=VALUE          (cookie "sid", or "(none)")
 *     param=VALUE/LEN       (path parameter "id", or "(none)")
 *
 * ?do=json&msg=M answers response->error_json(422, M); ?do=cookie sets two
 * cookies; ?do=badcookie tries forbidden ones; ?do=redirect answers 303 to
 * /elsewhere; ?do=log writes a log line (?do=lognote: one quoting the X-Note
 * header); ?do=api2 shows API 2's answers where ABI 1's were odd (a bad
 * status, a timer stopped twice).
 */
#include <stdio.h>
#include <string.h>

#include <weft/plugin.h>

/* API 2's answers where ABI 1's were odd: a timer stopped twice (ABI 1:
 * WEFT_OK, then WEFT_CANCELLED), recorded at init for ?do=api2. */
static int stop_rc[2];

static void never(void *arg) { (void)arg; }

static weft_rc ri_init(const weft_host *h, weft_init *ctx, void **state)
{
    *state = NULL;
    if (!WEFT_GROUP_AT_LEAST(h->response, 1) || h->timer == NULL) {
        h->init->error(ctx, "needs the response and timer groups");
        return WEFT_ERROR;
    }
    weft_plugin_timer *t = h->timer->start(ctx, 60000, 0, never, NULL);
    if (t == NULL)
        return WEFT_ERROR;
    stop_rc[0] = h->timer->stop(t);
    stop_rc[1] = h->timer->stop(t);
    return WEFT_OK;
}

static void ri_fini(void *state) { (void)state; }

static int act(weft_req *req, const char *what)
{
    const weft_host *h = weft_req_host(req);
    if (strcmp(what, "json") == 0) {
        const char *msg = h->request->query(req, "msg", NULL);
        return h->response->error_json(req, 422, msg != NULL ? msg : "no message");
    }
    if (strcmp(what, "cookie") == 0) {
        if (h->response->cookie(req, "sid", "abc123", 3600, "/", NULL,
                             WEFT_COOKIE_SECURE | WEFT_COOKIE_HTTPONLY | WEFT_COOKIE_SAMESITE_LAX) != WEFT_OK ||
            h->response->cookie(req, "theme", "dark", -1, NULL, "example.org", 0) != WEFT_OK)
            return WEFT_ERROR;
        return h->response->writef(req, "cookies set\n");
    }
    if (strcmp(what, "badcookie") == 0) {
        int a = h->response->cookie(req, "bad name", "x", -1, NULL, NULL, 0);
        int b = h->response->cookie(req, "n", "a;b", -1, NULL, NULL, 0);
        int c = h->response->cookie(req, "n", "x", -1, "/\r\nx: y", NULL, 0);
        int d = h->response->cookie(req, "n", "x", -1, NULL, NULL, WEFT_COOKIE_SAMESITE_NONE);
        return h->response->writef(req, "refused=%d%d%d%d\n", a == WEFT_ERROR, b == WEFT_ERROR, c == WEFT_ERROR,
                                d == WEFT_ERROR);
    }
    if (strcmp(what, "api2") == 0) {
        /* a status outside 100..599 is refused and changes nothing */
        weft_rc bad = h->response->status(req, 42), good = h->response->status(req, 299);
        return h->response->writef(req, "status42=%d status299=%d stop=%d,%d\n", bad, good, stop_rc[0], stop_rc[1]);
    }
    if (strcmp(what, "redirect") == 0)
        return h->response->redirect(req, 303, "/elsewhere") == WEFT_OK && h->response->redirect(req, 200, "/x") == WEFT_ERROR
                   ? WEFT_OK
                   : WEFT_ERROR;
    if (strcmp(what, "log") == 0) {
        h->log->msg(req, WEFT_LOG_INFO, "reqinfo says hello");
        return h->response->writef(req, "logged\n");
    }
    if (strcmp(what, "lognote") == 0) { /* a client's bytes in a log line, as a plugin may log them */
        size_t len = 0;
        const char *note = h->request->header(req, "x-note", &len);
        h->log->msg(req, WEFT_LOG_INFO, "note: %.*s", (int)len, note != NULL ? note : "");
        return h->response->writef(req, "logged\n");
    }
    return h->response->error(req, 400, "unknown do");
}

static int answer(weft_req *req)
{
    const weft_host *h = weft_req_host(req);
    const char *what = h->request->query(req, "do", NULL);
    if (what != NULL)
        return act(req, what);
    int pp = 0, lp = 0;
    const char *peer = h->request->peer_addr(req, &pp), *local = h->request->local_addr(req, &lp);
    const char *qs = h->request->query_string(req);
    h->response->header(req, "content-type", "text/plain");
    h->response->writef(req, "peer=%s:%d\nlocal=%s:%d\nid=%s\nqs=%s\n", peer, pp, local, lp, h->request->id(req),
                     qs != NULL ? qs : "(none)");
    const char *name, *value;
    size_t len;
    for (size_t i = 0; h->request->header_at(req, i, &name, &value, &len) == WEFT_OK; i++)
        h->response->writef(req, "h.%s=%.*s\n", name, (int)len, value);
    for (size_t i = 0; h->request->query_at(req, i, &name, &value, &len) == WEFT_OK; i++)
        h->response->writef(req, "q.%s=%.*s/%zu\n", name, (int)len, value, len);
    const char *sid = h->request->cookie(req, "sid", &len);
    h->response->writef(req, "cookie=%s\n", sid != NULL ? sid : "(none)");
    const char *p = h->request->param(req, "id", &len);
    return h->response->writef(req, "param=%s/%zu\n", p != NULL ? p : "(none)", p != NULL ? len : 0);
}

static weft_rc ri_handle(weft_req *req, void *state)
{
    (void)state;
    return answer(req);
}

static weft_rc ri_handle_async(weft_req *req, void *state)
{
    (void)state;
    return answer(req);
}

static const weft_plugin reqinfo_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "reqinfo",
    .version = "1.0.0",
    .description = "test fixture: request access and response helpers of plugin API 1.1",
    .init = ri_init,
    .fini = ri_fini,
    .handle = ri_handle,
    .handle_async = ri_handle_async,
};

const weft_plugin *weft_plugin_entry(void) { return &reqinfo_plugin; }
