/* Plugin-level lifecycle (plugin API 1.1): load/unload once per plugin and
 * configuration, plugin-wide state handed to every route's init, and
 * plugins.NAME options validated like route options. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char *conf_with(const char *plugin_opts, char *buf, size_t size)
{
    snprintf(buf, size,
             "threads = 2; " WT_LISTEN "\n"
             "plugins = { %s };\n"
             "routes = (\n"
             " { path = \"/a\"; plugin = \"plugstate\"; dispatch = \"pool\"; options = { name = \"a\"; }; },\n"
             " { path = \"/b\"; plugin = \"plugstate\"; dispatch = \"coroutine\"; options = { name = \"b\"; }; },\n"
             " { path = \"/c\"; plugin = \"plugstate\"; dispatch = \"reactive\"; options = { name = \"c\"; }; }\n"
             ");\n",
             plugin_opts);
    return buf;
}

static void body_of(wt_server *s, const char *path, char *out, size_t size)
{
    wt_resp r;
    cr_assert_eq(wt_http(s, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    snprintf(out, size, "%s", r.body);
    wt_resp_free(&r);
}

Test(lifecycle, one_load_shared_by_every_route_then_reload_and_unload, .timeout = 60)
{
    wt_server s = {0};
    char conf[2048], a[256], b[256], c[256];
    wt_start(&s, conf_with("plugstate = { greeting = \"bonjour\"; };", conf, sizeof(conf)));
    body_of(&s, "/a", a, sizeof(a));
    body_of(&s, "/b", b, sizeof(b));
    body_of(&s, "/c", c, sizeof(c));
    cr_assert(strncmp(a, "greeting=bonjour route=a load=1 state=", 38) == 0, "%s", a);
    cr_assert_str_eq(strstr(a, "state="), strstr(b, "state="), "routes got different plugin states");
    cr_assert_str_eq(strstr(a, "state="), strstr(c, "state="), "routes got different plugin states");
    char *log = wt_read_log(&s);
    cr_assert(strstr(log, "plugstate load #1 greeting=bonjour") && !strstr(log, "load #2"), "%s", log);
    free(log);

    wt_write_conf(&s, conf_with("plugstate = { greeting = \"hallo\"; };", conf, sizeof(conf)));
    cr_assert_eq(kill(s.pid, SIGHUP), 0);
    free(wt_wait_log(&s, "plugstate unload #1", 10000));
    body_of(&s, "/b", b, sizeof(b));
    cr_assert(strncmp(b, "greeting=hallo route=b load=2 ", 30) == 0, "%s", b);
    wt_finish(&s);
    log = wt_read_log(&s);
    cr_assert(strstr(log, "plugstate unload #2"), "unload at shutdown:\n%s", log);
    free(log);
}

static void expect_refused(const char *plugin_opts, const char *needle)
{
    wt_server s = {0};
    char conf[2048];
    wt_write_conf(&s, conf_with(plugin_opts, conf, sizeof(conf)));
    char *out = NULL;
    const char *args[] = {"-t", "-c", s.conf, NULL};
    int st = wt_run(&out, args, NULL);
    cr_assert_neq(st, 0, "accepted: %s\n%s", plugin_opts, out);
    cr_assert(strstr(out, needle) != NULL, "'%s' not in:\n%s", needle, out);
    free(out);
}

Test(lifecycle, plugin_options_are_validated, .timeout = 60)
{
    expect_refused("plugstate = { greeting = 5; };", "plugins.plugstate: option 'greeting' of plugin 'plugstate' must be a string");
    expect_refused("plugstate = { colour = \"red\"; };", "plugins.plugstate: 'colour' is not an option of plugin 'plugstate'");
    expect_refused("plugstate = { fail = true; };", "plugins.plugstate: plugin 'plugstate' load failed: asked to fail");
    expect_refused("plugstate = {}; other = {};", "plugins.other: no route uses plugin 'other'");
    expect_refused("plugstate = 3;", "plugins.plugstate");
}
