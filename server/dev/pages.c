/* Dev mode over HTTP: the build-error page on the main listener, the Dev UI on the admin listener. */
#include <jansson.h>
#include <libconfig.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/stats.h"
#include "base/timer.h"
#include "config/router.h"
#include "core/loop.h"
#include "dev/assets.h"
#include "dev/dev.h"
#include "dev/logtap.h"
#include "dev/project.h"
#include "dev/try.h"
#include "dispatch/auto.h"
#include "reload/generation.h"
#include "reload/reload.h"
#include "request/respond.h"
#include "version.h"

/* Sends `text` (malloc'd, freed here); NULL means the page could not be built. */
static void send_text(h2o_req_t *req, int status, const char *type, char *text, size_t len)
{
    if (text == NULL)
        weft_respond_text(req, 503, "out of memory");
    else
        weft_respond(req, status, type, text, len, WEFT_RESPOND_NO_STORE);
    free(text);
}

static int path_matches(const char *pattern, const char *path, size_t len)
{
    weft_router *r = weft_router_new();
    void *conflict;
    char why[128];
    weft_match m;
    int hit = 0;
    if (r != NULL && weft_router_add(r, pattern, WEFT_M_ALL, (void *)1, &conflict, why, sizeof(why)) == 0) {
        weft_router_match(r, path, len, WEFT_M_GET, &m);
        hit = m.status == 200;
    }
    weft_router_free(r);
    return hit;
}

/* Under the lock: the failed project one of whose routes matches the path, or NULL. */
static const weft_dev_project *failed_project_of(const char *path, size_t len)
{
    for (int i = 0; i < weft_dev_n_projects(); i++) {
        const weft_dev_project *p = weft_dev_project_at(i);
        for (size_t k = 0; p->failed && k < p->n_paths; k++)
            if (path_matches(p->paths[k], path, len))
                return p;
    }
    return NULL;
}

int weft_dev_intercept(h2o_req_t *req)
{
    if (!weft_dev_active())
        return 0;
    weft_dev_lock();
    const weft_dev_project *hit = failed_project_of(req->path_normalized.base, req->path_normalized.len);
    if (hit == NULL) {
        weft_dev_unlock();
        return 0;
    }
    char *html = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&html, &len);
    if (f != NULL) {
        const char *what = hit->crashed ? "Crashed: " : "Build failed: ";
        fputs("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>", f);
        fputs(what, f);
        weft_dev_html_escape(f, hit->name);
        fputs("</title><style>body{font:15px system-ui,sans-serif;margin:2em;color:#222}"
              "pre{background:#1e1e1e;color:#eee;padding:1em;overflow:auto;border-radius:6px}"
              "h1{color:#b00020}</style></head><body><h1>",
              f);
        fputs(what, f);
        weft_dev_html_escape(f, hit->name);
        fputs(hit->crashed ? "</h1><p>This build crashed the dev server, which restarted; its routes show this "
                             "until the next good build. The crash line and backtrace:</p><pre id=\"compiler-output\">"
                           : "</h1><p>The last build of this plugin failed; the previous good version stays loaded and "
                             "serves again after the next good build. Compiler output:</p><pre id=\"compiler-output\">",
              f);
        weft_dev_html_escape(f, hit->output != NULL ? hit->output : "");
        fputs("</pre><p><a href=\"javascript:location.reload()\">Reload this page</a></p></body></html>\n", f);
        fclose(f);
    }
    weft_dev_unlock();
    send_text(req, 500, "text/html; charset=utf-8", html, len);
    return 1;
}

/* Where a route's requests run now: an auto route's policy moves, and the
 * page refreshes it from /dev/stats with the same words. */
