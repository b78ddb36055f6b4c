/* Drop-in: a plugin brings its routes (NAME.routes beside NAME.so, or
 * routes.d/NAME.conf next to the config) and a running server serves them with
 * no edit to the main config and no manual reload. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "devserver.h"
#include "harness.h"

static wt_server srv;
static char plugdir[128], routesd[400];

/* The operator's rule: write a temporary dot file, then rename it in. */
static void drop(const char *dir, const char *name, const char *bytes, size_t len)
{
    char tmp[600], dst[600];
    snprintf(tmp, sizeof(tmp), "%s/.%s.new", dir, name);
    snprintf(dst, sizeof(dst), "%s/%s", dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0, "%s", tmp);
    cr_assert_eq(write(fd, bytes, len), (ssize_t)len);
    close(fd);
    cr_assert_eq(rename(tmp, dst), 0);
}

static void drop_text(const char *dir, const char *name, const char *text) { drop(dir, name, text, strlen(text)); }

static void drop_plugin(const char *src, const char *name)
{
    FILE *f = fopen(src, "rb");
    cr_assert_not_null(f, "%s", src);
    static char buf[4 << 20];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    drop(plugdir, name, buf, n);
}

static void setup(void)
{
    snprintf(plugdir, sizeof(plugdir), "/tmp/weft-dropin-XXXXXX");
    cr_assert_not_null(mkdtemp(plugdir));
    chmod(plugdir, 0755);
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\n"
             "plugin_dirs = [\"%s\"];\n"
             "routes = ( { path = \"/main\"; plugin = \"echo\"; dispatch = \"reactive\"; } );\n",
             plugdir);
    wt_write_conf(&srv, conf);
    /* routes.d sits next to the config, as /etc/weft/routes.d does. */
    snprintf(routesd, sizeof(routesd), "%s/routes.d", srv.dir);
    cr_assert_eq(mkdir(routesd, 0755), 0);
    drop_plugin(WEFT_FIXTURE_DIR "/echo.so", "echo.so");
    wt_start(&srv, NULL);
    cr_assert_gt(srv.admin_port, 0);
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", plugdir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(dropin, .init = setup, .fini = teardown, .timeout = 120);

static long get(const char *path, char *body, size_t size)
{
    wt_resp r;
    long st = wt_http(&srv, "GET", path, NULL, &r) == 0 ? r.status : -1;
    if (body != NULL)
        snprintf(body, size, "%s", st > 0 ? r.body : "");
    if (st > 0)
        wt_resp_free(&r);
    return st;
}

static char *admin_status(void) { return wt_admin_get(&srv, "/status"); }

/* The reload line is logged as the new generation is handed to the loops;
 * each loop switches on its next turn, so poll the answer itself. */
static long wait_status(const char *path, long want, char *body, size_t size)
{
    long st = -1;
    for (double t0 = wt_now_ms(); wt_now_ms() - t0 < 10000; usleep(5000))
        if ((st = get(path, body, size)) == want)
            return st;
    return st;
}

static void wait_generation(unsigned long id)
{
    char needle[64];
    snprintf(needle, sizeof(needle), "generation %lu serving", id);
    free(wt_wait_log(&srv, needle, 10000));
}

