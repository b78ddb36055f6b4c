/*
 * Tests for server/reload/generation.c: building a generation (each route's
 * plugin, entry points, init and options, with errors naming the config's
 * file:line) and its lifetime (references, the reaper, unloading). Fixture
 * plugins come from tests/plugins/, built into WEFT_FIXTURE_DIR. Builds are
 * check-only (no worker threads, no metrics), as for `weft -t`.
 */
#include "reload/generation.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "config/config.h"
#include "plugin/module.h"
#include "request/request.h"
#include "unit.h"

static void gen_setup(void)
{
    /* The developer's environment must not shadow the fixtures. */
    unsetenv("WEFT_PLUGIN_PATH");
    wt_unit_setup("generation");
}

static void gen_teardown(void)
{
    weft_generation_set_reaper(NULL);
    weft_module_cleanup(); /* the loader's private directory for plugin copies */
    wt_unit_teardown();
}

TestSuite(generation, .init = gen_setup, .fini = gen_teardown);

#define expect_msg wt_expect_msg
#define expect_no_msg wt_expect_no_msg

/* ---- build: entry points, init and options, errors naming file:line ---- */

static char conf_path[400];

static weft_config *load_conf(const char *routes)
{
    snprintf(conf_path, sizeof(conf_path), "%s/weft.conf", wt_tmpdir);
    FILE *f = fopen(conf_path, "w");
    cr_assert_not_null(f);
    fprintf(f, "plugin_dirs = [ \"%s\" ];\n" /* 1 */
               "routes = (\n"                 /* 2 */
               "%s"                           /* 3... */
               ");\n",
            WEFT_FIXTURE_DIR, routes);
    cr_assert_eq(fclose(f), 0);
    weft_config *cfg = weft_config_load(conf_path, &wt_errs);
    cr_assert_not_null(cfg, "config refused:%s", wt_errs_text(&wt_errs));
    return cfg;
}

/* Builds (check only: no worker threads) and expects failure. */
static void build_fails(weft_config *cfg, weft_errors *e)
{
    weft_generation *g = weft_generation_build(cfg, 1, 1, e);
    cr_assert_null(g, "generation built despite errors");
    cr_assert_geq(e->count, 1);
    weft_config_free(cfg); /* still ours after a failure */
}

Test(generation, init_failure_reported_with_config_line)
{
    weft_config *cfg = load_conf("  { path = \"/ok\"; plugin = \"echo\"; dispatch = \"reactive\"; },\n" /* 3 */
                                 "  { path = \"/db\"; plugin = \"init_fails\";\n"                    /* 4 */
                                 "    dispatch = \"pool\"; }\n");                                    /* 5 */
    build_fails(cfg, &wt_errs);
    cr_assert_eq(wt_errs.count, 1, "%s", wt_errs_text(&wt_errs));
    expect_msg(&wt_errs, "weft.conf:4: ", "/db", "init_fails", "database password missing");
    weft_errors_clear(&wt_errs);
}

Test(generation, unread_option_reported)
{
    weft_config *cfg = load_conf("  { path = \"/e/{id}\"; plugin = \"echo\"; dispatch = \"coroutine\";\n" /* 3 */
                                 "    options = {\n"                                                     /* 4 */
                                 "      prefix = \">\";\n"                                               /* 5 */
                                 "      colour = \"red\";\n"                                             /* 6 */
                                 "    }; }\n");                                                          /* 7 */
    build_fails(cfg, &wt_errs);
    cr_assert_eq(wt_errs.count, 1, "%s", wt_errs_text(&wt_errs));
    expect_msg(&wt_errs, "weft.conf:6: ", "/e/{id}", "'colour' is not an option of plugin 'echo'");
    expect_no_msg(&wt_errs, "'prefix'");
    weft_errors_clear(&wt_errs);
}

Test(generation, wrong_option_type_reported)
{
    weft_config *cfg = load_conf("  { path = \"/e\"; plugin = \"echo\"; dispatch = \"reactive\";\n" /* 3 */
                                 "    options = { param = \"name\";\n"                         /* 4 */
                                 "                prefix = 5; }; }\n");                        /* 5 */
    build_fails(cfg, &wt_errs);
    cr_assert_eq(wt_errs.count, 1, "%s", wt_errs_text(&wt_errs));
    expect_msg(&wt_errs, "weft.conf:5: ", "/e", "option 'prefix' of plugin 'echo' must be a string");
    weft_errors_clear(&wt_errs);
}