static void policy_text(const weft_route *r, char *out, size_t size)
{
    if (weft_route_auto(r) == NULL) {
        snprintf(out, size, "%s", weft_dispatch_name(weft_route_policy_now(r)));
        return;
    }
    weft_auto_info ai;
    weft_auto_info_get(r, &ai);
    int n = snprintf(out, size, "auto: %s", weft_dispatch_name(ai.policy));
    if (n < 0 || (size_t)n >= size)
        return;
    if (ai.pinned)
        snprintf(out + n, size - (size_t)n, " (pinned)");
    else if (ai.next_probe_in_s >= 0)
        snprintf(out + n, size - (size_t)n, " (%llu change%s, next probe in %.0f s)", (unsigned long long)ai.changes,
                 ai.changes == 1 ? "" : "s", ai.next_probe_in_s);
    else if (ai.changes > 0)
        snprintf(out + n, size - (size_t)n, " (%llu change%s)", (unsigned long long)ai.changes,
                 ai.changes == 1 ? "" : "s");
}

static void routes_table(FILE *f, const weft_generation *g)
{
    fputs("<h2>Routes</h2><table id=\"routes\"><tr><th>path</th><th>plugin</th><th>version</th><th>policy</th>"
          "<th>req/s</th><th>avg latency</th><th>requests</th><th>req/s, last minute</th><th>latency</th></tr>",
          f);
    for (size_t i = 0; i < g->n_routes; i++) {
        const weft_route *r = &g->routes[i];
        fprintf(f, "<tr data-slot=\"%d\"><td>", r->stat_slot);
        weft_dev_html_escape(f, r->cfg->path);
        fputs("</td><td>", f);
        weft_dev_html_escape(f, weft_route_module(r)->name);
        char policy[128];
        policy_text(r, policy, sizeof(policy));
        fprintf(f, "</td><td>%s #%u</td><td class=\"policy\">%s</td><td class=\"rate\" data-slot=\"%d\">-</td><td class=\"lat\" "
                   "data-slot=\"%d\">-</td><td class=\"total\">-</td><td><canvas class=\"chart rate-chart\" "
                   "width=\"160\" height=\"28\"></canvas></td><td><canvas class=\"chart lat-chart\" "
                   "data-color=\"#ef6c00\" width=\"160\" height=\"28\"></canvas></td></tr>",
                weft_route_module(r)->desc.version ? weft_route_module(r)->desc.version : "?", weft_route_module(r)->seq,
                policy, r->stat_slot, r->stat_slot);
    }
    fputs("</table>", f);
}

/* One option's value as the config spells it (groups and lists in brief). */
static void option_value(FILE *f, const config_setting_t *o)
{
    switch (config_setting_type(o)) {
    case CONFIG_TYPE_STRING:
        fputc('"', f);
        weft_dev_html_escape(f, config_setting_get_string(o));
        fputc('"', f);
        break;
    case CONFIG_TYPE_INT: fprintf(f, "%d", config_setting_get_int(o)); break;
    case CONFIG_TYPE_INT64: fprintf(f, "%lld", config_setting_get_int64(o)); break;
    case CONFIG_TYPE_FLOAT: fprintf(f, "%g", config_setting_get_float(o)); break;
    case CONFIG_TYPE_BOOL: fputs(config_setting_get_bool(o) ? "true" : "false", f); break;
    default: fprintf(f, "(%d entries)", config_setting_length(o));
    }
}

/* The configuration the server runs, route by route, and where each route came from. */
static void config_table(FILE *f, const weft_generation *g)
{
    fputs("<h2>Configuration</h2><table id=\"config\"><tr><th>path</th><th>plugin</th><th>policy</th>"
          "<th>options</th><th>from</th></tr>",
          f);
    for (size_t i = 0; i < g->n_routes; i++) {
        const weft_route_cfg *rc = g->routes[i].cfg;
        fputs("<tr><td>", f);
        weft_dev_html_escape(f, rc->path);
        fputs("</td><td>", f);
        weft_dev_html_escape(f, rc->plugin);
        fprintf(f, "</td><td>%s</td><td class=\"options\">", weft_dispatch_name(rc->dispatch));
        int n = rc->options != NULL ? config_setting_length(rc->options) : 0;
        for (int k = 0; k < n; k++) {
            const config_setting_t *o = config_setting_get_elem(rc->options, (unsigned)k);
            fprintf(f, "%s%s = ", k ? "; " : "", config_setting_name(o) ? config_setting_name(o) : "?");
            option_value(f, o);
        }
        fputs("</td><td>", f);
        weft_dev_html_escape(f, rc->file != NULL ? rc->file : g->cfg->path);
        fprintf(f, ":%d</td></tr>", rc->line);
    }
    fputs("</table>", f);
}