Test(dropin, two_files_make_a_working_endpoint)
{
    cr_assert_eq(get("/ver", NULL, 0), 404);
    double t0 = wt_now_ms();
    drop_plugin(WEFT_FIXTURE_DIR "/ver_A/ver.so", "ver.so");
    drop_text(plugdir, "ver.routes",
              "routes = ( { path = \"/ver\"; plugin = \"ver\"; dispatch = \"coroutine\";\n"
              "             options = { tag = \"dropped\"; }; } );\n");
    /* The server's own signal, not a sleep: its reload line. The two files
     * may land in one reload or two, so wait for the route, not a number. */
    free(wt_wait_log(&srv, "reload: route /ver added", 10000));
    char body[256];
    cr_assert_eq(wait_status("/ver", 200, body, sizeof(body)), 200, "%s", body);
    double took = wt_now_ms() - t0;
    cr_assert(strstr(body, "dropped") != NULL, "the route's options came with it: %s", body);
    /* Debounce (150 ms) plus one reload; the bound is loose for a loaded machine. */
    cr_expect_lt(took, 3000, "the endpoint took %.0f ms to appear", took);
    fprintf(stderr, "drop-in: /ver answered %.0f ms after the two files were renamed in\n", took);
    cr_assert_eq(get("/main", NULL, 0), 200, "the main file's routes stay");

    char *st = admin_status();
    char where[300];
    snprintf(where, sizeof(where), "\"source\": \"%s/ver.routes:1\"", plugdir);
    cr_assert(strstr(st, where) != NULL, "/status says where the route came from (%s):\n%s", where, st);
    cr_assert(strstr(st, "\"route_files\"") != NULL, "%s", st);
    free(st);

    /* Removing the fragment removes the endpoint. */
    char path[300];
    snprintf(path, sizeof(path), "%s/ver.routes", plugdir);
    cr_assert_eq(unlink(path), 0);
    free(wt_wait_log(&srv, "reload: route /ver removed", 10000));
    cr_assert_eq(wait_status("/ver", 404, NULL, 0), 404);
    wt_finish(&srv);
}

Test(dropin, the_routes_file_may_arrive_first)
{
    drop_text(plugdir, "ver.routes", "routes = ( { path = \"/ver\"; plugin = \"ver\"; dispatch = \"coroutine\"; } );\n");
    /* Without ver.so beside it the fragment is not read: nothing to serve yet. */
    wait_generation(2);
    cr_assert_eq(get("/ver", NULL, 0), 404);
    drop_plugin(WEFT_FIXTURE_DIR "/ver_A/ver.so", "ver.so");
    wait_generation(3);
    cr_assert_eq(wait_status("/ver", 200, NULL, 0), 200);
    wt_finish(&srv);
}

Test(dropin, routes_d_fragment_is_served_and_listed)
{
    drop_text(routesd, "10-echo.conf", "routes = ( { path = \"/more\"; plugin = \"echo\"; dispatch = \"pool\"; } );\n");
    wait_generation(2);
    cr_assert_eq(wait_status("/more", 200, NULL, 0), 200);
    char *st = admin_status();
    char where[500];
    snprintf(where, sizeof(where), "\"source\": \"%s/10-echo.conf:1\"", routesd);
    cr_assert(strstr(st, where) != NULL, "%s in:\n%s", where, st);
    free(st);
    wt_finish(&srv);
}

Test(dropin, broken_fragment_is_refused_and_the_old_generation_serves)
{
    drop_text(routesd, "20-bad.conf", "routes = (\n  { path = \"/bad\"; plugin = \"echo\" dispatch = ; }\n);\n");
    char *log = wt_wait_log(&srv, "refused; generation 1 keeps serving", 10000);
    char where[500];
    snprintf(where, sizeof(where), "%s/20-bad.conf:2:", routesd);
    cr_assert(strstr(log, where) != NULL, "the error names FILE:LINE (%s):\n%s", where, log);
    free(log);
    cr_assert_eq(get("/main", NULL, 0), 200);
    char *st = admin_status();
    cr_assert(strstr(st, "20-bad.conf:2") != NULL, "/status shows the refusal:\n%s", st);
    free(st);

    /* A valid file with a bad route: the route's own FILE:LINE. */
    drop_text(routesd, "20-bad.conf", "routes = (\n\n  { path = \"/bad\"; plugin = \"echo\"; dispatch = \"nope\"; }\n);\n");
    snprintf(where, sizeof(where), "%s/20-bad.conf:3: routes[0]: dispatch 'nope'", routesd);
    free(wt_wait_log(&srv, where, 10000));
    cr_assert_eq(get("/main", NULL, 0), 200);
    wt_finish(&srv);
}

