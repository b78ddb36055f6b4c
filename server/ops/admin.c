#include "ops/admin.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dispatch/auto.h"
#include "reload/generation.h"
#include "request/respond.h"
#include "core/loop.h"
#include "db/pq.h"
#include "plugin/module.h"
#include "plugin/quarantine.h"
#include "reload/reload.h"
#include "version.h"

static atomic_int reload_requested;
static void (*waker)(void);

int weft_admin_take_reload_request(void) { return atomic_exchange(&reload_requested, 0); }
void weft_admin_set_waker(void (*wake)(void)) { waker = wake; }

static void add_module(const weft_module *m, void *ctx)
{
    json_t *mod = json_pack("{s:s, s:s, s:i, s:s, s:I, s:I}", "name", m->name, "version",
                            m->desc.version ? m->desc.version : "?", "load", (int)m->seq, "file", m->path, "loaded_at",
                            (json_int_t)m->loaded_at, "references", (json_int_t)atomic_load(&m->refs));
    json_array_append_new(ctx, mod);
}

static json_t *auto_json(const weft_route *r)
{
    weft_auto_info ai;
    weft_auto_info_get(r, &ai);
    json_t *ja = json_pack("{s:s, s:b, s:I, s:I, s:I}", "policy", weft_dispatch_name(ai.policy), "pinned",
                           ai.pinned, "changes", (json_int_t)ai.changes, "probes", (json_int_t)ai.probes,
                           "probes_blocked", (json_int_t)ai.probes_blocked);
    if (ai.since_change_s >= 0)
        json_object_set_new(ja, "since_change_s", json_real(ai.since_change_s));
    if (ai.next_probe_in_s >= 0) {
        json_object_set_new(ja, "next_probe_in_s", json_real(ai.next_probe_in_s));
        json_object_set_new(ja, "probe_interval_s", json_real(ai.probe_interval_s));
    }
    return ja;
}

static json_t *route_json(const weft_route *r)
{
    char methods[128];
    weft_methods_format(r->cfg->methods, methods, sizeof(methods));
    json_t *jr = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s}", "path", r->cfg->path, "methods",
                           r->cfg->methods == WEFT_M_ALL ? "*" : methods, "plugin", weft_route_module(r)->name,
                           "plugin_version", weft_route_module(r)->desc.version ? weft_route_module(r)->desc.version : "?",
                           "plugin_load", (int)weft_route_module(r)->seq, "dispatch", weft_dispatch_name(r->cfg->dispatch));
    if (r->cfg->pool != NULL)
        json_object_set_new(jr, "pool", json_string(r->cfg->pool));
    /* Routes come from the main file or a fragment: say which line. */
    json_object_set_new(jr, "source", json_sprintf("%s:%d", r->cfg->file, r->cfg->line));
    if (r->quarantined)
        json_object_set_new(jr, "quarantined", json_true());
    json_object_set_new(jr, "timeout_ms", json_integer(r->cfg->timeout_ms));
    json_object_set_new(jr, "policy", json_string(weft_dispatch_name(weft_route_policy_now(r))));
    if (weft_route_auto(r) != NULL)
        json_object_set_new(jr, "auto", auto_json(r));
    return jr;
}

static json_t *quarantined_json(const weft_generation *g)
{
    json_t *quarantined = json_array();
    for (size_t i = 0; i < g->n_modules; i++) {
        const weft_quarantine *q = &g->quarantined[i];
        if (q->plugin[0] == '\0')
            continue;
        char why[1200];
        weft_quarantine_describe(q, why, sizeof(why));
        json_array_append_new(quarantined,
                              json_pack("{s:s, s:s, s:s, s:I, s:s, s:s}", "plugin", q->plugin, "version", q->version,
                                        "sha256", q->sha256, "since", (json_int_t)q->since, "why", why, "lift",
                                        "weft quarantine clear NAME, or install another build"));
    }
    return quarantined;
}

