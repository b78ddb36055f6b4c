#include "ops/observe.h"

#include <jansson.h>
#include <string.h>

#include "db/db.h"
#include "reload/generation.h"
#include "http/http.h"
#include "core/loop.h"
#include "ops/metrics.h"

static void send_body(h2o_req_t *req, int status, const char *type, char *body, size_t len)
{
    req->res.status = status;
    req->res.reason = status == 200 ? "OK" : "Service Unavailable";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, type, strlen(type));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-store"));
    h2o_iovec_t copy = h2o_strdup(&req->pool, body, len);
    free(body);
    req->res.content_length = copy.len;
    h2o_send_inline(req, copy.base, copy.len);
}

static void send_health(h2o_req_t *req, json_t *checks)
{
    int up = 1;
    size_t i;
    json_t *c;
    json_array_foreach(checks, i, c) up &= strcmp(json_string_value(json_object_get(c, "status")), "UP") == 0;
    json_t *doc = json_pack("{s:s, s:o}", "status", up ? "UP" : "DOWN", "checks", checks);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    size_t len = strlen(text);
    text = realloc(text, len + 2);
    text[len] = '\n';
    send_body(req, up ? 200 : 503, "application/json", text, len + 1);
}

static json_t *check(const char *name, int up, json_t *data)
{
    json_t *c = json_pack("{s:s, s:s}", "name", name, "status", up ? "UP" : "DOWN");
    if (data != NULL)
        json_object_set_new(c, "data", data);
    return c;
}

/* Readiness waits for one round trip to the database. The probe outlives a
 * client that leaves; a link in the h2o request's pool tells it so. */
typedef struct probe_link probe_link;
typedef struct probe {
    h2o_req_t *req; /* NULL once the client is gone */
    probe_link *link;
    json_t *checks;
} probe;
struct probe_link {
    probe *p;
};

static void on_link_dispose(void *ptr)
{
    probe_link *link = ptr;
    if (link->p != NULL) {
        link->p->req = NULL;
        link->p->link = NULL;
    }
}

static void on_probe_result(void *arg, int rc, PGresult *res)
{
    probe *p = arg;
    PQclear(res);
    if (p->req == NULL) {
        json_decref(p->checks);
        free(p);
        return;
    }
    p->link->p = NULL;
    json_array_append_new(p->checks, check("database", rc == WEFT_OK,
                                           rc == WEFT_OK ? NULL : json_pack("{s:s}", "error", "unreachable")));
    send_health(p->req, p->checks);
    free(p);
}

static void ready(h2o_req_t *req)
{
    weft_loop *L = weft_loop_current;
    const weft_generation *g = L->gen;
    json_t *checks = json_array();
    json_array_append_new(checks, check("config", 1, json_pack("{s:I, s:s}", "generation", (json_int_t)g->id,
                                                               "file", g->cfg->path)));
    json_array_append_new(checks, check("draining", !L->stopping, NULL));
    if (!g->cfg->database.configured) {
        send_health(req, checks);
        return;
    }
    probe *p = malloc(sizeof(*p));
    probe_link *link = h2o_mem_alloc_shared(&req->pool, sizeof(*link), on_link_dispose);
    if (p == NULL) {
        json_decref(checks);
        weft_http_send_error(req, 503, "out of memory");
        return;
    }
    *p = (probe){req, link, checks};
    link->p = p;
    weft_dbloop_query(weft_dbloop_for(L, &g->cfg->database), "SELECT 1", 0, NULL, on_probe_result, p);
}

int weft_observe_handle(h2o_req_t *req, int listener)
{
    const weft_config *cfg = weft_loop_current->gen->cfg;
    h2o_iovec_t path = req->path_normalized;
    int is_get = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) ||
                 h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
    int metrics = cfg->observability.metrics == listener && h2o_memis(path.base, path.len, H2O_STRLIT("/metrics"));
    int live = cfg->observability.health == listener && h2o_memis(path.base, path.len, H2O_STRLIT("/health/live"));
    int rdy = cfg->observability.health == listener && h2o_memis(path.base, path.len, H2O_STRLIT("/health/ready"));
    if (!metrics && !live && !rdy)
        return 0;
    if (!is_get) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("GET, HEAD"));
        weft_http_send_error(req, 405, "method not allowed");
        return 1;
    }
    if (metrics) {
        size_t len = 0;
        char *text = weft_metrics_render(weft_loop_current->gen, &len);
        send_body(req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
    } else if (live) {
        send_health(req, json_pack("[o]", check("event-loop", 1, NULL)));
    } else {
        ready(req);
    }
    return 1;
}
