/*
 * Tests for server/plugin/route_init.c driven without a server: options
 * parsed by libconfig from text, a hand-made route and descriptors whose
 * init/load are this file's functions, called with the real host tables.
 * What generation.c's tests see through a whole build (one unread option,
 * one wrong type, a failing init) is not repeated; this covers the typed
 * readers one by one (which widenings are allowed, defaults), the file an
 * @include'd option is reported in, the two ABIs' tables, when fini must
 * still run (r->initialised) and plugins.NAME options for load().
 */
#include "plugin/route_init.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "plugin/host.h"
#include "request/request.h"
#include "unit.h"

static config_t lc;

static void setup(void)
{
    wt_unit_setup("route_init");
    config_init(&lc);
}

static void teardown(void)
{
    config_destroy(&lc);
    wt_unit_teardown();
}

TestSuite(route_init, .init = setup, .fini = teardown, .timeout = 30);

static weft_route_cfg rc = {.path = "/x", .plugin = "opts", .file = "/etc/weft/weft.conf", .line = 3};

/* Parses `text` (a config file's body) and points rc.options at its `options`. */
static void options(const char *text)
{
    cr_assert_eq(config_read_string(&lc, text), CONFIG_TRUE, "%s at line %d", config_error_text(&lc),
                 config_error_line(&lc));
    rc.options = config_lookup(&lc, "options");
}

static weft_init ctx_for(char *what, size_t size) { return weft_route_init_for_route(&rc, what, size, &wt_errs); }

/* host_init.c and host_abi1.c: both ABIs read options through these functions. */
Test(route_init, both_tables_hand_out_the_readers)
{
    const weft_host_init *g = weft_host_api2.init;
    cr_assert_eq(g, &weft_host_init_group);
    cr_assert(g->struct_size == sizeof(weft_host_init) && g->version == WEFT_HOST_INIT_VERSION);
    cr_assert(g->route == weft_route_init_init_route && g->plugin_state == weft_route_init_init_plugin_state &&
              g->error == weft_route_init_init_error);
    cr_assert(g->opt_string == weft_route_init_opt_string && g->opt_int == weft_route_init_opt_int &&
              g->opt_float == weft_route_init_opt_float && g->opt_bool == weft_route_init_opt_bool);
    const weft_host_v1 *v1 = &weft_host_api1;
    cr_assert(v1->init_route == weft_route_init_init_route && v1->init_plugin_state == weft_route_init_init_plugin_state &&
              v1->init_error == weft_route_init_init_error);
    cr_assert(v1->opt_string == weft_route_init_opt_string && v1->opt_int == weft_route_init_opt_int &&
              v1->opt_float == weft_route_init_opt_float && v1->opt_bool == weft_route_init_opt_bool);
}

/* ---- the typed readers ---- */

Test(route_init, each_reader_takes_its_type_and_the_widenings)
{
    options("options = {\n s = \"text\";\n i = 42;\n big = 5000000000L;\n f = 1.5;\n fi = 3;\n b = true;\n};\n");
    char what[300];
    weft_init ctx = ctx_for(what, sizeof(what));
    cr_assert_str_eq(weft_route_init_opt_string(&ctx, "s", "def"), "text");
    cr_assert_eq(weft_route_init_opt_int(&ctx, "i", -1), 42);
    cr_assert_eq(weft_route_init_opt_int(&ctx, "big", -1), 5000000000LL, "a 64-bit integer is an integer");
    /* (cr_assert_float_eq evaluates its argument twice: read first) */
    double f = weft_route_init_opt_float(&ctx, "f", -1), fi = weft_route_init_opt_float(&ctx, "fi", -1),
           big = weft_route_init_opt_float(&ctx, "big", -1);
    cr_assert_float_eq(f, 1.5, 1e-12);
    cr_assert_float_eq(fi, 3.0, 1e-12, "an integer is a number");
    cr_assert_float_eq(big, 5e9, 1e-3);
    cr_assert_eq(weft_route_init_opt_bool(&ctx, "b", 0), 1);
    cr_assert_eq(wt_errs.count, 0, "%s", wt_errs_text(&wt_errs));
    cr_assert_eq(ctx.failed, 0);
    weft_init_check_unused(&ctx);
    cr_assert_eq(wt_errs.count, 0, "every option was read:%s", wt_errs_text(&wt_errs));
}

