/* `weft -t`: validates completely, exits 0 or 1 with file, line and reason. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int check(wt_server *s, const char *conf, char **out)
{
    wt_write_conf(s, conf);
    const char *args[] = {"-t", "-c", s->conf, NULL};
    return wt_run(out, args, NULL);
}

Test(check, valid_config_exits_0)
{
    wt_server s = {0};
    char *out;
    int rc = check(&s,
                   WT_LISTEN "\n"
                   WT_HELLO_ROUTES "\n",
                   &out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "is valid (1 routes, 1 plugins)") != NULL, "%s", out);
    free(out);
}

Test(check, static_routes_are_counted)
{
    wt_server s = {0};
    char *out;
    int rc = check(&s,
                   WT_LISTEN "\n"
                   "routes = ( { path = \"/hello\"; plugin = \"hello\"; dispatch = \"reactive\"; },\n"
                   "           { path = \"/files\"; static = { dir = \"/usr/share/doc\"; }; } );\n",
                   &out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "is valid (1 routes, 1 plugins, 1 static route(s))") != NULL, "%s", out);
    free(out);
}

Test(check, error_on_line_7_names_file_and_line)
{
    wt_server s = {0};
    char *out;
    int rc = check(&s,
                   "# line 1\n"
                   WT_LISTEN "\n"
                   "routes = (\n"
                   "  {\n"
                   "    path = \"/hello\";\n"
                   "    plugin = \"hello\";\n"
                   "    dispatch = \"threads\";\n"
                   "  }\n"
                   ");\n",
                   &out);
    cr_assert_eq(rc, 1, "%s", out);
    char want[400];
    snprintf(want, sizeof(want), "%s:7:", s.conf);
    cr_assert(strstr(out, want) != NULL, "want '%s' in: %s", want, out);
    cr_assert(strstr(out, "dispatch 'threads' is not one of pool, coroutine, reactive") != NULL, "%s", out);
    cr_assert(strstr(out, "test failed") != NULL, "%s", out);
    free(out);
}

Test(check, syntax_error_names_line)
{
    wt_server s = {0};
    char *out;
    int rc = check(&s, "threads = 2;\nlisten = [\"127.0.0.1:0\"]\nroutes = ( { path = ; } );\n", &out);
    cr_assert_eq(rc, 1, "%s", out);
    char want[400];
    snprintf(want, sizeof(want), "%s:3:", s.conf);
    cr_assert(strstr(out, want) != NULL, "want '%s' in: %s", want, out);
    free(out);
}

Test(check, wrong_abi_plugin_is_named_with_reason)
{
    wt_server s = {0};
    char *out;
    int rc = check(&s,
                   WT_LISTEN "\n"
                   "routes = ({ path = \"/x\"; plugin = \"wrong_abi\"; dispatch = \"reactive\"; });\n",
                   &out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, WEFT_FIXTURE_DIR "/wrong_abi.so") != NULL, "plugin file named: %s", out);
    cr_assert(strstr(out, "plugin ABI 3, this server speaks ABI 2") != NULL, "%s", out);
    free(out);
}

Test(check, missing_entry_point_for_policy)
{
    wt_server s = {0};
    char *out;
    int rc = check(&s,
                   WT_LISTEN "\n"
                   "routes = ({ path = \"/d\"; plugin = \"deep\"; dispatch = \"reactive\"; });\n",
                   &out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "no handle_async entry point") != NULL, "%s", out);
    free(out);
}

Test(check, all_errors_reported_at_once)
{
    wt_server s = {0};
    char *out;
    int rc = check(&s,
                   "threads = 0;\n"
                   "listen = [\"127.0.0.1:99999\"];\n"
                   "bogus = 1;\n"
                   "routes = ({ path = \"/x\"; plugin = \"../evil\"; dispatch = \"pool\"; });\n",
                   &out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, ":1: threads") != NULL, "%s", out);
    cr_assert(strstr(out, ":2: listen[0]") != NULL, "%s", out);
    cr_assert(strstr(out, ":3: top level: unknown setting 'bogus'") != NULL, "%s", out);
    cr_assert(strstr(out, ":4: routes[0]: plugin '../evil'") != NULL, "%s", out);
    free(out);
}

Test(check, default_config_is_valid)
{
    char *out;
    const char *args[] = {"-t", "-c", WEFT_SOURCE_DIR "/etc/weft.conf", NULL};
    int rc = wt_run(&out, args, NULL);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

Test(check, missing_file_says_why)
{
    char *out;
    const char *args[] = {"-t", "-c", "/nonexistent/weft.conf", NULL};
    cr_assert_eq(wt_run(&out, args, NULL), 1);
    cr_assert(strstr(out, "/nonexistent/weft.conf: cannot open config file: No such file or directory") != NULL,
              "%s", out);
    free(out);
}

Test(check, admin_listener_refuses_non_loopback_unless_allowed)
{
    wt_server s = {0};
    char *out;
    int rc = check(&s,
                   WT_LISTEN "\nadmin = { listen = \"0.0.0.0:0\"; };\n"
                   WT_HELLO_ROUTES "\n",
                   &out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, ":2: admin.listen: '0.0.0.0' is not a loopback address") != NULL, "%s", out);
    free(out);
    rc = check(&s,
               WT_LISTEN "\nadmin = { listen = \"0.0.0.0:0\"; allow_remote = true; };\n"
               WT_HELLO_ROUTES "\n",
               &out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}
