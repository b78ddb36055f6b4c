/* A generation's static routes: each directory's handler built with the
 * generation and freed with it, so a request that started on a generation
 * keeps serving from that generation's directory through a reload. */
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "base/stats.h"
#include "config/methods.h"
#include "edge/mime.h"
#include "edge/static.h"
#include "reload/generation.h"

void weft_generation_build_statics(weft_generation *g, int check_only, weft_errors *errs)
{
    const weft_config *cfg = g->cfg;
    if (cfg->n_statics == 0)
        return;
    g->mimemap = weft_mime_load(WEFT_MIME_TYPES);
    g->statics = calloc(cfg->n_statics, sizeof(*g->statics));
    if (g->statics == NULL)
        weft_fatal("out of memory");
    for (size_t i = 0; i < cfg->n_statics; i++) {
        const weft_static_cfg *sc = &cfg->statics[i];
        char why[512];
        struct weft_static *st = weft_static_new(sc, g->mimemap, why, sizeof(why));
        if (st == NULL) {
            weft_errors_add(errs, "%s:%d: route %s: static: %s", sc->file, sc->line, sc->path, why);
            continue;
        }
        weft_static_route *sr = &g->statics[g->n_statics];
        *sr = (weft_static_route){.serve = st, .stat_slot = -1, .gen = g};
        g->n_statics++;
        void *conflict = NULL;
        if (weft_router_add_prefix(g->router, sc->path, WEFT_M_GET | WEFT_M_HEAD, sr, &conflict, why, sizeof(why)) !=
            0) {
            if (conflict != NULL) {
                const weft_static_cfg *other = weft_static_cfg_of(((weft_static_route *)conflict)->serve);
                weft_errors_add(errs, "%s:%d: route %s: %s by the route at %s:%d", sc->file, sc->line, sc->path, why,
                                other->file, other->line);
            } else {
                weft_errors_add(errs, "%s:%d: route %s: %s", sc->file, sc->line, sc->path, why);
            }
            continue;
        }
        if (!check_only)
            sr->stat_slot = weft_stats_slot(sc->path, "static");
    }
}

void weft_generation_free_statics(weft_generation *g)
{
    for (size_t i = 0; i < g->n_statics; i++)
        weft_static_free(g->statics[i].serve);
    free(g->statics);
    if (g->mimemap != NULL)
        h2o_mem_release_shared(g->mimemap);
}