static void builds_table(FILE *f)
{
    fputs("<h2>Builds</h2><table id=\"builds\"><tr><th>plugin</th><th>builds</th><th>last</th><th>outcome</th></tr>",
          f);
    weft_dev_lock();
    for (int i = 0; i < weft_dev_n_projects(); i++) {
        const weft_dev_project *p = weft_dev_project_at(i);
        char when[32] = "-";
        struct tm tm;
        if (p->built_at && localtime_r(&p->built_at, &tm) != NULL)
            strftime(when, sizeof(when), "%H:%M:%S", &tm);
        fputs("<tr><td>", f);
        weft_dev_html_escape(f, p->name);
        fprintf(f, "</td><td>%u</td><td>%s</td><td class=\"%s\">%s", p->builds, when, p->failed ? "fail" : "ok",
                p->failed ? "failed" : p->built ? "ok" : "not built");
        if (p->failed && p->output != NULL) {
            fputs("<pre>", f);
            weft_dev_html_escape(f, p->output);
            fputs("</pre>", f);
        }
        fputs("</td></tr>", f);
    }
    weft_dev_unlock();
    fputs("</table>", f);
}

static const char *const test_states[] = {"no tests", "queued", "running", "passed", "failed"};

/* Refreshed from /dev/stats by the page's script; the rows are the projects. */
static void tests_table(FILE *f)
{
    fputs("<h2>Tests</h2><table id=\"tests\"><tr><th>plugin</th><th>runs</th><th>outcome</th><th>summary</th></tr>",
          f);
    weft_dev_lock();
    for (int i = 0; i < weft_dev_n_projects(); i++) {
        const weft_dev_project *p = weft_dev_project_at(i);
        fputs("<tr data-project=\"", f);
        weft_dev_html_escape(f, p->name);
        fputs("\"><td>", f);
        weft_dev_html_escape(f, p->name);
        fprintf(f, "</td><td class=\"runs\">%u</td><td class=\"state %s\">%s</td><td class=\"summary\"><span class=\"text\">", p->test_runs,
                p->test_state == WEFT_DEV_TESTS_FAILED ? "fail" : "ok", test_states[p->test_state]);
        weft_dev_html_escape(f, p->test_summary);
        fputs("</span><pre class=\"failures\">", f);
        weft_dev_html_escape(f, p->test_state == WEFT_DEV_TESTS_FAILED && p->test_output != NULL ? p->test_output : "");
        fputs("</pre></td></tr>", f);
    }
    weft_dev_unlock();
    fputs("</table>", f);
}

/* The test results for /dev/stats, by project name. */
static json_t *tests_json(void)
{
    json_t *tests = json_object();
    weft_dev_lock();
    for (int i = 0; tests != NULL && i < weft_dev_n_projects(); i++) {
        const weft_dev_project *p = weft_dev_project_at(i);
        json_object_set_new(tests, p->name,
                            json_pack("{s:s, s:s, s:s, s:I}", "state", test_states[p->test_state], "summary",
                                      p->test_summary, "failures",
                                      p->test_state == WEFT_DEV_TESTS_FAILED && p->test_output ? p->test_output : "",
                                      "runs", (json_int_t)p->test_runs));
    }
    weft_dev_unlock();
    return tests;
}

