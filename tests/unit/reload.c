/*
 * Tests for server/reload/reload.c on real loops (support/unitloop.h): a
 * reload builds a whole new generation and swaps it in on every loop; the old
 * one goes to the reaper once, after its last holder let go; anything wrong
 * (syntax, a setting that needs a restart, a plugin) refuses the reload with
 * the file:line, and nothing changes.
 */
#include "reload/reload.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/module.h"
#include "unit.h"
#include "unitloop.h"

static char conf_path[320];
static weft_generation *first;

/* The reaper records; the test destroys what it got at teardown. */
static pthread_mutex_t reaped_mu = PTHREAD_MUTEX_INITIALIZER;
static weft_generation *reaped[8];
static int n_reaped;

static void record_reaper(weft_generation *g)
{
    pthread_mutex_lock(&reaped_mu);
    if (n_reaped < 8)
        reaped[n_reaped++] = g;
    pthread_mutex_unlock(&reaped_mu);
}

static int reaped_count(void)
{
    pthread_mutex_lock(&reaped_mu);
    int n = n_reaped;
    pthread_mutex_unlock(&reaped_mu);
    return n;
}

/* Each loop serves `first` from its start, as the process does. */
static int gen_setup(weft_loop *L)
{
    weft_generation_retain(first);
    weft_generation_set_loop(L, first);
    return 0;
}

static void gen_teardown(weft_loop *L)
{
    weft_generation_release(weft_generation_of_loop(L));
    weft_generation_set_loop(L, NULL);
}

static const weft_loop_hook gen_hook = {.setup = gen_setup, .teardown = gen_teardown};

