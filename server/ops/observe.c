#include "ops/observe.h"

#include <jansson.h>
#include <string.h>

#include "db/db.h"
#include "reload/generation.h"
#include "request/respond.h"
#include "core/loop.h"
#include "ops/metrics.h"

static void send_health(h2o_req_t *req, json_t *checks)
{
    int up = 1;
    size_t i;
    json_t *c;
    json_array_foreach(checks, i, c) up &= strcmp(json_string_value(json_object_get(c, "status")), "UP") == 0;
    json_t *doc = json_pack("{s:s, s:o}", "status", up ? "UP" : "DOWN", "checks", checks);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (text == NULL) {
        weft_respond_text(req, 503, "out of memory");
        return;
    }
    size_t len = strlen(text);
    char *body = realloc(text, len + 2);
    if (body == NULL) {
        free(text);
        weft_respond_text(req, 503, "out of memory");
        return;
    }
    body[len] = '\n';
    weft_respond(req, up ? 200 : 503, "application/json", body, len + 1, WEFT_RESPOND_NO_STORE);
    free(body);
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
    const weft_generation *g = weft_generation_of_loop(L);
    json_t *checks = json_array();
    json_t *conf = json_pack("{s:I, s:s}", "generation", (json_int_t)g->id, "file", g->cfg->path);
    /* Still ready (everything else serves), but say which drop-ins are out. */
    if (g->cfg->n_refused > 0) {
        json_t *refused = json_array();
        for (size_t i = 0; i < g->cfg->n_refused; i++)
            json_array_append_new(refused, json_pack("{s:s, s:s}", "file", g->cfg->refused[i].file, "reason",
                                                     g->cfg->refused[i].reason));
        json_object_set_new(conf, "refused_files", refused);
    }
    json_array_append_new(checks, check("config", 1, conf));
    json_array_append_new(checks, check("draining", !L->stopping && !weft_loops_stop_announced(), NULL));
    if (!g->cfg->database.configured) {
        send_health(req, checks);
        return;
    }
    probe *p = malloc(sizeof(*p));
    probe_link *link = h2o_mem_alloc_shared(&req->pool, sizeof(*link), on_link_dispose);
    if (p == NULL) {
        json_decref(checks);
        weft_respond_text(req, 503, "out of memory");
        return;
    }
    *p = (probe){req, link, checks};
    link->p = p;
    weft_dbloop_query(weft_dbloop_for(L, &g->cfg->database), "SELECT 1", 0, NULL, on_probe_result, p);
}

static int answer(h2o_req_t *req, int listener)
{
    h2o_iovec_t path = req->path_normalized;
    if (path.len < 8 || (path.base[1] != 'm' && path.base[1] != 'h'))
        return 0; /* every other request: neither /metrics nor /health/... */
    const weft_config *cfg = weft_generation_of_loop(weft_loop_current)->cfg;
    int metrics = cfg->observability.metrics == listener && h2o_memis(path.base, path.len, H2O_STRLIT("/metrics"));
    int live = cfg->observability.health == listener && h2o_memis(path.base, path.len, H2O_STRLIT("/health/live"));
    int rdy = cfg->observability.health == listener && h2o_memis(path.base, path.len, H2O_STRLIT("/health/ready"));
    if (!metrics && !live && !rdy)
        return 0;
    if (!weft_respond_method_ok(req, "GET, HEAD"))
        return 1;
    if (metrics) {
        size_t len = 0;
        char *text = weft_metrics_render(weft_generation_of_loop(weft_loop_current), &len);
        if (text == NULL) {
            weft_respond_text(req, 503, "out of memory");
            return 1;
        }
        weft_respond(req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, WEFT_RESPOND_NO_STORE);
        free(text);
    } else if (live) {
        send_health(req, json_pack("[o]", check("event-loop", 1, NULL)));
    } else {
        ready(req);
    }
    return 1;
}

static int on_main(h2o_req_t *req) { return answer(req, WEFT_ON_MAIN); }
static int on_admin(h2o_req_t *req) { return answer(req, WEFT_ON_ADMIN); }

void weft_observe_register(h2o_pathconf_t *path, int listener)
{
    weft_respond_register(path, listener == WEFT_ON_ADMIN ? on_admin : on_main);
}
