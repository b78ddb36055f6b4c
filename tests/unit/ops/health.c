/*
 * Tests for server/ops/observe.c and admin.c's answers: /health/live,
 * /health/ready, /metrics, /status and /reload, served by one real loop's
 * h2o (support/unitloop.h, no weft process) for a generation built from a
 * config with a route fragment directory holding one broken fragment. The
 * JSON is decoded with jansson. Who may reach the admin listener
 * (weft_admin_guard) is tests/integration/admin.c's.
 */
#include "ops/admin.h"
#include "ops/observe.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "plugin/module.h"
#include "rawhttp.h"
#include "reload/dropins.h"
#include "reload/generation.h"
#include "unit.h"
#include "unitloop.h"

static weft_generation *gen;
static wt_raw_resp resp;
static json_t *doc;
static char conf[400];

static void setup(void)
{
    unsetenv("WEFT_PLUGIN_PATH");
    /* The suite's PostgreSQL (PG* set by packaging/test.sh) would configure a
     * database without a `database` group (config/database_cfg.c): these
     * generations have none. */
    static const char *const pg_env[] = {"PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGSERVICE"};
    for (size_t i = 0; i < sizeof(pg_env) / sizeof(pg_env[0]); i++)
        unsetenv(pg_env[i]);
    wt_unit_setup("health");
}

static void teardown(void)
{
    wt_loops_stop();
    wt_raw_free(&resp);
    json_decref(doc);
    doc = NULL;
    if (gen != NULL)
        weft_generation_release(gen);
    gen = NULL;
    weft_module_cleanup();
    wt_unit_teardown();
}

TestSuite(health, .init = setup, .fini = teardown, .timeout = 60);

static void handlers(h2o_pathconf_t *path)
{
    weft_observe_register(path, WEFT_ON_MAIN);
    weft_admin_register(path); /* the last one: 404 for the rest */
}

static atomic_int woken;
static void wake(void) { atomic_fetch_add(&woken, 1); }

/* `observability` as the config spells it; one route, one static route, routes.d with a broken fragment. */
static void start(const char *observability)
{
    char dir[500], path[600];
    snprintf(dir, sizeof(dir), "%s/routes.d", wt_tmpdir);
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(path, sizeof(path), "%s/broken.conf", dir);
    wt_write_file_atomic(path, "routes = ( { path = \"/b\"; plugin = \"no_such_plugin\"; dispatch = \"reactive\"; } );\n");
    snprintf(conf, sizeof(conf), "%s/weft.conf", wt_tmpdir);
    FILE *f = fopen(conf, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "plugin_dirs = [ \"%s\" ];\n"
            "observability = { %s };\n"
            "routes = (\n"
            "  { path = \"/e/{id}\"; methods = [\"GET\", \"POST\"]; plugin = \"echo\"; dispatch = \"coroutine\"; "
            "timeout_ms = 1500; },\n"
            "  { path = \"/files\"; static = { dir = \"%s\"; }; }\n"
            ");\n",
            WEFT_FIXTURE_DIR, observability, wt_tmpdir);
    cr_assert_eq(fclose(f), 0);
    gen = weft_dropins_build(conf, NULL, NULL, 9, 1, NULL, NULL, &wt_errs);
    cr_assert_not_null(gen, "refused:%s", wt_errs_text(&wt_errs));
    cr_assert_eq(gen->cfg->n_refused, 1, "the broken fragment is left out");
    weft_admin_set_waker(wake);
    wt_loops_register(handlers);
    wt_loops_start(1);
    wt_loops_generation(gen);
}

/* One request; its JSON body decoded into `doc` when it is JSON. */
static long ask(const char *method, const char *target)
{
    wt_raw_free(&resp);
    json_decref(doc);
    doc = NULL;
    wt_raw_http(wt_h1_listen(0), method, target, NULL, NULL, &resp);
    char type[128];
    if (wt_raw_header(&resp, "content-type", type, sizeof(type)) != NULL && strcmp(type, "application/json") == 0) {
        json_error_t e;
        doc = json_loads(resp.body, 0, &e);
        cr_assert_not_null(doc, "%s %s: not JSON (%s): %s", method, target, e.text, resp.body);
    }
    return resp.status;
}

/* The check named `name` in a health answer. */
static json_t *check_named(const char *name)
{
    json_t *checks = json_object_get(doc, "checks");
    for (size_t i = 0; i < json_array_size(checks); i++) {
        json_t *c = json_array_get(checks, i);
        if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
            return c;
    }
    cr_assert_fail("no check %s in %s", name, resp.body);
    return NULL;
}

static const char *str(json_t *o, const char *key) { return json_string_value(json_object_get(o, key)); }

Test(health, live_is_up_and_never_cached)
{
    start("");
    cr_assert_eq(ask("GET", "/health/live"), 200, "%s", resp.head);
    cr_assert_str_eq(str(doc, "status"), "UP");
    cr_assert_str_eq(str(check_named("event-loop"), "status"), "UP");
    char cc[64];
    cr_assert(wt_raw_header(&resp, "cache-control", cc, sizeof(cc)) && strstr(cc, "no-store"), "%s", resp.head);
    cr_assert_eq(ask("POST", "/health/live"), 405);
    cr_assert(wt_raw_header(&resp, "allow", cc, sizeof(cc)) && strcmp(cc, "GET, HEAD") == 0, "%s", resp.head);
}