Test(route_init, absent_options_give_the_default)
{
    options("options = { other = 1; };\n");
    char what[300];
    weft_init ctx = ctx_for(what, sizeof(what));
    cr_assert_str_eq(weft_route_init_opt_string(&ctx, "s", "def"), "def");
    cr_assert_null(weft_route_init_opt_string(&ctx, "s", NULL));
    cr_assert_eq(weft_route_init_opt_int(&ctx, "i", -7), -7);
    double f = weft_route_init_opt_float(&ctx, "f", 0.25);
    cr_assert_float_eq(f, 0.25, 1e-12);
    cr_assert_eq(weft_route_init_opt_bool(&ctx, "b", 1), 1);
    cr_assert_eq(ctx.failed, 0);

    rc.options = NULL; /* a route without an options group */
    weft_init bare = ctx_for(what, sizeof(what));
    cr_assert_eq(weft_route_init_opt_int(&bare, "i", 9), 9);
    weft_init_check_unused(&bare);
    cr_assert_eq(wt_errs.count, 0, "%s", wt_errs_text(&wt_errs));
}

/* No narrowing: each wrong type is refused with the option's own line, and the reader returns the default. */
Test(route_init, a_wrong_type_names_the_option_its_line_and_the_type)
{
    options("options = {\n"
            "  n = 5;\n"       /* line 2 */
            "  f = 2.5;\n"     /* line 3 */
            "  s = \"yes\";\n" /* line 4 */
            "  g = { a = 1; };\n"
            "};\n");
    char what[300];
    weft_init ctx = ctx_for(what, sizeof(what));
    cr_assert_eq(weft_route_init_opt_string(&ctx, "n", NULL), NULL);
    cr_assert_eq(weft_route_init_opt_int(&ctx, "f", 11), 11, "a float must not be cut to an integer");
    cr_assert_eq(weft_route_init_opt_bool(&ctx, "s", 0), 0);
    double g = weft_route_init_opt_float(&ctx, "g", 0.5);
    cr_assert_float_eq(g, 0.5, 1e-12);
    cr_assert_eq(ctx.failed, 1);
    cr_assert_eq(wt_errs.count, 4, "%s", wt_errs_text(&wt_errs));
    cr_assert_str_eq(wt_errs.msgs[0], "/etc/weft/weft.conf:2: route /x: option 'n' of plugin 'opts' must be a string");
    cr_assert_str_eq(wt_errs.msgs[1], "/etc/weft/weft.conf:3: route /x: option 'f' of plugin 'opts' must be an integer");
    cr_assert_str_eq(wt_errs.msgs[2],
                     "/etc/weft/weft.conf:4: route /x: option 's' of plugin 'opts' must be true or false");
    wt_expect_msg(&wt_errs, "weft.conf:5: ", "option 'g'", "must be a number");
}

/* An option in an @include'd file is reported in that file, not the route's. */
Test(route_init, an_included_option_is_reported_in_its_own_file)
{
    char inc[400], text[600];
    snprintf(inc, sizeof(inc), "%s/opts.inc", wt_tmpdir);
    FILE *f = fopen(inc, "w");
    cr_assert_not_null(f);
    fputs("colour = \"red\";\nsize = \"big\";\n", f);
    cr_assert_eq(fclose(f), 0);
    snprintf(text, sizeof(text), "options = {\n@include \"%s\"\n};\n", inc);
    options(text);
    char what[300];
    weft_init ctx = ctx_for(what, sizeof(what));
    cr_assert_eq(weft_route_init_opt_int(&ctx, "size", 1), 1);
    weft_init_check_unused(&ctx);
    char want[700];
    snprintf(want, sizeof(want), "%s:2: route /x: option 'size' of plugin 'opts' must be an integer", inc);
    wt_expect_msg(&wt_errs, want);
    snprintf(want, sizeof(want), "%s:1: route /x: 'colour' is not an option of plugin 'opts'", inc);
    wt_expect_msg(&wt_errs, want);
}