/* Static routes serve directories, no plugin: a list of their own. */
static json_t *statics_json(const weft_config *cfg)
{
    json_t *statics = json_array();
    for (size_t i = 0; i < cfg->n_statics; i++) {
        const weft_static_cfg *sc = &cfg->statics[i];
        json_array_append_new(statics, json_pack("{s:s, s:s, s:b, s:o}", "path", sc->path, "dir", sc->dir,
                                                 "follow_symlinks", sc->follow_symlinks, "source",
                                                 json_sprintf("%s:%d", sc->file, sc->line)));
    }
    return statics;
}

static json_t *status_json(const weft_generation *g)
{
    weft_reload_status rs;
    weft_reload_status_get(&rs);
    json_t *routes = json_array();
    for (size_t i = 0; i < g->n_routes; i++)
        json_array_append_new(routes, route_json(&g->routes[i]));
    json_t *files = json_array();
    for (size_t i = 0; i < g->cfg->n_route_files; i++)
        json_array_append_new(files, json_string(g->cfg->route_files[i]->path));
    /* Drop-in files left out because they would not load: what to fix. */
    json_t *refused = json_array();
    for (size_t i = 0; i < g->cfg->n_refused; i++)
        json_array_append_new(refused, json_pack("{s:s, s:s}", "file", g->cfg->refused[i].file, "reason",
                                                 g->cfg->refused[i].reason));
    json_t *quarantined = quarantined_json(g);
    json_t *modules = json_array();
    weft_module_foreach(add_module, modules);
    /* Which libpq this server loaded and which of libpq 17's paths it takes. */
    int pqv = weft_pq_version();
    json_t *libpq = pqv == 0 ? json_null()
                             : json_pack("{s:o, s:b, s:b}", "version", json_sprintf("%d.%d", pqv / 10000, pqv % 10000),
                                         "send_pipeline_sync", weft_pq_has_send_pipeline_sync(), "async_cancel",
                                         weft_pq_has_async_cancel());
    json_t *last = rs.at == 0 ? json_null()
                              : json_pack("{s:b, s:I, s:s}", "ok", rs.last_ok, "at", (json_int_t)rs.at, "message",
                                          rs.message);
    json_t *doc = json_pack("{s:s, s:I, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:{s:I, s:I, s:o}, s:o}", "version",
                            WEFT_VERSION, "generation", (json_int_t)g->id, "config", g->cfg->path, "routes_dir",
                            g->cfg->routes_dir, "route_files", files, "refused_files", refused, "routes", routes,
                            "plugins", modules, "quarantined", quarantined, "reloads", "ok", (json_int_t)rs.ok,
                            "failed", (json_int_t)rs.failed, "last", last, "libpq", libpq);
    json_object_set_new(doc, "static_routes", statics_json(g->cfg));
    return doc;
}

static void send_json(h2o_req_t *req, int status, json_t *doc)
{
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(doc);
    size_t len = text != NULL ? strlen(text) : 0;
    char *body = text != NULL ? realloc(text, len + 2) : NULL;
    if (body == NULL) {
        free(text);
        weft_respond_text(req, 503, "out of memory");
        return;
    }
    body[len] = '\n';
    weft_respond(req, status, "application/json", body, len + 1, 0);
    free(body);
}

static int on_admin_req(h2o_handler_t *self, h2o_req_t *req)
{
    h2o_iovec_t path = req->path_normalized;
    if (h2o_memis(path.base, path.len, H2O_STRLIT("/status"))) {
        if (weft_respond_method_ok(req, "GET, HEAD"))
            send_json(req, 200, status_json(weft_generation_of_loop(weft_loop_current)));
        return 0;
    }
    if (h2o_memis(path.base, path.len, H2O_STRLIT("/reload"))) {
        if (!weft_respond_method_ok(req, "POST"))
            return 0;
        atomic_store(&reload_requested, 1);
        if (waker != NULL)
            waker();
        send_json(req, 202, json_pack("{s:s}", "reload", "requested; see /status for the outcome"));
        return 0;
    }
    weft_respond_text(req, 404, "not found: the admin listener serves /status, /reload (and /dev in dev mode)");
    return 0;
}

/* ---- who may talk to the admin listener ---- */

/* The host part of a Host header or an Origin's authority: "[::1]:9901" ->
 * "::1", "localhost:9901" -> "localhost". */
