/*
 * The plugin author's loop, end to end against the real binary:
 *   - `weft new-plugin` → make → load in a normal weft → request;
 *   - `weft dev`: rebuild on save, the build-error page while the last good
 *     version stays loaded, recovery.
 * (The Dev UI in headless Chromium is devui.c.)
 *
 * Every build here uses this source tree's SDK header (support/devserver.h).
 * Children get PR_SET_PDEATHSIG (support/spawn.h), so a test killed by its
 * timeout leaves no server behind.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devserver.h"
#include "harness.h"
#include "spawn.h"

/* Replaces the first `from` in the file with `to` (write-then-rename); returns
 * the 1-based line where `to` starts. */
static int edit_file(const char *path, const char *from, const char *to)
{
    char *text = wt_read_file(path);
    cr_assert_not_null(text, "cannot read %s", path);
    char *at = strstr(text, from);
    cr_assert_not_null(at, "'%s' not found in %s", from, path);
    int line = 1;
    for (const char *p = text; p < at; p++)
        line += *p == '\n';
    size_t out_len = strlen(text) - strlen(from) + strlen(to);
    char *out = malloc(out_len + 1);
    size_t head = (size_t)(at - text);
    memcpy(out, text, head);
    strcpy(out + head, to);
    strcat(out + head, at + strlen(from));
    wt_write_file_atomic(path, out);
    free(out);
    free(text);
    return line;
}

static char *last_lines(const char *text, int n)
{
    const char *p = text + strlen(text);
    while (p > text && n >= 0)
        if (*--p == '\n')
            n--;
    return strdup(p);
}

static wt_server dev; /* `weft dev`, when a test starts one */
static wt_server srv; /* a normal weft */
static char tmp[128]; /* the test's private directory */

static void setup(void)
{
    /* The loader refuses group-writable plugins; pin the mask so a CI
     * runner's umask 002 cannot change the outcome (see the umask test). */
    umask(022);
    wt_dev_tmpdir(tmp, sizeof(tmp));
}

static void teardown(void)
{
    wt_stop_expect_0(&dev, "weft dev");
    wt_stop_expect_0(&srv, "weft");
    wt_rm_rf(tmp);
}

TestSuite(devloop, .init = setup, .fini = teardown, .timeout = 300);


/* /status is pretty-printed JSON with sorted keys (jansson's JSON_INDENT(2) |
 * JSON_SORT_KEYS); the test has no JSON library, so read it by its layout. */
static int route_plugin_load(const char *status, const char *route)
{
    char key[200];
    snprintf(key, sizeof(key), "\"path\": \"%s\",", route);
    const char *p = strstr(status, key);
    cr_assert_not_null(p, "route %s not in /status:\n%s", route, status);
    p = strstr(p, "\"plugin_load\": ");
    cr_assert_not_null(p, "no plugin_load for %s in /status:\n%s", route, status);
    return atoi(p + strlen("\"plugin_load\": "));
}

/* Polls GET path until it answers `status` with `want` in the body; returns the ms it took. */
static double wait_for(const wt_server *s, const char *path, long status, const char *want, double limit_ms)
{
    double t0 = wt_now_ms();
    wt_resp r = {0};
    long last = 0;
    char *body = strdup("");
    while (wt_now_ms() - t0 < limit_ms) {
        int rc = wt_http(s, "GET", path, NULL, &r);
        last = rc == 0 ? r.status : -1;
        free(body);
        body = r.body;
        if (last == status && strstr(body, want) != NULL) {
            free(body);
            return wt_now_ms() - t0;
        }
        usleep(50000);
    }
    char *log = wt_read_log(s);
    char *tail = last_lines(log, 40);
    cr_assert_fail("GET %s never answered %ld with '%s' within %.0f ms (last: %ld %s)\nlog:\n%s", path, status, want,
                   limit_ms, last, body, tail);
    return -1;
}

/* ---- a. scaffold → build → load → request ---- */

static void make_project(const char *projdir)
{
    char *out = NULL;
    const char *argv[] = {"make", "-C", projdir, NULL};
    const char *set[] = {wt_no_pkgconfig_env(tmp), NULL};
    char **env = wt_dev_env(set);
    int rc = wt_run_cmd(argv, env, &out, 120000);
    free(env);
    cr_assert_eq(rc, 0, "make -C %s exited %d:\n%s", projdir, rc, out);
    free(out);
}

