/*
 * A plugin's public/ folder (docs/PLUGINS.md, "Shipping static files"):
 * installed as NAME.public beside NAME.so and served by a static route in
 * NAME.routes under the plugin's prefix; `make install` of a scaffolded
 * project carries it along, and a drop-in of a new one is served after the
 * reload its NAME.routes rename causes. The plugin is the ver fixture (hello is on
 * WEFT_PLUGIN_PATH, where the loader would take it and its routes from).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devserver.h"
#include "harness.h"

static wt_server srv;
static char plugdir[64];

static void put(const char *dir, const char *name, const char *text)
{
    char p[600], tmp[640];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f, "%s: %s", tmp, strerror(errno));
    fputs(text, f);
    fclose(f);
    cr_assert_eq(chmod(tmp, 0644), 0);
    cr_assert_eq(rename(tmp, p), 0);
}

static void make_plugdir(void)
{
    snprintf(plugdir, sizeof(plugdir), "/tmp/weft-plugins-test-XXXXXX");
    cr_assert_not_null(mkdtemp(plugdir));
    cr_assert_eq(chmod(plugdir, 0755), 0);
}

static void wait_answer(const char *path, long status, const char *want)
{
    double t0 = wt_now_ms();
    for (;;) {
        wt_resp r;
        cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
        int ok = r.status == status && (want == NULL || strstr(r.body, want) != NULL);
        long got = r.status;
        char body[200];
        snprintf(body, sizeof(body), "%s", r.body);
        wt_resp_free(&r);
        if (ok)
            return;
        cr_assert_lt(wt_now_ms() - t0, 15000, "%s still answers %ld %s", path, got, body);
        usleep(10000);
    }
}

static void start(void)
{
    wt_startf(&srv, "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\nplugin_dirs = [\"%s\"];\nroutes = ();\n", plugdir);
}

static void teardown(void)
{
    wt_suite_stop(&srv);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", plugdir);
    cr_expect_eq(system(cmd), 0);
    wt_rm_rf(srv.dir);
}

TestSuite(static_public, .fini = teardown, .timeout = 120);

static const char ver_routes[] = "routes = (\n"
                                   "  { path = \"/hi\"; plugin = \"ver\"; dispatch = \"coroutine\"; methods = [\"GET\"]; },\n"
                                   "  { path = \"/hi\"; static = { dir = \"ver.public\"; }; }\n"
                                   ");\n";

Test(static_public, a_dropped_in_public_folder_is_served_under_the_plugins_prefix)
{
    make_plugdir();
    char cmd[1200], pub[200], fresh[200];
    snprintf(cmd, sizeof(cmd), "install -m 0755 %s/ver_A/ver.so %s/ver.so", WEFT_FIXTURE_DIR, plugdir);
    cr_assert_eq(system(cmd), 0);
    snprintf(pub, sizeof(pub), "%s/ver.public", plugdir);
    cr_assert_eq(mkdir(pub, 0755), 0);
    put(pub, "app.js", "console.log('v1');");
    put(plugdir, "ver.routes", ver_routes);
    start();
    wait_answer("/hi", 200, NULL);
    wait_answer("/hi/app.js", 200, "v1");
    wt_resp r;
    char v[128];
    cr_assert_eq(wt_http(&srv, "GET", "/hi/app.js", NULL, &r), 0);
    cr_assert(wt_header(&r, "content-type", v, sizeof(v)) != NULL && strstr(v, "javascript") != NULL, "%s", r.headers);
    wt_resp_free(&r);

    /* A new version dropped in the way make install does: the folder renamed
     * in first, then NAME.routes (whose rename reloads). */
    snprintf(fresh, sizeof(fresh), "%s/.ver.public.new", plugdir);
    cr_assert_eq(mkdir(fresh, 0755), 0);
    put(fresh, "app.js", "console.log('v2');");
    snprintf(cmd, sizeof(cmd), "rm -rf %s && mv %s %s", pub, fresh, pub);
    cr_assert_eq(system(cmd), 0);
    put(plugdir, "ver.routes", ver_routes);
    wait_answer("/hi/app.js", 200, "v2");
    wait_answer("/hi", 200, NULL);
}

