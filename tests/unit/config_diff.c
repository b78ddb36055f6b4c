/*
 * Tests for server/config/config_diff.c: which changes a reload must refuse
 * because the running server took them at start-up (a silent no-op would
 * make an operator believe a limit changed when it did not).
 */
#include "config/config_diff.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "base/errors.h"
#include "config/config.h"
#include "unit.h"

static void setup(void) { wt_unit_setup("config_diff"); }

static weft_config *load(const char *name, const char *extra)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/%s.conf", wt_tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "threads = 2;\nlisten = [\"127.0.0.1:0\"];\n%s\n"
               "routes = ( { path = \"/a\"; plugin = \"hello\"; dispatch = \"reactive\"; } );\n",
            extra);
    cr_assert_eq(fclose(f), 0);
    weft_config *cfg = weft_config_load(path, &wt_errs);
    cr_assert_not_null(cfg, "%s", wt_errs_text(&wt_errs));
    return cfg;
}

/* Arrays, not pointers: Criterion copies the parameters into a test process
 * that may map the binary elsewhere. */
typedef struct {
    char changed[64]; /* settings text of the new config */
    char named[32];   /* what the refusal must name; "": not refused */
} change;

ParameterizedTestParameters(config_diff, reload_refusals)
{
    static change cases[] = {
        {"limits = { max_connections = 500; };", "limits.max_connections"},
        {"limits = { request_timeout_ms = 2000; };", "limits.request_timeout_ms"},
        {"limits = { idle_timeout_ms = 2000; };", "limits.idle_timeout_ms"},
        {"limits = { max_body = 1024; };", "limits.max_body"},
        {"coroutine = { stack_size = 131072; };", "coroutine.stack_size"},
        {"log = { request_id_header = \"never\"; };", "log.request_id_header"},
        /* these are read per generation: a reload applies them */
        {"limits = { max_connections_per_ip = 4; };", ""},
        {"limits = { timeout_ms = 250; };", ""},
        {"limits = { max_resets = 10; };", ""},
        {"", ""},
    };
    return cr_make_param_array(change, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(change *c, config_diff, reload_refusals, .init = setup, .fini = wt_unit_teardown)
{
    weft_config *old = load("old", "");
    weft_config *cur = load("new", c->changed);
    char msg[1024] = "";
    int refused = weft_config_restart_only(old, cur, msg, sizeof(msg));
    if (c->named[0] != '\0') {
        cr_expect_eq(refused, 1, "changing %s must be refused", c->named);
        cr_expect(strstr(msg, c->named) != NULL, "the refusal names %s: %s", c->named, msg);
        cr_expect(strstr(msg, "new.conf") != NULL, "the refusal names the file: %s", msg);
    } else {
        cr_expect_eq(refused, 0, "'%s' applies on reload, refused with: %s", c->changed, msg);
    }
    weft_config_free(old);
    weft_config_free(cur);
}

/* 5 and 5L, 2^32 and 2^32L are one number: a plugin is not re-initialised
 * because its options were written with or without L. */
Test(config_diff, integers_equal_with_or_without_l, .init = setup, .fini = wt_unit_teardown)
{
    config_t a, b;
    config_init(&a);
    config_init(&b);
    cr_assert(config_read_string(&a, "o = { n = 5; big = 4294967296L; list = (1, 2); };"));
    cr_assert(config_read_string(&b, "o = { n = 5L; big = 4294967296L; list = (1L, 2); };"));
    cr_assert(weft_setting_equal(config_lookup(&a, "o"), config_lookup(&b, "o")));
    cr_assert(config_read_string(&b, "o = { n = 6L; big = 4294967296L; list = (1L, 2); };"));
    cr_assert_not(weft_setting_equal(config_lookup(&a, "o"), config_lookup(&b, "o")));
    config_destroy(&a);
    config_destroy(&b);
}