Test(devloop, scaffolded_plugin_builds_loads_and_answers)
{
    wt_scaffold("hello2", tmp);
    char proj[300], path[400];
    snprintf(proj, sizeof(proj), "%s/hello2", tmp);
    static const char *const files[] = {"hello2.c", "Makefile", "hello2.routes", "README.md"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", proj, files[i]);
        cr_assert_eq(stat(path, &st), 0, "new-plugin did not write %s", path);
    }
    make_project(proj);

    /* No routes in the main config: hello2.routes beside hello2.so brings them. */
    char *conf = NULL;
    cr_assert_geq(asprintf(&conf,
                           "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\n"
                           "plugin_dirs = [\"%s\"];\n",
                           proj),
                  0);
    wt_start(&srv, conf);
    free(conf);

    static const char *const paths[] = {"/hello2", "/hello2/reactive"};
    for (size_t i = 0; i < 2; i++) {
        wt_resp r;
        wt_get(&srv, paths[i], &r);
        cr_assert_eq(r.status, 200, "GET %s: %ld %s", paths[i], r.status, r.body);
        cr_assert_str_eq(r.body, "Hello from hello2\n", "GET %s", paths[i]);
        char ct[64];
        cr_assert_not_null(wt_header(&r, "content-type", ct, sizeof(ct)));
        cr_assert_str_eq(ct, "text/plain");
        wt_resp_free(&r);
    }
    char *status = wt_admin_get(&srv, "/status");
    cr_assert(strstr(status, "\"dispatch\": \"coroutine\"") && strstr(status, "\"dispatch\": \"reactive\""),
              "hello2.routes' two policies: %s", status);
    free(status);
    cr_assert_eq(wt_stop(&srv), 0);
}

/* A name that is not a C identifier as it stands (leading digit, dash) still builds. */
Test(devloop, scaffold_makes_identifiers_of_odd_names)
{
    wt_scaffold("9-lives", tmp);
    char proj[300];
    snprintf(proj, sizeof(proj), "%s/9-lives", tmp);
    make_project(proj);
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 1;\n" WT_LISTEN "\nplugin_dirs = [\"%s\"];\n"
             "routes = ({ path = \"/nine\"; plugin = \"9-lives\"; dispatch = \"pool\"; });\n",
             proj);
    wt_start(&srv, conf);
    wt_resp r;
    wt_get(&srv, "/nine", &r);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "Hello from 9-lives\n");
    wt_resp_free(&r);
}

Test(devloop, new_plugin_refuses_bad_names_and_existing_directories)
{
    static const char *const bad[] = {"Hello", "-x", "_x", "a/b", "..", "a b", "h\xc3\xa9", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *out = NULL;
        const char *args[] = {"new-plugin", bad[i], tmp, NULL};
        int rc = wt_run(&out, args, NULL);
        cr_assert_eq(rc, 2, "new-plugin '%s': exit %d, want 2:\n%s", bad[i], rc, out);
        cr_assert(strstr(out, "is not a plugin name") != NULL, "new-plugin '%s' says why:\n%s", bad[i], out);
        free(out);
    }
    char *out = NULL;
    const char *long_name = "a123456789b123456789c123456789d123456789e123456789f123456789g1234"; /* 65 */
    const char *args_long[] = {"new-plugin", long_name, tmp, NULL};
    cr_assert_eq(wt_run(&out, args_long, NULL), 2, "a 65-character name:\n%s", out);
    free(out);
    /* nothing was created by the refusals */
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s')\"", tmp);
    cr_assert_eq(system(cmd), 0, "refused names left files in %s", tmp);

    wt_scaffold("taken", tmp);
    char src[300];
    snprintf(src, sizeof(src), "%s/taken/taken.c", tmp);
    wt_write_file_atomic(src, "/* mine */\n");
    const char *args[] = {"new-plugin", "taken", tmp, NULL};
    int rc = wt_run(&out, args, NULL);
    cr_assert_eq(rc, 1, "existing directory: exit %d, want 1:\n%s", rc, out);
    cr_assert(strstr(out, "/taken") != NULL && strstr(out, "exists") != NULL, "says which and why:\n%s", out);
    free(out);
    char *kept = wt_read_file(src);
    cr_assert_str_eq(kept, "/* mine */\n", "the existing project was not touched");
    free(kept);

    const char *usage[] = {"new-plugin", NULL};
    cr_assert_eq(wt_run(&out, usage, NULL), 2, "no NAME:\n%s", out);
    cr_assert(strstr(out, "usage: weft new-plugin NAME [DIR]") != NULL, "%s", out);
    free(out);
}