static void write_conf(int threads, const char *routes)
{
    char text[2048];
    snprintf(text, sizeof(text),
             "threads = %d;\n"                        /* 1 */
             "listen = [\"127.0.0.1:0\"];\n"          /* 2 */
             "plugin_dirs = [\"" WEFT_FIXTURE_DIR "\"];\n" /* 3 */
             "routes = (\n"                           /* 4 */
             "%s"                                     /* 5... */
             ");\n",
             threads, routes);
    FILE *f = fopen(conf_path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

#define ECHO_ROUTE(prefix) \
    "  { path = \"/e\"; plugin = \"echo\"; dispatch = \"reactive\"; options = { prefix = \"" prefix "\"; }; }\n"

static void setup(void)
{
    unsetenv("WEFT_PLUGIN_PATH"); /* the developer's environment must not shadow the fixtures */
    wt_unit_setup("reload");
    snprintf(conf_path, sizeof(conf_path), "%s/weft.conf", wt_tmpdir);
    write_conf(2, ECHO_ROUTE("a"));
    weft_config *cfg = weft_config_load(conf_path, &wt_errs);
    cr_assert_not_null(cfg, "%s", wt_errs_text(&wt_errs));
    first = weft_generation_build(cfg, 1, 0, &wt_errs);
    cr_assert_not_null(first, "%s", wt_errs_text(&wt_errs));
    weft_generation_set_reaper(record_reaper);
    weft_reload_init(first);
    wt_loops_hook(&gen_hook);
    wt_loops_start(2);
}

/* Stops the loops and drops the serving generation; every generation built
 * (the first and one per successful reload) must then have been reaped. In
 * the test's body: Criterion ignores assertions in .fini. */
static void finish(void)
{
    wt_loops_stop();
    weft_reload_shutdown();
    weft_reload_status st;
    weft_reload_status_get(&st);
    cr_assert_eq(reaped_count(), (int)st.ok + 1, "%d generation(s) reaped, %lu built", reaped_count(), st.ok + 1);
}

static void teardown(void)
{
    wt_loops_stop();
    if (weft_reload_serving() != NULL)
        weft_reload_shutdown();
    for (int i = 0; i < n_reaped; i++)
        weft_generation_destroy(reaped[i]);
    weft_generation_set_reaper(NULL);
    weft_module_cleanup();
    wt_unit_teardown();
}

TestSuite(reload, .init = setup, .fini = teardown, .timeout = 60);

static unsigned long loop_gen;

static void read_loop_gen(void *arg)
{
    (void)arg;
    loop_gen = weft_generation_of_loop(weft_loop_current)->id;
}

/* The generation every loop serves (each loop's messages run in order, so
 * this sees every swap posted before it). */
static void expect_loops_serve(unsigned long id)
{
    for (int i = 0; i < 2; i++) {
        wt_on_loop(i, read_loop_gen, NULL);
        cr_assert_eq(loop_gen, id, "loop %d serves generation %lu, not %lu", i, loop_gen, id);
    }
    cr_assert_eq(weft_reload_serving()->id, id);
}

static void expect_refused(const char *const *needles)
{
    weft_reload_status st;
    weft_reload_status_get(&st);
    cr_assert_eq(st.generation, 1);
    cr_assert_eq(st.ok, 0);
    cr_assert_eq(st.failed, 1);
    cr_assert_eq(st.last_ok, 0);
    for (const char *const *n = needles; *n != NULL; n++)
        cr_assert(strstr(st.message, *n) != NULL, "want '%s' in: %s", *n, st.message);
    expect_loops_serve(1);
    cr_assert_eq(reaped_count(), 0, "a refused reload destroys nothing");
}

Test(reload, config_reload_swaps_every_loop_and_reaps_the_old_generation_once)
{
    write_conf(2, ECHO_ROUTE("b"));
    cr_assert_eq(weft_reload(WEFT_RELOAD_CONFIG, "test"), 0);
    weft_reload_status st;
    weft_reload_status_get(&st);
    cr_assert(st.generation == 2 && st.ok == 1 && st.failed == 0 && st.last_ok == 1 && st.at != 0);
    cr_assert_str_eq(st.message, "generation 2 serving (test)");
    expect_loops_serve(2);
    cr_assert_eq(reaped_count(), 1, "the old generation is reaped once both loops let go");
    cr_assert_eq(reaped[0], first);
    cr_assert(strstr(weft_reload_serving()->cfg->text, "prefix = \"b\"") != NULL, "the new file was read");
    finish();
}

Test(reload, a_request_in_flight_keeps_the_old_generation_until_it_ends)
{
    weft_generation_retain(first); /* what a request started before the reload holds */
    write_conf(2, ECHO_ROUTE("b"));
    cr_assert_eq(weft_reload(WEFT_RELOAD_CONFIG, "test"), 0);
    expect_loops_serve(2);
    cr_assert_eq(reaped_count(), 0, "still in use");
    weft_generation_release(first); /* the request ends */
    cr_assert_eq(reaped_count(), 1);
    cr_assert_eq(reaped[0], first);
    finish();
}

Test(reload, syntax_error_is_refused_with_file_and_line)
{
    FILE *f = fopen(conf_path, "w");
    cr_assert_not_null(f);
    fputs("threads = 2;\nlisten = [\"127.0.0.1:0\"];\nroutes = ( { path \"/x\"; plugin = \"echo\"; } );\n", f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(weft_reload(WEFT_RELOAD_CONFIG, "test"), -1);
    char where[400];
    snprintf(where, sizeof(where), "%s:3", conf_path);
    expect_refused((const char *const[]){where, NULL});
    finish();
}

Test(reload, restart_only_settings_are_refused)
{
    write_conf(3, ECHO_ROUTE("a"));
    cr_assert_eq(weft_reload(WEFT_RELOAD_CONFIG, "test"), -1);
    expect_refused((const char *const[]){"only change with a restart", "threads 2 -> 3", NULL});
    finish();
}

Test(reload, a_plugin_that_cannot_load_is_refused_naming_its_route_line)
{
    write_conf(2, ECHO_ROUTE("a") "  , { path = \"/n\"; plugin = \"nosuch\"; dispatch = \"reactive\"; }\n");
    cr_assert_eq(weft_reload(WEFT_RELOAD_CONFIG, "test"), -1);
    expect_refused((const char *const[]){"weft.conf:6: route /n", "could not be loaded", NULL});
    /* a refusal uses up no generation number */
    write_conf(2, ECHO_ROUTE("c"));
    cr_assert_eq(weft_reload(WEFT_RELOAD_CONFIG, "test"), 0);
    expect_loops_serve(2);
    finish();
}

Test(reload, plugin_reload_rebuilds_from_the_serving_text_not_the_file)
{
    FILE *f = fopen(conf_path, "w"); /* a half-edited file on disk */
    cr_assert_not_null(f);
    fputs("threads = \n", f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(weft_reload(WEFT_RELOAD_PLUGINS, "plugin changed"), 0);
    expect_loops_serve(2);
    cr_assert(strstr(weft_reload_serving()->cfg->text, "prefix = \"a\"") != NULL, "built from the text serving");
    cr_assert_eq(reaped_count(), 1);
    finish();
}