Test(static_public, a_routes_file_naming_a_missing_public_folder_is_left_out_with_its_line)
{
    make_plugdir();
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "install -m 0755 %s/ver_A/ver.so %s/ver.so", WEFT_FIXTURE_DIR, plugdir);
    cr_assert_eq(system(cmd), 0);
    put(plugdir, "ver.routes", ver_routes);
    start();
    char want[300];
    snprintf(want, sizeof(want), "%s/ver.routes:3: routes[1].static: dir '%s/ver.public'", plugdir, plugdir);
    free(wt_wait_log(&srv, want, 10000));
    wait_answer("/hi", 404, NULL); /* the fragment is left out whole */
}

Test(static_public, make_install_of_a_scaffolded_project_carries_public_along)
{
    make_plugdir();
    wt_write_conf(&srv, "#\n");
    char *out = NULL, proj[400], pub[460], cmd[1200];
    const char *args[] = {"new-plugin", "greeter", srv.dir, NULL};
    cr_assert_eq(wt_run(&out, args, NULL), 0, "%s", out);
    free(out);
    snprintf(proj, sizeof(proj), "%s/greeter", srv.dir);
    snprintf(pub, sizeof(pub), "%s/public", proj);
    cr_assert_eq(mkdir(pub, 0755), 0);
    put(pub, "style.css", "body { color: teal; }");
    put(proj, "greeter.routes",
        "routes = (\n"
        "  { path = \"/greeter\"; plugin = \"greeter\"; dispatch = \"coroutine\"; methods = [\"GET\"]; },\n"
        "  { path = \"/greeter\"; static = { dir = \"greeter.public\"; }; }\n"
        ");\n");
    snprintf(cmd, sizeof(cmd), "make -s -C %s install PLUGIN_DIR=%s >%s/make.log 2>&1", proj, plugdir, srv.dir);
    if (system(cmd) != 0) {
        char log[500];
        snprintf(log, sizeof(log), "%s/make.log", srv.dir);
        char *text = wt_read_file(log);
        cr_assert_fail("make install failed:\n%s", text);
    }
    start();
    wait_answer("/greeter", 200, NULL);
    wait_answer("/greeter/style.css", 200, "teal");
}

Test(static_public, weft_dev_serves_a_projects_public_folder_and_a_saved_file_at_once, .timeout = 180)
{
    char tmp[128], proj[300], pub[400];
    wt_dev_tmpdir(tmp, sizeof(tmp));
    wt_dev_project("greeter", tmp);
    snprintf(proj, sizeof(proj), "%s/greeter", tmp);
    snprintf(pub, sizeof(pub), "%s/public", proj);
    cr_assert_eq(mkdir(pub, 0755), 0);
    put(pub, "s.css", "body { color: teal; }");
    put(proj, "greeter.routes",
        "routes = (\n"
        "  { path = \"/greeter\"; plugin = \"greeter\"; dispatch = \"coroutine\"; methods = [\"GET\"]; },\n"
        "  { path = \"/greeter\"; static = { dir = \"greeter.public\"; }; }\n"
        ");\n");
    wt_server dev;
    wt_dev_start(&dev, tmp, tmp, NULL);
    srv = dev; /* wait_answer asks srv */
    wait_answer("/greeter/s.css", 200, "teal");
    wait_answer("/greeter", 200, "Hello from greeter");
    /* A saved file is served with no build: plugins/greeter.public is a link to public/. */
    put(pub, "s.css", "body { color: red; }");
    wait_answer("/greeter/s.css", 200, "red");
    memset(&srv, 0, sizeof(srv));
    wt_stop_expect_0(&dev, "weft dev");
    wt_rm_rf(tmp);
}