/* ---- b. weft dev: save → new response; syntax error → 500 page; fix → back ---- */

Test(devloop, dev_rebuilds_on_save_shows_build_errors_and_recovers)
{
    wt_dev_project("devplug", tmp);
    wt_dev_start(&dev, tmp, tmp, NULL);
    char src[300];
    snprintf(src, sizeof(src), "%s/devplug/devplug.c", tmp);

    wt_resp r;
    wt_get(&dev, "/devplug", &r);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    cr_assert_str_eq(r.body, "Hello from devplug\n");
    wt_resp_free(&r);
    char *status = wt_admin_get(&dev, "/status");
    int load0 = route_plugin_load(status, "/devplug");
    cr_assert(strstr(status, "/.weft-dev/weft.conf") != NULL, "serves the generated config: %s", status);
    free(status);

    /* 1. save a change */
    edit_file(src, "\"Hello from devplug\"", "\"Howdy from devplug\"");
    double ms = wait_for(&dev, "/devplug", 200, "Howdy from devplug\n", 5000);
    wait_for(&dev, "/devplug/reactive", 200, "Howdy from devplug\n", 5000);
    status = wt_admin_get(&dev, "/status");
    int load1 = route_plugin_load(status, "/devplug");
    free(status);
    cr_assert_gt(load1, load0, "a new version was loaded");
    cr_log_info("edit → new response in %.0f ms", ms);

    /* 2. a syntax error: the routes answer the build-error page, the last good version stays loaded */
    int line = edit_file(src, "    if (h->response->header(req, \"content-type\", \"text/plain\") != WEFT_OK)",
                         "    int broken = ;\n    if (h->response->header(req, \"content-type\", \"text/plain\") != WEFT_OK)");
    ms = wait_for(&dev, "/devplug", 500, "Build failed", 5000);
    cr_log_info("syntax error → build-error page in %.0f ms", ms);
    static const char *const paths[] = {"/devplug", "/devplug/reactive"};
    for (size_t i = 0; i < 2; i++) {
        wt_get(&dev, paths[i], &r);
        cr_assert_eq(r.status, 500, "GET %s: %ld", paths[i], r.status);
        char ct[128];
        cr_assert_not_null(wt_header(&r, "content-type", ct, sizeof(ct)));
        cr_assert(strncmp(ct, "text/html", 9) == 0, "content-type %s", ct);
        char where[64];
        snprintf(where, sizeof(where), "devplug.c:%d:", line);
        const char *at = strstr(r.body, where);
        cr_assert_not_null(at, "the page gives the compiler's file:line (%s):\n%s", where, r.body);
        cr_assert(strstr(at, "error") != NULL, "...and the error:\n%s", r.body);
        cr_assert(strstr(r.body, "<!DOCTYPE html>") == r.body, "an HTML page:\n%s", r.body);
        wt_resp_free(&r);
    }
    /* Had a broken or stale build been installed by now, a reload would load
     * it: ask for one (admin /reload) and wait for the server to report it
     * done, instead of sleeping and hoping a wrong swap would have shown. */
    status = wt_admin_get(&dev, "/status");
    long reloads = wt_reloads_ok(status);
    free(status);
    wt_server admin = dev;
    admin.port = dev.admin_port;
    cr_assert_eq(wt_http(&admin, "POST", "/reload", "", &r), 0);
    cr_assert_eq(r.status, 202, "admin /reload: %ld %s", r.status, r.body);
    wt_resp_free(&r);
    for (double t0 = wt_now_ms();; usleep(50000)) {
        status = wt_admin_get(&dev, "/status");
        if (wt_reloads_ok(status) > reloads)
            break;
        cr_assert_lt(wt_now_ms() - t0, 10000.0, "the requested reload did not complete:\n%s", status);
        free(status);
    }
    cr_assert_eq(route_plugin_load(status, "/devplug"), load1,
                 "the last good version stays loaded while the build is broken:\n%s", status);
    cr_assert_eq(route_plugin_load(status, "/devplug/reactive"), load1, "%s", status);
    free(status);
    char *page = wt_admin_get(&dev, "/dev");
    cr_assert(strstr(page, "class=\"fail\">failed") != NULL, "the Dev UI lists the failed build:\n%s", page);
    free(page);

    /* 3. fix it: the new good version answers */
    edit_file(src, "    int broken = ;\n", "");
    edit_file(src, "\"Howdy from devplug\"", "\"Fixed from devplug\"");
    ms = wait_for(&dev, "/devplug", 200, "Fixed from devplug\n", 5000);
    wait_for(&dev, "/devplug/reactive", 200, "Fixed from devplug\n", 5000);
    cr_log_info("fix → new good version in %.0f ms", ms);
    status = wt_admin_get(&dev, "/status");
    cr_assert_gt(route_plugin_load(status, "/devplug"), load1, "%s", status);
    free(status);
    page = wt_admin_get(&dev, "/dev");
    cr_assert(strstr(page, "class=\"fail\"") == NULL, "no failed build left in the Dev UI:\n%s", page);
    free(page);

    int rc = wt_stop(&dev);
    char *log = wt_read_log(&dev);
    cr_assert_eq(rc, 0, "weft dev exited %d on SIGTERM:\n%s", rc, log);
    free(log);
}

