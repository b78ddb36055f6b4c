/*
 * Integer settings over their whole range (config/intlit.c): Debian 12's
 * libconfig 1.5 reads a decimal without L with atoi(), so 2^32 was 0 and
 * 5 GiB 1 GiB with no error. A value means what its text says, written with
 * or without L, in the main file, an @include'd file, a route fragment and
 * plugin options; outside a setting's range it is an error with FILE:LINE.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/errors.h"
#include "config/config.h"
#include "harness.h"
#include "unit.h"

static char conf_path[320];

static void setup(void)
{
    wt_unit_setup("config_int");
    snprintf(conf_path, sizeof(conf_path), "%s/weft.conf", wt_tmpdir);
}

static void teardown(void) { wt_unit_teardown(); }

static weft_config *load(const char *text)
{
    wt_write_file_atomic(conf_path, text);
    return weft_config_load(conf_path, &wt_errs);
}

#define ROUTE_WITH(extra) "routes = ( { path = \"/u\"; plugin = \"echo\"; dispatch = \"reactive\"; " extra " } );\n"

TestSuite(config_int, .init = setup, .fini = teardown);

typedef struct big {
    char text[32];
    unsigned long long value;
} big;

ParameterizedTestParameters(config_int, large_values_with_and_without_l)
{
    static big cases[] = {
        {"4294967296", 1ULL << 32},         {"4294967296L", 1ULL << 32},     {"5368709120", 5ULL << 30},
        {"5368709120L", 5ULL << 30},        {"1099511627776", 1ULL << 40},   {"1099511627776L", 1ULL << 40},
        {"2147483648", 1ULL << 31},         {"4294967295", 0xffffffffULL},   {"0x100000000", 1ULL << 32},
        {"0x140000000L", 5ULL << 30},       {"+4294967296", 1ULL << 32},     {"8589934591", (8ULL << 30) - 1},
    };
    return cr_make_param_array(big, cases, sizeof(cases) / sizeof(cases[0]));
}

/* limits.max_body, a route's max_body and websocket.max_queued_total: up to 2^40. */
ParameterizedTest(big *b, config_int, large_values_with_and_without_l)
{
    char text[512];
    snprintf(text, sizeof(text),
             "limits = { max_body = %s; max_buffered_response_total = %s; };\n"
             "websocket = {\n  max_queued_total =\n    %s;\n};\n" ROUTE_WITH("max_body = %s;"),
             b->text, b->text, b->text, b->text);
    weft_config *cfg = load(text);
    cr_assert_not_null(cfg, "%s: %s", b->text, wt_errs_text(&wt_errs));
    cr_assert_eq(cfg->limits.max_body, b->value, "%s read as %zu", b->text, cfg->limits.max_body);
    cr_assert_eq(cfg->limits.max_buffered_response_total, b->value, "%s", b->text);
    cr_assert_eq(cfg->websocket.max_queued_total, b->value, "%s (the literal a line below its name)", b->text);
    cr_assert_eq(cfg->n_routes, 1);
    cr_assert_eq(cfg->routes[0].max_body, b->value, "%s read as %zu", b->text, cfg->routes[0].max_body);
    weft_config_free(cfg);
}

typedef struct bad {
    char text[200];
    char needles[3][96];
} bad;