Test(generation, reactive_route_needs_handle_async)
{
    /* init_fails has only handle(): refused before its init could run. */
    weft_config *cfg = load_conf("  { path = \"/r\"; plugin = \"init_fails\"; dispatch = \"reactive\"; }\n"); /* 3 */
    build_fails(cfg, &wt_errs);
    cr_assert_eq(wt_errs.count, 1, "%s", wt_errs_text(&wt_errs));
    expect_msg(&wt_errs, "weft.conf:3: ", "/r", "plugin 'init_fails' has no handle_async", "reactive");
    expect_no_msg(&wt_errs, "database password missing");
    weft_errors_clear(&wt_errs);
}

Test(generation, refused_plugins_named_with_their_routes)
{
    weft_config *cfg = load_conf("  { path = \"/a\"; plugin = \"wrong_abi\"; dispatch = \"pool\"; },\n"   /* 3 */
                                 "  { path = \"/b\"; plugin = \"dup_name\"; dispatch = \"pool\"; },\n"    /* 4 */
                                 "  { path = \"/c\"; plugin = \"nosuch\"; dispatch = \"pool\"; },\n"      /* 5 */
                                 "  { path = \"/d\"; plugin = \"no_descriptor\"; dispatch = \"pool\"; }\n"); /* 6 */
    build_fails(cfg, &wt_errs);
    expect_msg(&wt_errs, "wrong_abi", "ABI");
    expect_msg(&wt_errs, "weft.conf:3: ", "route /a", "could not be loaded");
    expect_msg(&wt_errs, "weft.conf:4: ", "route /b", "could not be loaded");
    expect_msg(&wt_errs, "weft.conf:5: ", "route /c", "could not be loaded");
    expect_msg(&wt_errs, "weft.conf:6: ", "route /d", "could not be loaded");
    cr_assert_eq(wt_errs.count, 8, "one reason and one route line per plugin:%s", wt_errs_text(&wt_errs));
    weft_errors_clear(&wt_errs);
}

Test(generation, duplicate_route_names_the_first_line)
{
    weft_config *cfg = load_conf("  { path = \"/x\"; plugin = \"echo\"; dispatch = \"reactive\"; },\n"  /* 3 */
                                 "  { path = \"/x\"; methods = [\"GET\"];\n"                          /* 4 */
                                 "    plugin = \"echo\"; dispatch = \"reactive\"; }\n");              /* 5 */
    build_fails(cfg, &wt_errs);
    cr_assert_eq(wt_errs.count, 1, "%s", wt_errs_text(&wt_errs));
    expect_msg(&wt_errs, "weft.conf:4: ", "already routed", "by the route at ", "weft.conf:3");
    weft_errors_clear(&wt_errs);
}

Test(generation, duplicate_of_a_failed_route_names_the_first_line)
{
    /* The first route's plugin cannot be loaded; the duplicate must still
     * point at line 3, not at itself. */
    weft_config *cfg = load_conf("  { path = \"/x\"; plugin = \"nosuch\"; dispatch = \"reactive\"; },\n" /* 3 */
                                 "  { path = \"/x\"; plugin = \"echo\"; dispatch = \"reactive\"; }\n");   /* 4 */
    build_fails(cfg, &wt_errs);
    expect_msg(&wt_errs, "weft.conf:4: ", "already routed", "by the route at ", "weft.conf:3");
    weft_errors_clear(&wt_errs);
}

Test(generation, good_generation_builds_and_releases)
{
    weft_config *cfg = load_conf("  { path = \"/e/{name}\"; plugin = \"echo\"; dispatch = \"reactive\";\n" /* 3 */
                                 "    options = { param = \"name\"; prefix = \"> \"; }; },\n"             /* 4 */
                                 "  { path = \"/f\"; methods = [\"POST\"]; plugin = \"echo\"; dispatch = \"coroutine\"; }\n");
    weft_generation *g = weft_generation_build(cfg, 7, 1, &wt_errs);
    cr_assert_not_null(g, "%s", wt_errs_text(&wt_errs));
    cr_assert_eq(wt_errs.count, 0);
    cr_assert_eq(g->id, 7);
    cr_assert_eq(g->n_routes, 2);
    cr_assert_eq(g->n_modules, 1, "one module shared by both routes");
    cr_assert_eq(weft_route_module(&g->routes[0]), weft_route_module(&g->routes[1]));
    cr_assert(g->routes[0].initialised);
    cr_assert_not_null(g->routes[0].state);
    cr_assert_not_null(strstr(g->routes[0].label, "echo"));
    weft_match m;
    weft_router_match(g->router, "/e/abc", 6, WEFT_M_GET, &m);
    cr_assert_eq(m.status, 200);
    cr_assert_eq(m.route, &g->routes[0]);
    weft_router_match(g->router, "/f", 2, WEFT_M_GET, &m);
    cr_assert_eq(m.status, 405);
    weft_generation_release(g); /* runs fini, unloads, frees cfg */
}