/* A plugin that reads many options (or one option many times) must not be
 * told that an option it did read is not one of its options. */
Test(route_init, reading_many_options_keeps_every_one_asked)
{
    options("options = { last = 1; };\n");
    char what[300];
    weft_init ctx = ctx_for(what, sizeof(what));
    for (int i = 0; i < 100; i++)
        weft_route_init_opt_int(&ctx, "first", 0); /* e.g. read per worker in a loop */
    static char names[70][16];
    for (int i = 0; i < 70; i++) { /* optional settings the route leaves out */
        snprintf(names[i], sizeof(names[i]), "opt%d", i);
        weft_route_init_opt_bool(&ctx, names[i], 0);
    }
    cr_assert_eq(weft_route_init_opt_int(&ctx, "last", 0), 1);
    weft_init_check_unused(&ctx);
    cr_assert_eq(wt_errs.count, 0, "an option that was read reported unused:%s", wt_errs_text(&wt_errs));
}

/* ---- init through the host tables ---- */

static int init_rc;
static const char *seen_route;
static void *seen_state;
static const weft_host *seen_host;

static weft_rc init2(const weft_host *host, weft_init *ctx, void **state)
{
    seen_host = host;
    seen_route = host->init->route(ctx);
    seen_state = host->init->plugin_state(ctx);
    host->init->opt_int(ctx, "n", 0);
    if (init_rc == 5)
        host->init->error(ctx, "no %s today", "luck");
    *state = &init_rc;
    return init_rc;
}

static int init1(const weft_host_v1 *host, weft_init *ctx, void **state)
{
    seen_host = (const weft_host *)host;
    seen_route = host->init_route(ctx);
    host->opt_int(ctx, "n", 0);
    *state = &init_rc;
    return WEFT_OK;
}

static weft_route route_of(const weft_plugin *desc)
{
    weft_route r;
    memset(&r, 0, sizeof(r));
    r.cfg = &rc;
    r.desc = desc;
    return r;
}

Test(route_init, run_calls_init_with_the_api2_table_and_the_plugins_state)
{
    options("options = { n = 1; };\n");
    weft_plugin desc = {WEFT_PLUGIN_HEADER, .name = "opts", .init = init2};
    weft_route r = route_of(&desc);
    int plugin_state;
    cr_assert_eq(weft_route_init_run(&r, &weft_host_table, &plugin_state, NULL, &wt_errs), 0, "%s",
                 wt_errs_text(&wt_errs));
    cr_assert_eq(seen_host, weft_host_table.abi2);
    cr_assert_eq(weft_req_default_host, weft_host_table.abi2, "requests would find no host table");
    cr_assert_str_eq(seen_route, "/x");
    cr_assert_eq(seen_state, &plugin_state);
    cr_assert_eq(r.state, &init_rc);
    cr_assert_eq(r.initialised, 1);
}

Test(route_init, run_gives_an_abi1_plugin_the_abi1_table)
{
    options("options = { n = 1; };\n");
    weft_plugin desc = {WEFT_PLUGIN_HEADER, .name = "opts",
                        .init = (weft_rc(*)(const weft_host *, weft_init *, void **))(void (*)(void))init1};
    desc.abi_version = 1; /* as a plugin built against abi/abi11/ declares */
    weft_route r = route_of(&desc);
    cr_assert_eq(weft_route_init_run(&r, &weft_host_table, NULL, NULL, &wt_errs), 0, "%s", wt_errs_text(&wt_errs));
    cr_assert_eq(seen_host, (const weft_host *)weft_host_table.abi1);
    cr_assert_str_eq(seen_route, "/x");
    cr_assert_eq(r.initialised, 1);
}

