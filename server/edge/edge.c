/*
 * The filter and the per-route prefilter (edge/edge.h). The rules they read
 * belong to a generation's config, which may be freed by a reload once the
 * request released it: everything that outlives the set-up (header values,
 * the compressor) is copied into, or allocated from, the request's pool.
 */
#include "edge/edge.h"

#include "request/respond.h"


typedef struct route_prefilter {
    h2o_req_prefilter_t super;
    const weft_route_cfg *route;
    const weft_config *cfg;
    int preflight_refused; /* weft's 403 to a CORS preflight */
} route_prefilter;

/* Top-level rules first, then the route's (a route's `set` wins), then CORS,
 * which has the last word on Access-Control-*, then compression, which sees
 * the final Content-Type and Content-Encoding. */
static h2o_ostream_t **apply(h2o_req_t *req, h2o_ostream_t **slot, const weft_route_cfg *route,
                             const weft_config *cfg, int preflight_refused)
{
    if (cfg->headers != NULL)
        weft_edge_headers_apply(req, cfg->headers);
    if (route != NULL && route->headers != NULL)
        weft_edge_headers_apply(req, route->headers);
    if (route != NULL && route->cors != NULL)
        weft_edge_cors_apply(req, route->cors, preflight_refused);
    const weft_compress_cfg *c = route != NULL && route->compress != NULL ? route->compress : cfg->compress;
    if (c != NULL && c->n_algs > 0)
        slot = weft_edge_compress_setup(req, c, cfg->limits.max_compressing_responses, slot);
    return slot;
}

static void on_route_setup(h2o_req_prefilter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    route_prefilter *p = (route_prefilter *)self;
    slot = apply(req, slot, p->route, p->cfg, p->preflight_refused);
    h2o_setup_next_prefilter(self, req, slot);
}

static int has_route(h2o_req_t *req)
{
    for (h2o_req_prefilter_t *p = req->prefilters; p != NULL; p = p->next)
        if (p->on_setup_ostream == on_route_setup)
            return 1;
    return 0;
}

static route_prefilter *attach(h2o_req_t *req, const weft_route_cfg *route, const weft_config *cfg)
{
    if (has_route(req))
        return NULL;
    /* Nothing to do for this route: the path filter covers the top level. */
    if (route->headers == NULL && route->cors == NULL && route->compress == NULL)
        return NULL;
    route_prefilter *p = (route_prefilter *)h2o_add_prefilter(req, H2O_ALIGNOF(*p), sizeof(*p));
    *p = (route_prefilter){.super.on_setup_ostream = on_route_setup, .route = route, .cfg = cfg};
    return p;
}

void weft_edge_route(h2o_req_t *req, const weft_route_cfg *route, const weft_config *cfg)
{
    (void)attach(req, route, cfg);
}

void weft_edge_preflight(h2o_req_t *req, const weft_route_cfg *route, const weft_config *cfg)
{
    route_prefilter *p = attach(req, route, cfg);
    const char *why = weft_edge_cors_preflight_refusal(req, route->cors);
    if (why == NULL) {
        weft_edge_cors_preflight(req, route->cors);
        return;
    }
    if (p != NULL)
        p->preflight_refused = 1;
    weft_respond_text(req, 403, why);
}

/* Answers no route's prefilter took: 404, 405, 414, 400, the built-in
 * endpoints, and routes with no rules of their own. The serving
 * generation's config is the loop's, current while the head is set up. */
/* Who serves is reload/'s to say, above this folder: process/ hands the
 * question over at registration. */
static const weft_config *(*serving_config)(void);

static void on_path_setup(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    (void)self;
    const weft_config *cfg = has_route(req) ? NULL : serving_config();
    if (cfg != NULL)
        slot = apply(req, slot, NULL, cfg, 0);
    h2o_setup_next_ostream(req, slot);
}

void weft_edge_register(h2o_pathconf_t *path, const weft_config *(*serving)(void))
{
    serving_config = serving;
    h2o_filter_t *f = h2o_create_filter(path, sizeof(*f));
    f->on_setup_ostream = on_path_setup;
}