/*
 * Under umask 002 (Debian's default for users with a private group when
 * pam_umask is on) the compiler writes a group-writable .so, which the loader
 * rightly refuses: dev mode must install its builds with go-w.
 */
Test(devloop, dev_builds_load_under_umask_002)
{
    umask(002);
    wt_dev_project("masked", tmp);
    wt_dev_start(&dev, tmp, tmp, NULL);
    umask(022);
    wt_resp r;
    wt_get(&dev, "/masked", &r);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    cr_assert_str_eq(r.body, "Hello from masked\n");
    wt_resp_free(&r);
}

/*
 * A handler that segfaults under `weft dev`: the dev server restarts by
 * itself, and the plugin's routes show the crash line and backtrace until
 * the next good build.
 */
Test(devloop, dev_restarts_after_a_crash_and_shows_it_until_a_good_build)
{
    wt_dev_project("crasher", tmp);
    char src[300];
    snprintf(src, sizeof(src), "%s/crasher/crasher.c", tmp);
    /* offset 16 of a NULL struct: a real SIGSEGV even in the UBSan build */
    edit_file(src, "    if (h->response->header(req, \"content-type\", \"text/plain\") != WEFT_OK)",
              "    if (h->request->query(req, \"crash\", NULL) != NULL) { volatile int *volatile bad = (volatile int *)16; *bad = 1; }\n"
              "    if (h->response->header(req, \"content-type\", \"text/plain\") != WEFT_OK)");
    wt_dev_start(&dev, tmp, tmp, NULL);
    wait_for(&dev, "/crasher", 200, "Hello from crasher\n", 5000);
    wt_resp r;
    if (wt_http(&dev, "GET", "/crasher?crash=1", NULL, &r) == 0)
        wt_resp_free(&r);

    /* the supervisor restarts the server: new ports, read from after the crash */
    double t0 = wt_now_ms();
    for (;;) {
        char *log = wt_read_log(&dev);
        const char *after = strstr(log, "restarting it");
        int port = after != NULL ? wt_logged_port(after, 0) : 0, admin = after != NULL ? wt_logged_port(after, 1) : 0;
        int ready = after != NULL && strstr(after, " serving ") != NULL;
        if (ready && port > 0 && admin > 0) {
            cr_assert(strstr(log, "weft: FATAL: SIGSEGV in route /crasher (plugin crasher ") != NULL, "%s", log);
            dev.port = port;
            dev.admin_port = admin;
            free(log);
            break;
        }
        cr_assert_lt(wt_now_ms() - t0, 60000.0, "weft dev did not restart after the crash:\n%s", log);
        free(log);
        usleep(50000);
    }
    wt_get(&dev, "/crasher", &r);
    cr_assert_eq(r.status, 500, "%ld %s", r.status, r.body);
    cr_assert(strstr(r.body, "Crashed: crasher") != NULL, "%s", r.body);
    cr_assert(strstr(r.body, "SIGSEGV in route /crasher (plugin crasher") != NULL, "the crash line:\n%s", r.body);
    cr_assert(strstr(r.body, "backtrace follows") != NULL, "%s", r.body);
    wt_resp_free(&r);

    edit_file(src, "*bad = 1;", "(void)bad;");
    wait_for(&dev, "/crasher", 200, "Hello from crasher\n", 10000);
    int rc = wt_stop(&dev);
    char *log = wt_read_log(&dev);
    cr_assert_eq(rc, 0, "weft dev exited %d on SIGTERM:\n%s", rc, log);
    free(log);
}
