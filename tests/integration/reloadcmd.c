/*
 * `weft reload` (the unit's ExecReload) waits for the server's verdict and
 * fails with its reasons: what `weft -t` cannot see (a plugin that is not
 * there for the running server, a build the server refuses) still makes
 * `systemctl reload` fail with FILE:LINE on stderr, at priority err.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static wt_server srv;

static void conf_with(const char *plugin)
{
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 1;\n" WT_LISTEN "\npid_file = \"%s/run/weft.pid\";\n"
             "routes = ( { path = \"/hello\"; plugin = \"hello\"; dispatch = \"reactive\"; },\n"
             "           { path = \"/x\"; plugin = \"%s\"; dispatch = \"reactive\"; } );\n",
             srv.dir, plugin);
    wt_write_conf(&srv, conf);
}

Test(reloadcmd, reports_the_servers_verdict, .timeout = 60)
{
    wt_write_conf(&srv, "");
    conf_with("hello");
    wt_start(&srv, NULL);
    const char *const args[] = {"reload", "-c", srv.conf, NULL};
    char *out = NULL;
    cr_assert_eq(wt_run(&out, args, NULL), 0, "%s", out);
    cr_assert(strstr(out, "asked pid") != NULL && strstr(out, "generation 2 serving") != NULL, "%s", out);
    free(out);

    /* Parses, so only the server finds out: no such plugin. */
    conf_with("nosuchplugin");
    const char *const env[] = {"JOURNAL_STREAM=8:123456", NULL};
    cr_assert_eq(wt_run(&out, args, env), 1, "a refused reload fails the command:\n%s", out);
    char want[400];
    snprintf(want, sizeof(want), "<3>weft: %s:5: route /x: plugin 'nosuchplugin' could not be loaded", srv.conf);
    cr_assert(strstr(out, want) != NULL, "the server's FILE:LINE reason, at err (%s):\n%s", want, out);
    cr_assert(strstr(out, "<3>weft: reload refused: pid") != NULL, "%s", out);
    free(out);
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/hello", NULL, &r), 0);
    cr_assert_eq(r.status, 200, "the old configuration serves");
    wt_resp_free(&r);
    wt_finish(&srv);
    wt_rm_rf(srv.dir);
}