ParameterizedTestParameters(config_int, out_of_range_is_an_error_with_file_line)
{
    static bad cases[] = {
        /* One past the documented maximum, 2^40. */
        {"limits = { max_body = 1099511627777; };\n", {"weft.conf:1: ", "limits.max_body", "got 1099511627777"}},
        {"limits = { max_body = 1099511627777L; };\n", {"weft.conf:1: ", "limits.max_body", "got 1099511627777"}},
        {"\n" ROUTE_WITH("max_body = 2199023255552;"), {"weft.conf:2: ", "routes[0].max_body", "got 2199023255552"}},
        /* Negative where it is not allowed; 1.5 read -4294967296 as 0, a valid max_body. */
        {"limits = { max_body = -1; };\n", {"weft.conf:1: ", "limits.max_body", "got -1"}},
        {"limits = { max_body = -4294967296; };\n", {"weft.conf:1: ", "limits.max_body", "got -4294967296"}},
        {"limits = { max_body = -4294967296L; };\n", {"weft.conf:1: ", "limits.max_body", "got -4294967296"}},
        /* 2^32 + 1 in a 32-bit setting: 1.5 read it as 1 thread. */
        {"threads = 4294967297;\n", {"weft.conf:1: ", "threads", "got 4294967297"}},
        {"threads = 4294967297L;\n", {"weft.conf:1: ", "threads", "got 4294967297"}},
        {"shutdown = { grace_s = -4294967290; };\n", {"weft.conf:1: ", "shutdown.grace_s", "got -4294967290"}},
        /* Past 64 bits: 1.5 read -1, L saturated silently. */
        {"limits = {\n max_body = 99999999999999999999L; };\n",
         {"weft.conf:2: ", "limits.max_body", "99999999999999999999L is out of range"}},
        {"threads = 0x10000000000000000L;\n", {"weft.conf:1: ", "threads", "is out of range"}},
        /* Octal to libconfig 1.7, decimal to 1.5. */
        {"threads = 010;\n", {"weft.conf:1: ", "threads", "a leading 0 is octal"}},
        /* libconfig 1.7 refuses the mix itself; 1.5 must too once 2^32 is 64-bit. */
        {"plugins = { p = { a = [1, 4294967296]; }; };\nroutes = ( { path = \"/p\"; plugin = \"p\"; dispatch = "
         "\"reactive\"; } );\n",
         {"weft.conf:1: ", "mismatched element type in array", ""}},
    };
    return cr_make_param_array(bad, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(bad *b, config_int, out_of_range_is_an_error_with_file_line)
{
    cr_assert_null(load(b->text), "accepted: %s", b->text);
    wt_expect_msg(&wt_errs, b->needles[0], b->needles[1], b->needles[2]);
}

Test(config_int, small_values_and_other_literals_are_untouched)
{
    weft_config *cfg = load("# threads = 4294967296; in a comment\n"
                            "/* 99999999999999999999 */ threads = 3; // 4294967296\n"
                            "pid_file = \"/run/4294967296/x1.pid\"; limits = { max_body = 0x1000; max_uri = 0400L; };\n"
                            "trace = { sample_ratio = 1e0; };\n"
                            "plugins = { p = { f = -1.5e3; neg = -2147483648; h2 = 7L; list = (1, 4294967296, \"9\"); "
                            "wide = [4294967296, 8589934592]; }; };\n"
                            "routes = ( { path = \"/p\"; plugin = \"p\"; dispatch = \"reactive\"; } );\n");
    cr_assert_not_null(cfg, "%s", wt_errs_text(&wt_errs));
    cr_assert_eq(cfg->threads, 3);
    cr_assert_eq(cfg->limits.max_body, 4096);
    cr_assert_eq(cfg->limits.max_uri, 400, "with L a leading 0 is decimal to every libconfig");
    const config_setting_t *p = weft_config_plugin_options(cfg, "p");
    cr_assert_not_null(p);
    cr_assert_eq(config_setting_get_int64(config_setting_get_member(p, "neg")), -2147483648LL);
    cr_assert_eq(config_setting_get_int64(config_setting_get_member(p, "h2")), 7);
    cr_assert_float_eq(config_setting_get_float(config_setting_get_member(p, "f")), -1500.0, 1e-9);
    const config_setting_t *list = config_setting_get_member(p, "list");
    cr_assert_eq(config_setting_get_int64(config_setting_get_elem(list, 0)), 1);
    cr_assert_eq(config_setting_get_int64(config_setting_get_elem(list, 1)), 1LL << 32, "a plugin reads 2^32 too");
    const config_setting_t *wide = config_setting_get_member(p, "wide");
    cr_assert_eq(config_setting_get_int64(config_setting_get_elem(wide, 1)), 1LL << 33);
    weft_config_free(cfg);
}

Test(config_int, included_files_and_route_fragments_are_read_as_written)
{
    char inc[400], dir[400], frag[500];
    snprintf(inc, sizeof(inc), "%s/limits.conf", wt_tmpdir);
    wt_write_file_atomic(inc, "# the limits\nlimits = {\n  max_body = 5368709120;\n};\n");
    snprintf(dir, sizeof(dir), "%s/routes.d", wt_tmpdir);
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(frag, sizeof(frag), "%s/a.conf", dir);
    wt_write_file_atomic(frag, "routes = ( { path = \"/f\"; plugin = \"echo\"; dispatch = \"reactive\";\n"
                     "  max_body = 4294967296; } );\n");
    weft_config *cfg = load("threads = 1;\n@include \"limits.conf\"\n" ROUTE_WITH("max_body = 1099511627776;"));
    cr_assert_not_null(cfg, "%s", wt_errs_text(&wt_errs));
    cr_assert_eq(cfg->limits.max_body, 5ULL << 30, "from the @include'd file: %zu", cfg->limits.max_body);
    cr_assert_eq(cfg->n_routes, 2);
    cr_assert_eq(cfg->routes[0].max_body, 1ULL << 40);
    cr_assert_eq(cfg->routes[1].max_body, 1ULL << 32, "from the route fragment: %zu", cfg->routes[1].max_body);
    weft_config_free(cfg);

    wt_write_file_atomic(inc, "limits = {\n  max_body = 1099511627777;\n};\n");
    cr_assert_null(load("threads = 1;\n@include \"limits.conf\"\n"));
    wt_expect_msg(&wt_errs, "limits.conf:2: ", "limits.max_body", "got 1099511627777");
    weft_errors_clear(&wt_errs);
    wt_write_file_atomic(inc, "limits = { max_body = 1024; };\n");
    wt_write_file_atomic(frag, "routes = ( { path = \"/f\"; plugin = \"echo\"; dispatch = \"reactive\";\n"
                     "  max_body = -4294967296; } );\n");
    cr_assert_null(load("threads = 1;\n@include \"limits.conf\"\n"));
    wt_expect_msg(&wt_errs, "a.conf:2: ", "max_body", "got -4294967296");
}