Test(dropin, duplicate_routes_across_fragments_name_both_files)
{
    drop_text(routesd, "a.conf", "routes = ( { path = \"/dup\"; plugin = \"echo\"; dispatch = \"reactive\"; } );\n");
    wait_generation(2);
    drop_text(routesd, "b.conf", "\nroutes = ( { path = \"/dup\"; plugin = \"echo\"; dispatch = \"reactive\"; } );\n");
    char *log = wt_wait_log(&srv, "refused; generation 2 keeps serving", 10000);
    char a[500], b[500];
    snprintf(a, sizeof(a), "%s/a.conf:1", routesd);
    snprintf(b, sizeof(b), "%s/b.conf:2", routesd);
    cr_assert(strstr(log, a) != NULL && strstr(log, b) != NULL, "both %s and %s are named:\n%s", a, b, log);
    free(log);
    wt_finish(&srv);
}

Test(dropin, plugin_routes_file_routes_only_its_own_plugin)
{
    drop_plugin(WEFT_FIXTURE_DIR "/ver_A/ver.so", "ver.so");
    drop_text(plugdir, "ver.routes", "routes = ( { path = \"/steal\"; plugin = \"echo\"; dispatch = \"reactive\"; } );\n");
    char *log = wt_wait_log(&srv, "refused; generation 1 keeps serving", 10000);
    cr_assert(strstr(log, "ver.routes may only route to plugin 'ver'") != NULL, "%s", log);
    free(log);
    wt_finish(&srv);
}

/* A fragment routes requests to plugin code with options of its choosing:
 * whoever can write one can take over a URL. It gets the checks a .so gets
 * (owner root or the server's user, writable by nobody else, the target of
 * a symlink is what counts), with the same kind of refusal. */
static void drop_mode(const char *dir, const char *name, const char *text, mode_t mode)
{
    char tmp[600], dst[600];
    snprintf(tmp, sizeof(tmp), "%s/.%s.new", dir, name);
    snprintf(dst, sizeof(dst), "%s/%s", dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0, "%s", tmp);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    cr_assert_eq(fchmod(fd, mode), 0); /* past the umask */
    close(fd);
    cr_assert_eq(rename(tmp, dst), 0);
}

static const char ver_routes[] = "routes = ( { path = \"/ver\"; plugin = \"ver\"; dispatch = \"coroutine\"; } );\n";

Test(dropin, world_writable_routes_file_is_refused_like_a_so)
{
    drop_plugin(WEFT_FIXTURE_DIR "/ver_A/ver.so", "ver.so");
    drop_mode(plugdir, "ver.routes", ver_routes, 0666);
    char *log = wt_wait_log(&srv, "refused; generation 1 keeps serving", 10000);
    char want[600];
    snprintf(want, sizeof(want),
             "route fragment %s/ver.routes: refused: route fragment file %s/ver.routes is writable by others (mode "
             "0666); run chmod go-w on it",
             plugdir, plugdir);
    cr_assert(strstr(log, want) != NULL, "want '%s' in:\n%s", want, log);
    free(log);
    cr_assert_eq(get("/ver", NULL, 0), 404);
    /* Group-writable too; and the .so with the same mode, for comparison. */
    drop_mode(routesd, "g.conf", "routes = ( { path = \"/g\"; plugin = \"echo\"; dispatch = \"reactive\"; } );\n",
              0664);
    snprintf(want, sizeof(want), "route fragment file %s/g.conf is writable by its group (mode 0664)", routesd);
    free(wt_wait_log(&srv, want, 10000));
    cr_assert_eq(get("/g", NULL, 0), 404);
    /* Fixed: served. */
    drop_mode(plugdir, "ver.routes", ver_routes, 0644);
    drop_mode(routesd, "g.conf", "routes = ( { path = \"/g\"; plugin = \"echo\"; dispatch = \"reactive\"; } );\n",
              0644);
    cr_assert_eq(wait_status("/ver", 200, NULL, 0), 200, "%s", wt_read_log(&srv));
    cr_assert_eq(wait_status("/g", 200, NULL, 0), 200, "%s", wt_read_log(&srv));
    wt_finish(&srv);
}