/* The echo fixture answers through the host table exactly as documented. */
static void run_echo(int (*handler)(weft_req *, void *), void *state, const char *query, const char *want_body,
                     int want_status)
{
    weft_req *r = weft_req_new();
    cr_assert_not_null(r);
    weft_kv headers[] = {{"X-Test", "T1"}};
    r->method = "POST";
    r->path = "/e/abc";
    r->query = query;
    r->headers = headers;
    r->n_headers = query != NULL ? 1 : 0;
    r->params[0] = (weft_kv){"name", "abc"};
    r->n_params = 1;
    r->body = "pay\nload";
    r->body_len = 8;
    cr_assert_eq(handler(r, state), WEFT_OK);
    cr_assert_eq(r->status, want_status);
    cr_assert_eq(r->n_res_headers, 1);
    cr_assert_str_eq(r->res_headers[0].name, "content-type");
    cr_assert_str_eq(r->res_headers[0].value, "text/plain");
    cr_assert_eq(r->res_len, strlen(want_body), "body:\n%.*s", (int)r->res_len, r->res_body);
    cr_assert_eq(memcmp(r->res_body, want_body, r->res_len), 0, "body:\n%.*s", (int)r->res_len, r->res_body);
    weft_req_free(r);
}

Test(generation, echo_fixture_answers)
{
    weft_config *cfg = load_conf("  { path = \"/e/{name}\"; plugin = \"echo\"; dispatch = \"reactive\";\n"
                                 "    options = { param = \"name\"; prefix = \"> \"; }; },\n"
                                 "  { path = \"/d/{id}\"; plugin = \"echo\"; dispatch = \"pool\"; }\n");
    weft_generation *g = weft_generation_build(cfg, 1, 1, &wt_errs);
    cr_assert_not_null(g, "%s", wt_errs_text(&wt_errs));
    const weft_route *custom = &g->routes[0], *plain = &g->routes[1];
    const weft_plugin *d = &weft_route_module(custom)->desc;
    run_echo(d->handle, custom->state, "q=hi+there&status=201",
             "> method=POST\n"
             "> path=/e/abc\n"
             "> param.name=abc\n"
             "> query.q=hi there\n"
             "> header.x-test=T1\n"
             "> body=pay\nload\n",
             201);
    run_echo(d->handle_async, custom->state, "q=x", /* same answer from the reactive entry point */
             "> method=POST\n> path=/e/abc\n> param.name=abc\n> query.q=x\n> header.x-test=T1\n> body=pay\nload\n",
             200);
    /* Defaults: param "id" (absent here), no prefix, no query, no header. */
    run_echo(d->handle, plain->state, NULL,
             "method=POST\npath=/e/abc\nparam.id=(none)\nquery.q=(none)\nheader.x-test=(none)\nbody=pay\nload\n", 200);
    weft_generation_release(g);
}

/* ---- lifetime: references, the reaper, unloading ---- */

/* Mappings of the echo plugin's private copy in this process: the loader
 * dlopens a copy (see module.c), and dlclose unmaps it. */
static int echo_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    cr_assert_not_null(f);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, "/weft-plugins-") != NULL && strstr(line, "echo") != NULL;
    fclose(f);
    return n;
}

static weft_generation *build_echo(unsigned long id)
{
    weft_config *cfg = load_conf("  { path = \"/e\"; plugin = \"echo\"; dispatch = \"reactive\"; }\n");
    weft_generation *g = weft_generation_build(cfg, id, 1, &wt_errs);
    cr_assert_not_null(g, "%s", wt_errs_text(&wt_errs));
    return g;
}

static weft_generation *reaped[4];
static int n_reaped;

static void record_reaper(weft_generation *g)
{
    cr_assert_lt(n_reaped, 4);
    reaped[n_reaped++] = g;
}

