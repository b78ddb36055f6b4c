#include "reload/reload.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_diff.h"
#include "dispatch/blocking.h"
#include "reload/dropins.h"
#include "base/log.h"
#include "core/loop.h"
#include "request/trace.h"
#include "core/peers.h"

static pthread_mutex_t status_mu = PTHREAD_MUTEX_INITIALIZER;
static weft_reload_status status;
static unsigned long next_id = 2;
/* The serving generation (its config included); control thread only. Each
 * loop holds its own reference, swapped by a message. */
static weft_generation *serving;

weft_generation *weft_reload_serving(void) { return serving; }

void weft_reload_shutdown(void)
{
    weft_generation_release(serving);
    serving = NULL;
}

void weft_reload_init(weft_generation *first)
{
    serving = first;
    pthread_mutex_lock(&status_mu);
    status.generation = first->id;
    pthread_mutex_unlock(&status_mu);
}

void weft_reload_status_get(weft_reload_status *out)
{
    pthread_mutex_lock(&status_mu);
    *out = status;
    pthread_mutex_unlock(&status_mu);
}

static void record(unsigned long gen, int ok, const char *message)
{
    pthread_mutex_lock(&status_mu);
    if (ok) {
        status.generation = gen;
        status.ok++;
    } else {
        status.failed++;
    }
    status.last_ok = ok;
    status.at = time(NULL);
    snprintf(status.message, sizeof(status.message), "%s", message);
    pthread_mutex_unlock(&status_mu);
}

static const weft_route *find_route(const weft_generation *g, const weft_route_cfg *rc)
{
    for (size_t i = 0; i < g->n_routes; i++)
        if (strcmp(g->routes[i].cfg->path, rc->path) == 0 && g->routes[i].cfg->methods == rc->methods)
            return &g->routes[i];
    return NULL;
}

/* One line per difference, so an operator sees what a reload did. */
static void log_diff(const weft_generation *old, const weft_generation *cur)
{
    size_t added = 0, removed = 0, changed = 0;
    char settings[512];
    for (size_t i = 0; i < cur->n_routes; i++) {
        const weft_route *r = &cur->routes[i];
        const weft_route *o = find_route(old, r->cfg);
        if (o == NULL) {
            weft_log_info("reload: route %s added (plugin %s, dispatch=%s)", r->cfg->path, r->cfg->plugin,
                          weft_dispatch_name(r->cfg->dispatch));
            added++;
        } else if (weft_route_module(o) != weft_route_module(r) || o->cfg->dispatch != r->cfg->dispatch ||
                   strcmp(o->cfg->plugin, r->cfg->plugin) != 0 ||
                   (o->cfg->pool && r->cfg->pool && strcmp(o->cfg->pool, r->cfg->pool) != 0)) {
            weft_log_info("reload: route %s changed: plugin %s #%u -> %s %s #%u, dispatch %s -> %s", r->cfg->path,
                          weft_route_module(o)->name, weft_route_module(o)->seq, weft_route_module(r)->name,
                          weft_route_module(r)->desc.version ? weft_route_module(r)->desc.version : "?", weft_route_module(r)->seq,
                          weft_dispatch_name(o->cfg->dispatch), weft_dispatch_name(r->cfg->dispatch));
            changed++;
        } else if (!weft_setting_equal(o->cfg->options, r->cfg->options)) {
            /* Same code, new options: still a change the operator made. */
            weft_log_info("reload: route %s changed: options (plugin %s #%u re-initialised)", r->cfg->path,
                          weft_route_module(r)->name, weft_route_module(r)->seq);
            changed++;
        } else if (weft_route_settings_diff(o->cfg, r->cfg, settings, sizeof(settings)) > 0) {
            weft_log_info("reload: route %s changed: %s", r->cfg->path, settings);
            changed++;
        }
        if (o != NULL && o->quarantined != r->quarantined)
            weft_log_info("reload: route %s %s", r->cfg->path,
                          r->quarantined ? "quarantined: answers 503" : "out of quarantine: serving again");
    }
    for (size_t i = 0; i < old->n_routes; i++)
        if (find_route(cur, old->routes[i].cfg) == NULL) {
            weft_log_info("reload: route %s removed", old->routes[i].cfg->path);
            removed++;
        }
    for (size_t i = 0; i < cur->n_modules; i++) {
        const weft_module *m = cur->modules[i];
        int is_new = 1;
        for (size_t k = 0; k < old->n_modules && is_new; k++)
            is_new = old->modules[k] != m;
        if (is_new)
            weft_log_info("reload: plugin %s %s (load #%u) from %s", m->name, m->desc.version ? m->desc.version : "?",
                          m->seq, m->path);
    }
    weft_log_info("reload: generation %lu serving %zu route(s): %zu added, %zu removed, %zu changed", cur->id,
                  cur->n_routes, added, removed, changed);
}