Test(dropin, routes_file_symlinked_to_a_0666_file_in_tmp_is_refused)
{
    char target[64];
    snprintf(target, sizeof(target), "/tmp/weft-evil-XXXXXX");
    int fd = mkstemp(target);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, ver_routes, strlen(ver_routes)), (ssize_t)strlen(ver_routes));
    cr_assert_eq(fchmod(fd, 0666), 0);
    close(fd);
    drop_plugin(WEFT_FIXTURE_DIR "/ver_A/ver.so", "ver.so");
    char tmp[300], dst[300];
    snprintf(tmp, sizeof(tmp), "%s/.ver.routes.new", plugdir);
    snprintf(dst, sizeof(dst), "%s/ver.routes", plugdir);
    cr_assert_eq(symlink(target, tmp), 0);
    cr_assert_eq(rename(tmp, dst), 0);
    char *log = wt_wait_log(&srv, "refused; generation 1 keeps serving", 10000);
    char want[600];
    snprintf(want, sizeof(want), "route fragment %s/ver.routes: refused: route fragment file %s is writable by others",
             plugdir, target);
    cr_assert(strstr(log, want) != NULL, "want '%s' in:\n%s", want, log);
    free(log);
    cr_assert_eq(get("/ver", NULL, 0), 404);
    /* Even at 0644 a file in /tmp itself is refused: its directory is writable by others. */
    cr_assert_eq(chmod(target, 0644), 0);
    cr_assert_eq(symlink(target, tmp), 0);
    cr_assert_eq(rename(tmp, dst), 0);
    free(wt_wait_log(&srv, "route fragment directory /tmp is writable by others", 10000));
    cr_assert_eq(get("/ver", NULL, 0), 404);
    unlink(target);
    wt_finish(&srv);
}

/* `weft -t` reads the same fragments: a check before dropping catches them. */
Test(dropin, check_mode_reads_fragments)
{
    drop_text(routesd, "x.conf", "routes = ( { path = \"/x\"; plugin = \"echo\"; dispatch = \"reactive\"; } );\nextra = 1;\n");
    const char *const args[] = {"-t", "-c", srv.conf, NULL};
    char *out = NULL;
    int rc = wt_run(&out, args, NULL);
    char where[500];
    snprintf(where, sizeof(where), "%s/x.conf:2: extra: unknown setting", routesd);
    /* A warning, not a failure: the server would start without that file. */
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "warning: drop-in") != NULL && strstr(out, where) != NULL, "%s in:\n%s", where, out);
    free(out);
    wt_finish(&srv);
}

/* What a crash, an upgrade or a reboot meets: a truncated plugin with its
 * routes file and a broken routes.d fragment on disk. `ExecStartPre=weft
 * -t` and the start itself go on without them; only the main config fails. */