Test(health, ready_names_the_generation_and_the_drop_ins_left_out)
{
    start("");
    cr_assert_eq(ask("GET", "/health/ready"), 200, "%s", resp.body);
    cr_assert_str_eq(str(doc, "status"), "UP", "a left-out drop-in does not make the server unready");
    json_t *data = json_object_get(check_named("config"), "data");
    cr_assert_eq(json_integer_value(json_object_get(data, "generation")), 9);
    cr_assert_str_eq(str(data, "file"), conf);
    json_t *refused = json_array_get(json_object_get(data, "refused_files"), 0);
    cr_assert(refused != NULL && strstr(str(refused, "file"), "routes.d/broken.conf") != NULL, "%s", resp.body);
    cr_assert(strstr(str(refused, "reason"), "no_such_plugin") != NULL, "%s", resp.body);
    cr_assert_str_eq(str(check_named("draining"), "status"), "UP");
    cr_assert_eq(json_array_size(json_object_get(doc, "checks")), 2, "no database configured: no database check");
}

Test(health, ready_is_503_once_the_server_drains)
{
    start("");
    weft_loops_announce_stop();
    cr_assert_eq(ask("GET", "/health/ready"), 503, "%s", resp.body);
    cr_assert_str_eq(str(doc, "status"), "DOWN");
    cr_assert_str_eq(str(check_named("draining"), "status"), "DOWN");
    cr_assert_str_eq(str(check_named("config"), "status"), "UP");
    cr_assert_eq(ask("GET", "/health/live"), 200, "still alive while draining");
}

Test(health, each_endpoint_answers_only_where_the_config_puts_it)
{
    start("metrics = \"main\"; health = \"off\";");
    cr_assert_eq(ask("GET", "/metrics"), 200);
    char type[128];
    cr_assert_str_eq(wt_raw_header(&resp, "content-type", type, sizeof(type)), "text/plain; version=0.0.4; charset=utf-8");
    cr_assert(strncmp(resp.body, "# HELP ", 7) == 0 && strstr(resp.body, "\nweft_generation 9\n"), "%.200s", resp.body);
    cr_assert_eq(ask("GET", "/health/live"), 404, "health is off: declined, the admin handler's 404");
    cr_assert(strstr(resp.body, "the admin listener serves /status") != NULL, "%s", resp.body);
    cr_assert_eq(ask("GET", "/health/livelier"), 404);
}

Test(health, status_lists_routes_with_their_source_and_the_left_out_files)
{
    start("");
    cr_assert_eq(ask("GET", "/status"), 200, "%s", resp.body);
    cr_assert_eq(json_integer_value(json_object_get(doc, "generation")), 9);
    cr_assert_str_eq(str(doc, "config"), conf);
    json_t *routes = json_object_get(doc, "routes");
    cr_assert_eq(json_array_size(routes), 1, "%s", resp.body);
    json_t *r = json_array_get(routes, 0);
    cr_assert_str_eq(str(r, "path"), "/e/{id}");
    cr_assert_str_eq(str(r, "plugin"), "echo");
    cr_assert_str_eq(str(r, "dispatch"), "coroutine");
    cr_assert_str_eq(str(r, "policy"), "coroutine");
    cr_assert_eq(json_integer_value(json_object_get(r, "timeout_ms")), 1500);
    cr_assert(strstr(str(r, "methods"), "GET") && strstr(str(r, "methods"), "POST") && !strstr(str(r, "methods"), "PUT"),
              "%s", str(r, "methods"));
    char src[500];
    snprintf(src, sizeof(src), "%s:4", conf);
    cr_assert_str_eq(str(r, "source"), src, "the route's file and line");
    json_t *st = json_array_get(json_object_get(doc, "static_routes"), 0);
    cr_assert(st != NULL && strcmp(str(st, "path"), "/files") == 0 && strcmp(str(st, "dir"), wt_tmpdir) == 0, "%s",
              resp.body);
    json_t *refused = json_array_get(json_object_get(doc, "refused_files"), 0);
    cr_assert(refused != NULL && strstr(str(refused, "file"), "broken.conf"), "%s", resp.body);
    json_t *plugin = json_array_get(json_object_get(doc, "plugins"), 0);
    cr_assert(plugin != NULL && strcmp(str(plugin, "name"), "echo") == 0, "%s", resp.body);
    cr_assert(json_is_array(json_object_get(doc, "quarantined")) && json_array_size(json_object_get(doc, "quarantined")) == 0);
    cr_assert(json_is_null(json_object_get(json_object_get(doc, "reloads"), "last")), "no reload yet");
    cr_assert_eq(ask("POST", "/status"), 405);
}

Test(health, reload_is_post_only_and_wakes_the_control_thread_once)
{
    start("");
    cr_assert_eq(ask("GET", "/reload"), 405);
    cr_assert_eq(weft_admin_take_reload_request(), 0, "a refused method asks for nothing");
    cr_assert_eq(atomic_load(&woken), 0);
    cr_assert_eq(ask("POST", "/reload"), 202, "%s", resp.body);
    cr_assert(strstr(str(doc, "reload"), "requested") != NULL, "%s", resp.body);
    cr_assert_eq(atomic_load(&woken), 1);
    cr_assert_eq(weft_admin_take_reload_request(), 1);
    cr_assert_eq(weft_admin_take_reload_request(), 0, "taken once");
}