char *weft_dev_page_html(const weft_generation *g, size_t *len)
{
    char *html = NULL;
    FILE *f = open_memstream(&html, len);
    if (f != NULL) {
        fprintf(f,
                "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>weft dev</title><style>%s</style>"
                "</head><body><h1>weft dev</h1><p>weft %s &middot; generation <span id=\"generation\">%lu</span> "
                "&middot; config <code>",
                weft_dev_style, WEFT_VERSION, g->id);
        weft_dev_html_escape(f, g->cfg->path);
        fputs("</code></p><p><button id=\"reload\" onclick=\"doReload()\">Reload config</button> "
              "<span id=\"reload-status\"></span></p>",
              f);
        routes_table(f, g);
        weft_dev_try_box(f, g);
        tests_table(f);
        builds_table(f);
        config_table(f, g);
        fputs("<h2>Last reload</h2><pre id=\"last-reload\">loading&hellip;</pre><h2>Log</h2><pre id=\"log\">"
              "</pre><script>\n",
              f);
        fputs(weft_dev_script, f);
        fputs("</script></body></html>\n", f);
        fclose(f);
    }
    return html;
}

static void dev_page(h2o_req_t *req)
{
    size_t len = 0;
    char *html = weft_dev_page_html(weft_generation_of_loop(weft_loop_current), &len);
    send_text(req, 200, "text/html; charset=utf-8", html, len);
}

/* Raw per-route totals; the page turns two samples into rates. */
static void dev_stats(h2o_req_t *req)
{
    const weft_generation *g = weft_generation_of_loop(weft_loop_current);
    weft_reload_status rs;
    weft_reload_status_get(&rs);
    json_t *routes = json_object();
    for (size_t i = 0; routes != NULL && i < g->n_routes; i++) {
        int slot = g->routes[i].stat_slot;
        uint64_t count = 0;
        double sum = 0;
        weft_stats_slot_totals(slot, &count, &sum);
        char key[16];
        snprintf(key, sizeof(key), "%d", slot);
        char policy[128];
        policy_text(&g->routes[i], policy, sizeof(policy));
        json_object_set_new(routes, key,
                            json_pack("{s:I, s:f, s:s}", "count", (json_int_t)count, "sum", sum, "policy", policy));
    }
    json_t *doc = json_pack("{s:I, s:f, s:s+, s:o, s:o}", "generation", (json_int_t)g->id, "at",
                            (double)weft_now_ns() / 1e9, "last_reload",
                            rs.at == 0     ? "no reload yet"
                            : rs.last_ok   ? "ok: "
                                           : "refused: ",
                            rs.at == 0 ? "" : rs.message, "routes", routes, "tests", tests_json());
    char *text = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    send_text(req, 200, "application/json", text, text != NULL ? strlen(text) : 0);
}

/* /dev/log?after=N: the log lines kept since line N. */
static void dev_log(h2o_req_t *req)
{
    unsigned long after = 0;
    if (req->query_at != SIZE_MAX) {
        const char *q = req->path.base + req->query_at, *end = req->path.base + req->path.len;
        const char *a = memmem(q, (size_t)(end - q), "after=", 6);
        if (a != NULL)
            after = strtoul(a + 6, NULL, 10);
    }
    json_t *doc = weft_dev_logtap_json(after);
    char *text = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    send_text(req, 200, "application/json", text, text != NULL ? strlen(text) : 0);
}

int weft_dev_admin(h2o_req_t *req)
{
    if (!weft_dev_active())
        return 0;
    h2o_iovec_t p = req->path_normalized;
    if (h2o_memis(p.base, p.len, H2O_STRLIT("/dev")) || h2o_memis(p.base, p.len, H2O_STRLIT("/dev/"))) {
        dev_page(req);
        return 1;
    }
    if (h2o_memis(p.base, p.len, H2O_STRLIT("/dev/stats"))) {
        dev_stats(req);
        return 1;
    }
    if (h2o_memis(p.base, p.len, H2O_STRLIT("/dev/log"))) {
        dev_log(req);
        return 1;
    }
    if (h2o_memis(p.base, p.len, H2O_STRLIT("/dev/try"))) {
        weft_dev_try(req);
        return 1;
    }
    return 0;
}