Test(dropin, broken_dropins_on_disk_never_block_a_start)
{
    cr_assert_eq(wt_stop(&srv), 0);
    /* The operator keeps the dropped plugin's options in the main file: they
     * wait for it rather than failing the start ("no route uses plugin"). */
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\n"
             "plugin_dirs = [\"%s\"];\nplugins = { ver = { }; };\n"
             "routes = ( { path = \"/main\"; plugin = \"echo\"; dispatch = \"reactive\"; } );\n",
             plugdir);
    wt_write_conf(&srv, conf);
    FILE *f = fopen(WEFT_FIXTURE_DIR "/ver_A/ver.so", "rb");
    cr_assert_not_null(f);
    static char half[8192];
    size_t n = fread(half, 1, sizeof(half), f);
    fclose(f);
    drop(plugdir, "ver.so", half, n); /* the ELF header survives, the segments do not */
    drop_text(plugdir, "ver.routes", "routes = ( { path = \"/ver\"; plugin = \"ver\"; dispatch = \"coroutine\"; } );\n");
    drop_text(routesd, "20-bad.conf", "routes = (\n  { path = \"/bad\"; plugin = \"echo\" dispatch = ; }\n);\n");
    drop_text(routesd, "10-good.conf", "routes = ( { path = \"/more\"; plugin = \"echo\"; dispatch = \"pool\"; } );\n");
    char so_routes[300], bad[500];
    snprintf(so_routes, sizeof(so_routes), "%s/ver.routes", plugdir);
    snprintf(bad, sizeof(bad), "%s/20-bad.conf:2", routesd);

    const char *const args[] = {"-t", "-c", srv.conf, NULL};
    char *out = NULL;
    int rc = wt_run(&out, args, NULL);
    cr_assert_eq(rc, 0, "weft -t passes with broken drop-ins:\n%s", out);
    cr_assert(strstr(out, "warning: drop-in") != NULL && strstr(out, so_routes) != NULL && strstr(out, bad) != NULL,
              "-t warns about both files:\n%s", out);
    free(out);

    unlink(srv.log); /* wt_start must not read the last run's "serving" line */
    wt_start(&srv, NULL);
    char *log = wt_read_log(&srv);
    char line[700];
    snprintf(line, sizeof(line), "error drop-in %s refused", so_routes);
    cr_assert(strstr(log, line) != NULL, "logged at error (%s):\n%s", line, log);
    cr_assert(strstr(log, "ver.so") != NULL && strstr(log, bad) != NULL, "with the reasons:\n%s", log);
    /* The probe tried echo and the truncated ver: only echo passed. */
    cr_assert(strstr(log, "probe: 1 of 2 new plugin version(s) loaded and initialised") != NULL &&
                  strstr(log, "the others were refused") != NULL,
              "the probe does not count the refused plugin:\n%s", log);
    free(log);
    cr_assert_eq(get("/main", NULL, 0), 200);
    cr_assert_eq(get("/more", NULL, 0), 200, "the good fragment serves");
    cr_assert_eq(get("/ver", NULL, 0), 404, "the refused file's routes are absent");
    cr_assert_eq(get("/bad", NULL, 0), 404);

    char *st = admin_status();
    cr_assert(strstr(st, "\"refused_files\"") != NULL && strstr(st, so_routes) != NULL && strstr(st, bad) != NULL,
              "/status names the files:\n%s", st);
    free(st);
    char body[4096];
    cr_assert_eq(get("/health/ready", body, sizeof(body)), 200, "%s", body);
    cr_assert(strstr(body, so_routes) != NULL && strstr(body, "20-bad.conf") != NULL, "/health/ready names them:\n%s",
              body);

    /* `weft reload` (ExecReload's fallback, operators without systemd) is not stopped by them either. */
    const char *const rargs[] = {"reload", "-c", srv.conf, NULL};
    rc = wt_run(&out, rargs, NULL);
    cr_assert_eq(rc, 1, "no pid_file in this config: %s", out);
    cr_assert(strstr(out, "sets no pid_file") != NULL, "it got past the config: %s", out);
    free(out);

    /* The same files stay out of a reload without refusing it. */
    wt_server admin = srv;
    admin.port = srv.admin_port;
    wt_resp r;
    cr_assert_eq(wt_http(&admin, "POST", "/reload", "", &r), 0);
    cr_assert_eq(r.status, 202, "%s", r.body);
    wt_resp_free(&r);
    wait_generation(2);
    log = wt_read_log(&srv);
    snprintf(line, sizeof(line), "drop-in %s still refused", so_routes);
    cr_assert(strstr(log, line) != NULL, "%s in:\n%s", line, log);
    free(log);

    /* The main config's own errors still fail -t. */
    char badmain[400];
    snprintf(badmain, sizeof(badmain), "%s/broken.conf", srv.dir);
    wt_write_file_atomic(badmain, "threads = ;\n");
    const char *const bargs[] = {"-t", "-c", badmain, NULL};
    rc = wt_run(&out, bargs, NULL);
    cr_assert_eq(rc, 1, "%s", out);
    free(out);
    wt_finish(&srv);
}

/* README's author loop on a fresh clone: the parent directory does not exist yet. */
Test(dropin, new_plugin_creates_missing_parent_directories)
{
    char dir[400], out_path[500];
    snprintf(dir, sizeof(dir), "%s/fresh/plugins-dev", plugdir);
    const char *const args[] = {"new-plugin", "greeter", dir, NULL};
    char *out = NULL;
    int rc = wt_run(&out, args, NULL);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    struct stat st;
    snprintf(out_path, sizeof(out_path), "%s/greeter/greeter.routes", dir);
    cr_assert_eq(stat(out_path, &st), 0, "%s", out_path);
    wt_finish(&srv);
}