Test(generation, last_release_without_a_reaper_unloads)
{
    weft_generation *g = build_echo(1);
    cr_assert_gt(echo_mapped(), 0, "the echo copy is mapped while the generation lives");
    weft_generation_retain(g); /* a request in flight */
    weft_generation_release(g);
    cr_assert_gt(echo_mapped(), 0, "one reference is left: nothing is unloaded");
    weft_generation_release(g);
    cr_assert_eq(echo_mapped(), 0, "the last release ran fini and unloaded the plugin");
}

Test(generation, the_reaper_gets_the_last_release_and_only_it)
{
    weft_generation_set_reaper(record_reaper);
    weft_generation *g = build_echo(2);
    weft_generation_retain(g);
    weft_generation_retain(g);
    cr_assert_eq(atomic_load(&g->refs), 3);
    weft_generation_release(g);
    weft_generation_release(g);
    cr_assert_eq(n_reaped, 0, "released while references remain");
    weft_generation_release(g);
    cr_assert_eq(n_reaped, 1, "the last release hands the generation to the reaper");
    cr_assert_eq(reaped[0], g);
    cr_assert_gt(echo_mapped(), 0, "the reaper, not the releasing thread, destroys it");
    weft_generation_release(NULL); /* a request without a generation: nothing happens */
    cr_assert_eq(n_reaped, 1);
    weft_generation_destroy(g);
    cr_assert_eq(echo_mapped(), 0);
}

enum { CHURN_THREADS = 4, CHURN_ROUNDS = 20000 };

static void *churn(void *arg)
{
    weft_generation *g = arg;
    for (int i = 0; i < CHURN_ROUNDS; i++) {
        weft_generation_retain(g);
        weft_generation_release(g);
    }
    return NULL;
}

/* Requests on several loop threads retain and release one generation at once:
 * the count stays exact and the reaper runs once, after the owner's release. */
Test(generation, references_from_many_threads_reap_exactly_once)
{
    weft_generation_set_reaper(record_reaper);
    weft_generation *g = build_echo(3);
    pthread_t t[CHURN_THREADS];
    for (int i = 0; i < CHURN_THREADS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, churn, g), 0);
    for (int i = 0; i < CHURN_THREADS; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(n_reaped, 0, "the owner's reference kept it alive");
    cr_assert_eq(atomic_load(&g->refs), 1);
    weft_generation_release(g);
    cr_assert_eq(n_reaped, 1);
    weft_generation_destroy(g);
}

/* A loop's requests count on the loop's thread while it serves the
 * generation; when the loop moves on, what is still held becomes shared, and
 * a request that outlives the loop's own reference is the one that reaps. */
Test(generation, loop_local_references_become_shared_when_the_loop_moves_on)
{
    weft_generation_set_reaper(record_reaper);
    weft_generation *g = build_echo(5); /* its one reference: the loop's */
    weft_gen_ref a = weft_generation_retain_on_loop(g), b = weft_generation_retain_on_loop(g);
    cr_assert_eq(atomic_load(&g->refs), 1, "counted on the loop, not on the shared counter");
    weft_generation_release_on_loop(a);
    weft_generation_flush_on_loop(); /* the loop serves another generation now */
    cr_assert_eq(atomic_load(&g->refs), 2, "the request still in flight holds a shared reference");
    weft_generation_release(g); /* the loop's own */
    cr_assert_eq(n_reaped, 0, "the request in flight keeps it");
    weft_gen_ref c = weft_generation_retain_on_loop(g); /* a new local count, a new epoch */
    weft_generation_release_on_loop(c);
    cr_assert_eq(atomic_load(&g->refs), 1);
    weft_generation_release_on_loop(b); /* taken before the move: released on the shared counter */
    cr_assert_eq(n_reaped, 1, "the last request reaps it");
    weft_generation_flush_on_loop();
    weft_generation_destroy(g);
}

/* A failed build hands the config back and leaves no plugin loaded. */
Test(generation, failed_build_unloads_what_it_loaded)
{
    weft_config *cfg = load_conf("  { path = \"/ok\"; plugin = \"echo\"; dispatch = \"reactive\"; },\n"
                                 "  { path = \"/bad\"; plugin = \"nosuch\"; dispatch = \"reactive\"; }\n");
    cr_assert_null(weft_generation_build(cfg, 4, 1, &wt_errs));
    cr_assert_eq(echo_mapped(), 0, "echo was unloaded with the failed generation");
    cr_assert_eq(cfg->n_routes, 2, "the config is still the caller's, intact");
    weft_config_free(cfg);
}