/* One reload's swap across the loops: the last loop to take the new
 * generation says so, since "generation N serving" is logged when the
 * messages are posted, before any loop has acted on its own. */
typedef struct swap_round {
    atomic_int left;
    unsigned long id;
    int loops;
} swap_round;

typedef struct swap_msg {
    weft_msg m;
    weft_generation *gen;
    swap_round *round;
} swap_msg;

static void on_swap(weft_msg *m)
{
    swap_msg *s = H2O_STRUCT_FROM_MEMBER(swap_msg, m, m);
    weft_loop *L = weft_loop_current;
    weft_generation *old = weft_generation_of_loop(L);
    weft_generation_set_loop(L, s->gen); /* new requests on this loop use it from now on */
    weft_loop_use_tls(L, (SSL_CTX *const *)s->gen->tls); /* new handshakes get the new certificates */
    swap_round *round = s->round;
    if (atomic_fetch_sub_explicit(&round->left, 1, memory_order_acq_rel) == 1) {
        weft_log_info("generation %lu serves on every loop (%d): no new request starts on an older one", round->id,
                      round->loops);
        free(round);
    }
    free(s);
    weft_generation_release(old);
}

static void refuse(const char *why, weft_errors *errs)
{
    char msg[2048] = "";
    for (size_t i = 0; i < errs->count; i++)
        snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "%s%s", i ? "\n" : "", errs->msgs[i]);
    weft_errors_log(errs);
    weft_log_error("reload (%s) refused; generation %lu keeps serving", why, serving->id);
    record(0, 0, msg);
    weft_errors_clear(errs);
}

static int restart_only(const weft_config *cfg, weft_errors *errs, void *serving_cfg)
{
    char restart[1024];
    if (!weft_config_restart_only(serving_cfg, cfg, restart, sizeof(restart)))
        return 0;
    weft_errors_add(errs, "%s", restart);
    return -1;
}

int weft_reload(weft_reload_kind kind, const char *why)
{
    weft_errors errs = {0};
    weft_generation *old = serving;
    weft_log_info("reload (%s): building generation %lu", why, next_id);
    /* A drop-in file the serving generation left out stays out without
     * failing the reload; one broken since refuses it (reload/dropins.h). */
    weft_generation *gen = weft_dropins_build(old->cfg->path, kind == WEFT_RELOAD_CONFIG ? NULL : old->cfg->text,
                                              old->cfg, next_id, 0, restart_only, old->cfg, &errs);
    if (gen == NULL) {
        refuse(why, &errs);
        return -1;
    }
    weft_config *cfg = gen->cfg;
    next_id++;
    for (size_t i = 0; i < cfg->n_refused; i++)
        weft_log_error("reload: drop-in %s still refused, its routes are not served: %s", cfg->refused[i].file,
                       cfg->refused[i].reason);
    log_diff(old, gen);
    weft_log_set_level(cfg->log.level);
    weft_log_set_json(cfg->log.json);
    weft_blocking_configure(cfg->blocking.threshold_ms, cfg->blocking.interval_s);
    weft_peers_set_limit((unsigned)cfg->limits.max_connections_per_ip);
    weft_trace_configure(cfg);
    /* Every message is allocated before the first is posted, so running
     * out of memory refuses the reload instead of swapping only some loops. */
    int n = weft_loop_count();
    swap_round *round = calloc(1, sizeof(*round));
    swap_msg **msgs = round != NULL ? calloc((size_t)n + 1, sizeof(*msgs)) : NULL;
    for (int t = 0; msgs != NULL && t < n; t++)
        if ((msgs[t] = calloc(1, sizeof(**msgs))) == NULL) {
            for (int k = 0; k < t; k++)
                free(msgs[k]);
            free(msgs);
            msgs = NULL;
        }
    if (msgs == NULL) {
        free(round);
        weft_errors_add(&errs, "%s: out of memory swapping in generation %lu", cfg->path, gen->id);
        weft_generation_release(gen);
        refuse(why, &errs);
        return -1;
    }
    atomic_init(&round->left, n);
    round->id = gen->id;
    round->loops = n;
    for (int t = 0; t < n; t++) {
        weft_generation_retain(gen);
        msgs[t]->gen = gen;
        msgs[t]->round = round;
        weft_loop_post(weft_loop_at(t), &msgs[t]->m, on_swap);
    }
    if (n == 0)
        free(round);
    free(msgs);
    serving = gen;
    weft_generation_start_timers(gen);
    weft_generation_release(old);
    char msg[128];
    snprintf(msg, sizeof(msg), "generation %lu serving (%s)", gen->id, why);
    record(gen->id, 1, msg);
    return 0;
}