static size_t host_part(const char *s, size_t len, const char **out)
{
    if (len > 0 && s[0] == '[') {
        const char *end = memchr(s, ']', len);
        *out = s + 1;
        return end != NULL ? (size_t)(end - s - 1) : len - 1;
    }
    const char *colon = memchr(s, ':', len);
    *out = s;
    return colon != NULL ? (size_t)(colon - s) : len;
}

static int trusted_host(const weft_config *cfg, const char *s, size_t len)
{
    const char *h;
    size_t n = host_part(s, len, &h);
    if ((n == 9 && strncasecmp(h, "localhost", 9) == 0) || (n == 3 && memcmp(h, "::1", 3) == 0) ||
        (n >= 4 && memcmp(h, "127.", 4) == 0 && strspn(h, "0123456789.") >= n))
        return 1;
    for (size_t i = 0; i < cfg->admin.n_allowed_hosts; i++)
        if (strlen(cfg->admin.allowed_hosts[i]) == n && strncasecmp(cfg->admin.allowed_hosts[i], h, n) == 0)
            return 1;
    return 0;
}

static const h2o_header_t *find_header(const h2o_req_t *req, const char *name)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, name, strlen(name), -1);
    return i >= 0 ? &req->headers.entries[i] : NULL;
}

/* Compares without stopping at the first difference, so the time taken says
 * nothing about how much of a guess was right. */
static int token_equal(const char *a, size_t alen, const char *b, size_t blen)
{
    unsigned char diff = alen != blen;
    for (size_t i = 0; i < alen && i < blen; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

/*
 * A page in a local browser can reach a loopback port (DNS rebinding makes
 * its Host a name the attacker controls; a plain cross-site form POST needs
 * no rebinding at all), so: only loopback names or admin.allowed_hosts as
 * Host; no state change from a cross-site Origin / Sec-Fetch-Site; and with
 * admin.token_file, /reload only for the bearer of that token.
 */
int weft_admin_guard(h2o_req_t *req)
{
    const weft_config *cfg = weft_generation_of_loop(weft_loop_current)->cfg;
    if (!trusted_host(cfg, req->authority.base, req->authority.len)) {
        weft_respond_text(req, 403, "forbidden: the admin listener answers only to a loopback Host or one in "
                                    "admin.allowed_hosts");
        return 1;
    }
    int safe = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) ||
               h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
    if (safe)
        return 0;
    const h2o_header_t *origin = find_header(req, "origin"), *site = find_header(req, "sec-fetch-site");
    if (origin != NULL) {
        const char *o = origin->value.base, *scheme = memmem(o, origin->value.len, "://", 3);
        size_t off = scheme != NULL ? (size_t)(scheme - o) + 3 : origin->value.len;
        if (!trusted_host(cfg, o + off, origin->value.len - off)) {
            weft_respond_text(req, 403, "forbidden: a cross-site Origin may not change the server's state");
            return 1;
        }
    }
    if (site != NULL && !h2o_memis(site->value.base, site->value.len, H2O_STRLIT("same-origin")) &&
        !h2o_memis(site->value.base, site->value.len, H2O_STRLIT("none"))) {
        weft_respond_text(req, 403, "forbidden: a cross-site request (Sec-Fetch-Site) may not change the server's state");
        return 1;
    }
    if (cfg->admin.token != NULL && h2o_memis(req->path_normalized.base, req->path_normalized.len, H2O_STRLIT("/reload"))) {
        const h2o_header_t *auth = find_header(req, "authorization");
        size_t tl = strlen(cfg->admin.token);
        if (auth == NULL || auth->value.len < 7 || strncasecmp(auth->value.base, "Bearer ", 7) != 0 ||
            !token_equal(auth->value.base + 7, auth->value.len - 7, cfg->admin.token, tl)) {
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL, H2O_STRLIT("Bearer"));
            weft_respond_text(req, 401, "unauthorized: /reload needs the bearer token of admin.token_file");
            return 1;
        }
    }
    return 0;
}

void weft_admin_register(h2o_pathconf_t *path)
{
    h2o_handler_t *h = h2o_create_handler(path, sizeof(*h));
    h->on_req = on_admin_req;
}