/* A failed init is one message; fini runs only when init itself succeeded. */
Test(route_init, what_a_failure_says_and_whether_fini_must_run)
{
    weft_plugin desc = {WEFT_PLUGIN_HEADER, .name = "opts", .init = init2};

    options("options = { n = 1; };\n");
    init_rc = 3; /* fails without saying why */
    weft_route r = route_of(&desc);
    cr_assert_eq(weft_route_init_run(&r, &weft_host_table, NULL, NULL, &wt_errs), -1);
    cr_assert_eq(wt_errs.count, 1, "%s", wt_errs_text(&wt_errs));
    cr_assert_str_eq(wt_errs.msgs[0], "/etc/weft/weft.conf:3: route /x: plugin 'opts' init failed: init returned 3");
    cr_assert_eq(r.initialised, 0);
    weft_errors_clear(&wt_errs);

    init_rc = 5; /* says why: only its own message */
    r = route_of(&desc);
    cr_assert_eq(weft_route_init_run(&r, &weft_host_table, NULL, NULL, &wt_errs), -1);
    cr_assert_eq(wt_errs.count, 1, "%s", wt_errs_text(&wt_errs));
    cr_assert_str_eq(wt_errs.msgs[0], "/etc/weft/weft.conf:3: route /x: plugin 'opts' init failed: no luck today");
    weft_errors_clear(&wt_errs);

    /* init succeeds but the route sets an option it never read: refused, yet fini must run */
    config_destroy(&lc);
    config_init(&lc);
    options("options = { n = 1; extra = 2; };\n");
    init_rc = WEFT_OK;
    r = route_of(&desc);
    cr_assert_eq(weft_route_init_run(&r, &weft_host_table, NULL, NULL, &wt_errs), -1);
    wt_expect_msg(&wt_errs, "weft.conf:1: route /x: 'extra' is not an option of plugin 'opts'");
    cr_assert_eq(r.initialised, 1, "the plugin's state would leak: fini would not run");

    /* a plugin without init: nothing to call, options are still checked */
    weft_errors_clear(&wt_errs);
    weft_plugin bare = {WEFT_PLUGIN_HEADER, .name = "opts"};
    r = route_of(&bare);
    cr_assert_eq(weft_route_init_run(&r, &weft_host_table, NULL, NULL, &wt_errs), -1);
    wt_expect_msg(&wt_errs, "'n' is not an option of plugin 'opts'");
}

/* ---- load() with plugins.NAME ---- */

static weft_rc load2(const weft_host *host, weft_init *ctx, void **state)
{
    seen_route = host->init->route(ctx);
    *state = (void *)host->init->opt_string(ctx, "dsn", "none");
    return WEFT_OK;
}

Test(route_init, load_reads_the_plugins_group_and_names_it)
{
    weft_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    config_init(&cfg.lc);
    cfg.path = "/etc/weft/weft.conf";
    cr_assert_eq(config_read_string(&cfg.lc, "plugins = {\n  opts = {\n    dsn = \"db\";\n    typo = 1;\n  };\n};\n"),
                 CONFIG_TRUE);
    weft_plugin desc = {WEFT_PLUGIN_HEADER, .name = "opts", .init = init2, .load = load2};
    void *state = NULL;
    unsigned char loaded = 0;
    seen_route = "unset";
    int rc_load = weft_route_init_load(&cfg, "opts", &desc, &weft_host_table, &state, &loaded, NULL, &wt_errs);
    cr_assert_eq(rc_load, -1);
    cr_assert_null(seen_route, "load() has no route");
    cr_assert_str_eq((const char *)state, "db");
    cr_assert_eq(loaded, 1, "unload must run: load() succeeded");
    cr_assert_eq(wt_errs.count, 1, "%s", wt_errs_text(&wt_errs));
    cr_assert_str_eq(wt_errs.msgs[0], "/etc/weft/weft.conf:4: plugins.opts: 'typo' is not an option of plugin 'opts'");

    /* a plugin without load() is not called (route_init checks no options for it) */
    weft_errors_clear(&wt_errs);
    weft_plugin noload = {WEFT_PLUGIN_HEADER, .name = "opts", .init = init2};
    loaded = 0;
    cr_assert_eq(weft_route_init_load(&cfg, "opts", &noload, &weft_host_table, &state, &loaded, NULL, &wt_errs), 0);
    cr_assert_eq(loaded, 0);
    cr_assert_eq(wt_errs.count, 0);
    config_destroy(&cfg.lc);
}
