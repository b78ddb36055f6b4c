/*
 * The plugin author's loop, end to end against the real binary:
 *   - `weft new-plugin` → make → load in a normal weft → request;
 *   - `weft dev`: rebuild on save, the build-error page while the last good
 *     version stays loaded, recovery;
 *   - the Dev UI in headless Chromium (DOM, screenshot, and a real click on
 *     the reload button driven through chromedriver).
 *
 * Every build here uses this source tree's SDK header: pkg-config is pointed
 * at an empty directory, so an installed weft-dev (possibly older) never
 * decides what is being tested. Children get PR_SET_PDEATHSIG, so a test
 * killed by its timeout leaves no server or browser behind.
 *
 * Artifacts (screenshots, the dumped DOM) go to <build>/artifacts/, derived
 * from WEFT_BIN (<build>/server/weft), or to $WEFT_TEST_ARTIFACTS.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

extern char **environ;

/* ---- small utilities ---- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[8192];
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            buf = realloc(buf, cap);
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (buf == NULL)
        buf = calloc(1, 1);
    buf[len] = '\0';
    return buf;
}

/* The way editors and the docs say to save: write a temporary file, rename it
 * over the old one (the watcher only ever sees complete files). The temporary
 * name ends in neither .c nor .h, so writing it triggers nothing. */
static void write_file_atomic(const char *path, const char *text)
{
    char tmp[4200];
    const char *slash = strrchr(path, '/');
    snprintf(tmp, sizeof(tmp), "%.*s/.%s.tmp", (int)(slash - path), path, slash + 1);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f, "cannot write %s: %s", tmp, strerror(errno));
    cr_assert_geq(fputs(text, f), 0);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(rename(tmp, path), 0, "rename %s -> %s: %s", tmp, path, strerror(errno));
}

/* Replaces the first `from` in the file with `to` (write-then-rename); returns
 * the 1-based line where `to` starts. */
static int edit_file(const char *path, const char *from, const char *to)
{
    char *text = read_file(path);
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
    write_file_atomic(path, out);
    free(out);
    free(text);
    return line;
}

static void make_tmpdir(char *dir, size_t size)
{
    snprintf(dir, size, "/tmp/weft-devloop-XXXXXX");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static void rm_rf(const char *dir)
{
    if (dir[0] == '\0' || strncmp(dir, "/tmp/weft-devloop-", 18) != 0)
        return;
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        cr_log_warn("could not remove %s", dir);
}

static char *last_lines(const char *text, int n)
{
    const char *p = text + strlen(text);
    while (p > text && n >= 0)
        if (*--p == '\n')
            n--;
    return strdup(p);
}

/*
 * The environment of a child: ours, minus anything that would make the test
 * depend on the machine, plus `set` ("NAME=value" adds or replaces).
 */
static char **child_env(const char *const *set)
{
    static const char *const drop[] = {"WEFT_PLUGIN_PATH=", "PORT=",      "PGHOST=",          "PGSERVICE=",
                                       "PGDATABASE=",       "PGPORT=",    "PKG_CONFIG_PATH=", "PKG_CONFIG_LIBDIR=",
                                       "WEFT_CFLAGS=",      NULL};
    size_t n = 0, k = 0;
    while (environ[n] != NULL)
        n++;
    while (set != NULL && set[k] != NULL)
        k++;
    char **env = calloc(n + k + 1, sizeof(char *));
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int skip = 0;
        for (size_t d = 0; drop[d] != NULL && !skip; d++)
            skip = strncmp(environ[i], drop[d], strlen(drop[d])) == 0;
        for (size_t e = 0; e < k && !skip; e++) {
            size_t len = (size_t)(strchr(set[e], '=') - set[e]) + 1;
            skip = strncmp(environ[i], set[e], len) == 0;
        }
        if (!skip)
            env[o++] = environ[i];
    }
    for (size_t e = 0; e < k; e++)
        env[o++] = (char *)set[e];
    return env;
}

/* fork + exec with stdout/stderr into `log` (stdout into `out` when given). */
static pid_t spawn(const char *const *argv, const char *const *set, const char *out, const char *log, int own_group)
{
    char **env = child_env(set);
    pid_t pid = fork();
    cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
    if (pid == 0) {
        if (own_group)
            setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        int ofd = out != NULL ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644) : lfd;
        int nul = open("/dev/null", O_RDONLY);
        dup2(nul, STDIN_FILENO);
        dup2(ofd, STDOUT_FILENO);
        dup2(lfd, STDERR_FILENO);
        execvpe(argv[0], (char *const *)argv, env);
        dprintf(lfd, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (own_group)
        setpgid(pid, pid); /* also from here: no race with the child's own call */
    free(env);
    return pid;
}

/* Waits up to `timeout_ms`; on timeout kills the child (its group when it has one). Returns the exit status. */
static int wait_child(pid_t pid, double timeout_ms, int group, int *timed_out)
{
    int status = 0;
    double deadline = now_ms() + timeout_ms;
    *timed_out = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (now_ms() > deadline) {
            *timed_out = 1;
            kill(group ? -pid : pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        usleep(20000);
    }
    if (group)
        kill(-pid, SIGKILL); /* helpers the command left behind (a browser's zygote, ...) */
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs a command to completion; its output (stdout+stderr) is returned in *output. */
static int run(const char *const *argv, const char *const *set, const char *logdir, char **output, double timeout_ms)
{
    char log[512];
    snprintf(log, sizeof(log), "%s/run-%ld.log", logdir, (long)now_ms());
    unlink(log);
    int timed_out;
    int status = wait_child(spawn(argv, set, NULL, log, 1), timeout_ms, 1, &timed_out);
    *output = read_file(log);
    if (*output == NULL)
        *output = strdup("");
    unlink(log);
    cr_assert(!timed_out, "%s did not finish within %.0f s:\n%s", argv[0], timeout_ms / 1000, *output);
    return status;
}

/* Where pkg-config looks during these tests: nowhere. */
static const char *no_pkgconfig_env(const char *tmp)
{
    static char var[600];
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/no-pkgconfig", tmp);
    mkdir(dir, 0755);
    snprintf(var, sizeof(var), "PKG_CONFIG_LIBDIR=%s", dir);
    return var;
}

/* ---- the servers ---- */

static wt_server dev;       /* `weft dev`, when a test starts one */
static wt_server srv;       /* a normal weft */
static pid_t driver_pid;    /* chromedriver (own process group) */
static char tmp[128];       /* the test's private directory */

static void setup(void)
{
    /* The loader refuses group-writable plugins; pin the mask so a CI
     * runner's umask 002 cannot change the outcome (see the umask test). */
    umask(022);
    make_tmpdir(tmp, sizeof(tmp));
}

static void stop_expect_0(wt_server *s, const char *what)
{
    if (s->pid <= 0)
        return;
    int status = wt_stop(s);
    char *log = wt_read_log(s);
    cr_expect_eq(status, 0, "%s exited with %d:\n%s", what, status, log);
    free(log);
}

static void teardown(void)
{
    if (driver_pid > 0) {
        kill(-driver_pid, SIGTERM);
        int timed_out;
        wait_child(driver_pid, 5000, 1, &timed_out);
        driver_pid = 0;
    }
    stop_expect_0(&dev, "weft dev");
    stop_expect_0(&srv, "weft");
    rm_rf(tmp);
}

TestSuite(devloop, .init = setup, .fini = teardown, .timeout = 300);

/* The port of the first "<prefix>listening on http://HOST:PORT/" line, 0 if none yet. */
static int logged_port(const char *log, int admin)
{
    const char *needle = "listening on http://";
    for (const char *p = log; (p = strstr(p, needle)) != NULL; p++) {
        int is_admin = p - log >= 6 && strncmp(p - 6, "admin ", 6) == 0;
        if (is_admin != admin)
            continue;
        const char *end = strchr(p + strlen(needle), '/');
        const char *colon = NULL;
        for (const char *q = p + strlen(needle); end != NULL && q < end; q++)
            if (*q == ':')
                colon = q;
        if (colon != NULL)
            return atoi(colon + 1);
    }
    return 0;
}

/* `weft dev DIR` as a child, with no private PostgreSQL (PGHOST is set). */
static void dev_start(wt_server *s, const char *dir, const char *const *extra_set)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "%s", tmp);
    snprintf(s->log, sizeof(s->log), "%s/weft-dev.log", tmp);
    const char *set[8] = {"PGHOST=/nonexistent", no_pkgconfig_env(tmp)};
    size_t n = 2;
    for (size_t i = 0; extra_set != NULL && extra_set[i] != NULL && n < 7; i++)
        set[n++] = extra_set[i];
    const char *argv[] = {WEFT_BIN, "dev", dir, NULL};
    unlink(s->log);
    s->pid = spawn(argv, set, NULL, s->log, 0);
    /* Generous: the first build runs before the server listens. */
    double deadline = now_ms() + 60000;
    while (now_ms() < deadline) {
        char *log = wt_read_log(s);
        s->port = logged_port(log, 0);
        s->admin_port = logged_port(log, 1);
        int ready = strstr(log, " serving ") != NULL;
        free(log);
        if (ready && s->port > 0 && s->admin_port > 0)
            return;
        int status;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            s->pid = 0;
            char *l = wt_read_log(s);
            cr_assert_fail("weft dev exited during start-up (status %d):\n%s", status, l);
        }
        usleep(20000);
    }
    char *l = wt_read_log(s);
    cr_assert_fail("weft dev did not serve within 60 s:\n%s", l);
}

/* `weft new-plugin NAME DIR`, which must succeed. */
static void scaffold(const char *name, const char *dir)
{
    char *out = NULL;
    const char *args[] = {"new-plugin", name, dir, NULL};
    int rc = wt_run(&out, args, NULL);
    cr_assert_eq(rc, 0, "weft new-plugin %s %s exited %d:\n%s", name, dir, rc, out);
    free(out);
}

/* A project for `weft dev` on ephemeral ports. */
static void dev_project(const char *name)
{
    scaffold(name, tmp);
    char path[300];
    snprintf(path, sizeof(path), "%s/weft.dev.conf", tmp);
    write_file_atomic(path, "listen = [\"127.0.0.1:0\"];\nadmin = { listen = \"127.0.0.1:0\"; };\n");
}

static void get(const wt_server *s, const char *path, wt_resp *r)
{
    cr_assert_eq(wt_http(s, "GET", path, NULL, r), 0, "GET %s: transport error", path);
}

static wt_server admin_of(const wt_server *s)
{
    wt_server a = *s;
    a.port = s->admin_port;
    return a;
}

static char *admin_get(const wt_server *s, const char *path)
{
    wt_server a = admin_of(s);
    wt_resp r;
    get(&a, path, &r);
    cr_assert_eq(r.status, 200, "admin GET %s: %ld %s", path, r.status, r.body);
    return r.body;
}

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

static long reloads_ok(const char *status)
{
    const char *p = strstr(status, "\"reloads\": {");
    cr_assert_not_null(p, "no reloads in /status:\n%s", status);
    p = strstr(p, "\n    \"ok\": "); /* the reloads object's own member, not last.ok (deeper) */
    cr_assert_not_null(p, "no reloads.ok in /status:\n%s", status);
    return atol(p + strlen("\n    \"ok\": "));
}

/* Polls GET path until it answers `status` with `want` in the body; returns the ms it took. */
static double wait_for(const wt_server *s, const char *path, long status, const char *want, double limit_ms)
{
    double t0 = now_ms();
    wt_resp r = {0};
    long last = 0;
    char *body = strdup("");
    while (now_ms() - t0 < limit_ms) {
        int rc = wt_http(s, "GET", path, NULL, &r);
        last = rc == 0 ? r.status : -1;
        free(body);
        body = r.body;
        if (last == status && strstr(body, want) != NULL) {
            free(body);
            return now_ms() - t0;
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
    const char *set[] = {no_pkgconfig_env(tmp), NULL};
    int rc = run(argv, set, tmp, &out, 120000);
    cr_assert_eq(rc, 0, "make -C %s exited %d:\n%s", projdir, rc, out);
    free(out);
}

Test(devloop, scaffolded_plugin_builds_loads_and_answers)
{
    scaffold("hello2", tmp);
    char proj[300], path[400];
    snprintf(proj, sizeof(proj), "%s/hello2", tmp);
    static const char *const files[] = {"hello2.c", "Makefile", "route.conf", "README.md"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", proj, files[i]);
        cr_assert_eq(stat(path, &st), 0, "new-plugin did not write %s", path);
    }
    make_project(proj);

    snprintf(path, sizeof(path), "%s/route.conf", proj);
    char *routes = read_file(path);
    cr_assert_not_null(routes);
    char *conf = NULL;
    cr_assert_geq(asprintf(&conf,
                           "threads = 2;\nlisten = [\"127.0.0.1:0\"];\nadmin = { listen = \"127.0.0.1:0\"; };\n"
                           "plugin_dirs = [\"%s\"];\nroutes = (\n%s\n);\n",
                           proj, routes),
                  0);
    free(routes);
    wt_start(&srv, conf);
    free(conf);

    static const char *const paths[] = {"/hello2", "/hello2/reactive"};
    for (size_t i = 0; i < 2; i++) {
        wt_resp r;
        get(&srv, paths[i], &r);
        cr_assert_eq(r.status, 200, "GET %s: %ld %s", paths[i], r.status, r.body);
        cr_assert_str_eq(r.body, "Hello from hello2\n", "GET %s", paths[i]);
        char ct[64];
        cr_assert_not_null(wt_header(&r, "content-type", ct, sizeof(ct)));
        cr_assert_str_eq(ct, "text/plain");
        wt_resp_free(&r);
    }
    char *status = admin_get(&srv, "/status");
    cr_assert(strstr(status, "\"dispatch\": \"coroutine\"") && strstr(status, "\"dispatch\": \"reactive\""),
              "route.conf's two policies: %s", status);
    free(status);
    cr_assert_eq(wt_stop(&srv), 0);
}

/* A name that is not a C identifier as it stands (leading digit, dash) still builds. */
Test(devloop, scaffold_makes_identifiers_of_odd_names)
{
    scaffold("9-lives", tmp);
    char proj[300];
    snprintf(proj, sizeof(proj), "%s/9-lives", tmp);
    make_project(proj);
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 1;\nlisten = [\"127.0.0.1:0\"];\nplugin_dirs = [\"%s\"];\n"
             "routes = ({ path = \"/nine\"; plugin = \"9-lives\"; dispatch = \"pool\"; });\n",
             proj);
    wt_start(&srv, conf);
    wt_resp r;
    get(&srv, "/nine", &r);
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

    scaffold("taken", tmp);
    char src[300];
    snprintf(src, sizeof(src), "%s/taken/taken.c", tmp);
    write_file_atomic(src, "/* mine */\n");
    const char *args[] = {"new-plugin", "taken", tmp, NULL};
    int rc = wt_run(&out, args, NULL);
    cr_assert_eq(rc, 1, "existing directory: exit %d, want 1:\n%s", rc, out);
    cr_assert(strstr(out, "/taken") != NULL && strstr(out, "exists") != NULL, "says which and why:\n%s", out);
    free(out);
    char *kept = read_file(src);
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
    dev_project("devplug");
    dev_start(&dev, tmp, NULL);
    char src[300];
    snprintf(src, sizeof(src), "%s/devplug/devplug.c", tmp);

    wt_resp r;
    get(&dev, "/devplug", &r);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    cr_assert_str_eq(r.body, "Hello from devplug\n");
    wt_resp_free(&r);
    char *status = admin_get(&dev, "/status");
    int load0 = route_plugin_load(status, "/devplug");
    cr_assert(strstr(status, "/.weft-dev/weft.conf") != NULL, "serves the generated config: %s", status);
    free(status);

    /* 1. save a change */
    edit_file(src, "\"Hello from devplug\"", "\"Howdy from devplug\"");
    double ms = wait_for(&dev, "/devplug", 200, "Howdy from devplug\n", 5000);
    wait_for(&dev, "/devplug/reactive", 200, "Howdy from devplug\n", 5000);
    status = admin_get(&dev, "/status");
    int load1 = route_plugin_load(status, "/devplug");
    free(status);
    cr_assert_gt(load1, load0, "a new version was loaded");
    cr_log_info("edit → new response in %.0f ms", ms);

    /* 2. a syntax error: the routes answer the build-error page, the last good version stays loaded */
    int line = edit_file(src, "    host->res_header(req, \"content-type\", \"text/plain\");",
                         "    int broken = ;\n    host->res_header(req, \"content-type\", \"text/plain\");");
    ms = wait_for(&dev, "/devplug", 500, "Build failed", 5000);
    cr_log_info("syntax error → build-error page in %.0f ms", ms);
    static const char *const paths[] = {"/devplug", "/devplug/reactive"};
    for (size_t i = 0; i < 2; i++) {
        get(&dev, paths[i], &r);
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
    /* Long enough for a wrongly installed build to have been swapped in (150 ms of quiet + load). */
    usleep(1500000);
    status = admin_get(&dev, "/status");
    cr_assert_eq(route_plugin_load(status, "/devplug"), load1,
                 "the last good version stays loaded while the build is broken:\n%s", status);
    cr_assert_eq(route_plugin_load(status, "/devplug/reactive"), load1, "%s", status);
    free(status);
    char *page = admin_get(&dev, "/dev");
    cr_assert(strstr(page, "class=\"fail\">failed") != NULL, "the Dev UI lists the failed build:\n%s", page);
    free(page);

    /* 3. fix it: the new good version answers */
    edit_file(src, "    int broken = ;\n", "");
    edit_file(src, "\"Howdy from devplug\"", "\"Fixed from devplug\"");
    ms = wait_for(&dev, "/devplug", 200, "Fixed from devplug\n", 5000);
    wait_for(&dev, "/devplug/reactive", 200, "Fixed from devplug\n", 5000);
    cr_log_info("fix → new good version in %.0f ms", ms);
    status = admin_get(&dev, "/status");
    cr_assert_gt(route_plugin_load(status, "/devplug"), load1, "%s", status);
    free(status);
    page = admin_get(&dev, "/dev");
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
    dev_project("masked");
    dev_start(&dev, tmp, NULL);
    umask(022);
    wt_resp r;
    get(&dev, "/masked", &r);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    cr_assert_str_eq(r.body, "Hello from masked\n");
    wt_resp_free(&r);
}

/* ---- c. the Dev UI in headless Chromium ---- */

static int in_path(const char *prog, char *out, size_t size)
{
    const char *path = getenv("PATH");
    char *copy = strdup(path != NULL ? path : "/usr/bin:/bin");
    int found = 0;
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d != NULL && !found; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, size, "%s/%s", d, prog);
        found = access(out, X_OK) == 0;
    }
    free(copy);
    return found;
}

static void artifact_path(const char *name, char *out, size_t size)
{
    char dir[512];
    const char *env = getenv("WEFT_TEST_ARTIFACTS");
    if (env != NULL && *env) {
        snprintf(dir, sizeof(dir), "%s", env);
    } else {
        /* WEFT_BIN is <build>/server/weft */
        snprintf(dir, sizeof(dir), "%s", WEFT_BIN);
        for (int i = 0; i < 2; i++) {
            char *slash = strrchr(dir, '/');
            cr_assert_not_null(slash, "cannot derive the build directory from %s", WEFT_BIN);
            *slash = '\0';
        }
        strcat(dir, "/artifacts");
    }
    cr_assert(mkdir(dir, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", dir, strerror(errno));
    snprintf(out, size, "%s/%s", dir, name);
}

/* Chromium writes its profile, cache and crash data under tmp, never in $HOME. */
static const char *const *browser_env(void)
{
    static char home[200], cfg[220], cache[220];
    static const char *set[4];
    snprintf(home, sizeof(home), "HOME=%s/browser-home", tmp);
    snprintf(cfg, sizeof(cfg), "XDG_CONFIG_HOME=%s/browser-home/.config", tmp);
    snprintf(cache, sizeof(cache), "XDG_CACHE_HOME=%s/browser-home/.cache", tmp);
    char dir[200];
    snprintf(dir, sizeof(dir), "%s/browser-home", tmp);
    mkdir(dir, 0700);
    set[0] = home;
    set[1] = cfg;
    set[2] = cache;
    set[3] = NULL;
    return set;
}

#define CHROMIUM_FLAGS                                                                                                \
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",                       \
        "--disable-background-networking", "--disable-component-update", "--disable-sync"

/* Checks the PNG signature and that IHDR says width x height (height 0: any). */
static void assert_png(const char *path, unsigned width, unsigned height)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "no screenshot at %s", path);
    unsigned char h[24];
    size_t n = fread(h, 1, sizeof(h), f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    cr_assert_eq(n, sizeof(h), "%s is truncated", path);
    cr_assert(memcmp(h, "\x89PNG\r\n\x1a\n", 8) == 0 && memcmp(h + 12, "IHDR", 4) == 0, "%s is not a PNG", path);
    unsigned w = (unsigned)h[16] << 24 | (unsigned)h[17] << 16 | (unsigned)h[18] << 8 | h[19];
    unsigned hh = (unsigned)h[20] << 24 | (unsigned)h[21] << 16 | (unsigned)h[22] << 8 | h[23];
    cr_assert(w == width && (height == 0 ? hh >= 300 : hh == height), "%s is %ux%u, want %ux%u", path, w, hh, width,
              height);
    cr_assert_gt(size, 5000, "%s is %ld bytes: a blank page?", path, size);
}

/* ---- WebDriver over HTTP (chromedriver), with libcurl ---- */

typedef struct wd_buf {
    char *data;
    size_t len;
} wd_buf;

static size_t wd_body(char *p, size_t size, size_t n, void *ud)
{
    wd_buf *b = ud;
    b->data = realloc(b->data, b->len + size * n + 1);
    memcpy(b->data + b->len, p, size * n);
    b->len += size * n;
    b->data[b->len] = '\0';
    return size * n;
}

static int wd_port;

/* One WebDriver command; returns the response body (malloc'd); fails the test on an HTTP or WebDriver error. */
static char *wd(const char *method, const char *path, const char *json)
{
    char url[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", wd_port, path);
    CURL *c = curl_easy_init();
    wd_buf b = {0};
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    hdr = curl_slist_append(hdr, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wd_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L); /* a new session starts a browser */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (json != NULL)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    char *body = b.data != NULL ? b.data : strdup("");
    cr_assert_eq(rc, CURLE_OK, "WebDriver %s %s: %s", method, path, curl_easy_strerror(rc));
    cr_assert_eq(status, 200, "WebDriver %s %s: HTTP %ld %.2000s", method, path, status, body);
    return body;
}

/* The string value of "key":"..." in a WebDriver response (no escapes in the values used here). */
static char *wd_string(const char *json, const char *key)
{
    char k[128];
    snprintf(k, sizeof(k), "\"%s\":\"", key);
    const char *p = strstr(json, k);
    cr_assert_not_null(p, "no %s in WebDriver response %.2000s", key, json);
    p += strlen(k);
    const char *end = strchr(p, '"');
    cr_assert_not_null(end);
    return strndup(p, (size_t)(end - p));
}

#define WD_ELEMENT "element-6066-11e4-a52e-4f735466cecf"

static char *wd_find(const char *session, const char *css)
{
    char path[256], json[256];
    snprintf(path, sizeof(path), "/session/%s/element", session);
    snprintf(json, sizeof(json), "{\"using\":\"css selector\",\"value\":\"%s\"}", css);
    char *resp = wd("POST", path, json);
    char *id = wd_string(resp, WD_ELEMENT);
    free(resp);
    return id;
}

static char *wd_text(const char *session, const char *css)
{
    char *id = wd_find(session, css);
    char path[512];
    snprintf(path, sizeof(path), "/session/%s/element/%s/text", session, id);
    free(id);
    char *resp = wd("GET", path, NULL);
    char *text = wd_string(resp, "value");
    free(resp);
    return text;
}

/* Polls an element's text until it starts with `want`. */
static void wd_wait_text(const char *session, const char *css, const char *want, double limit_ms)
{
    double t0 = now_ms();
    char *text = NULL;
    while (now_ms() - t0 < limit_ms) {
        free(text);
        text = wd_text(session, css);
        if (strncmp(text, want, strlen(want)) == 0) {
            free(text);
            return;
        }
        usleep(100000);
    }
    cr_assert_fail("%s never read '%s' within %.0f ms (last: '%s')", css, want, limit_ms, text);
}

static int b64(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static void write_base64(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    uint32_t acc = 0;
    int bits = 0;
    for (const char *p = text; *p && *p != '='; p++) {
        int v = b64(*p);
        if (v < 0)
            continue;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            fputc((int)((acc >> bits) & 0xff), f);
        }
    }
    fclose(f);
}

static void start_chromedriver(const char *driver)
{
    char log[300], port_arg[] = "--port=0";
    snprintf(log, sizeof(log), "%s/chromedriver.log", tmp);
    const char *argv[] = {driver, port_arg, NULL};
    driver_pid = spawn(argv, browser_env(), NULL, log, 1);
    double deadline = now_ms() + 30000;
    while (now_ms() < deadline) {
        char *text = read_file(log);
        const char *p = text != NULL ? strstr(text, "started successfully on port ") : NULL;
        if (p != NULL)
            wd_port = atoi(p + strlen("started successfully on port "));
        free(text);
        if (wd_port > 0)
            return;
        int status;
        if (waitpid(driver_pid, &status, WNOHANG) == driver_pid) {
            driver_pid = 0;
            char *l = read_file(log);
            cr_assert_fail("chromedriver exited (status %d):\n%s", status, l);
        }
        usleep(50000);
    }
    char *l = read_file(log);
    cr_assert_fail("chromedriver did not start within 30 s:\n%s", l);
}

Test(devloop, dev_ui_renders_and_its_reload_button_works_in_chromium)
{
    char chromium[512], driver[512];
    cr_assert(in_path("chromium", chromium, sizeof(chromium)),
              "chromium is not installed (not in PATH): this test needs Debian's chromium and chromium-driver "
              "packages (packaging/install-deps.sh test)");
    cr_assert(in_path("chromedriver", driver, sizeof(driver)),
              "chromedriver is not installed (not in PATH): this test needs Debian's chromium-driver package "
              "(packaging/install-deps.sh test)");
    dev_project("devui");
    dev_start(&dev, tmp, NULL);
    wt_resp r;
    get(&dev, "/devui", &r); /* something for the stats */
    cr_assert_eq(r.status, 200);
    wt_resp_free(&r);

    char url[128], profile[300], dom_path[300];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/dev", dev.admin_port);

    /* 1. the rendered DOM has the routes table with the plugin's routes */
    snprintf(profile, sizeof(profile), "--user-data-dir=%s/profile-dom", tmp);
    snprintf(dom_path, sizeof(dom_path), "%s/dom.html", tmp);
    const char *dump[] = {chromium, CHROMIUM_FLAGS, profile, "--dump-dom", url, NULL};
    char blog[300];
    snprintf(blog, sizeof(blog), "%s/chromium.log", tmp);
    int timed_out;
    int rc = wait_child(spawn(dump, browser_env(), dom_path, blog, 1), 120000, 1, &timed_out);
    char *dom = read_file(dom_path);
    char *blog_text = read_file(blog);
    cr_assert(!timed_out && rc == 0, "chromium --dump-dom: exit %d%s:\n%s", rc, timed_out ? " (timed out)" : "",
              blog_text);
    free(blog_text);
    cr_assert_not_null(dom);
    char art[600];
    artifact_path("devui.html", art, sizeof(art));
    write_file_atomic(art, dom);
    const char *table = strstr(dom, "<table id=\"routes\">");
    cr_assert_not_null(table, "no routes table in the DOM:\n%s", dom);
    const char *end = strstr(table, "</table>");
    cr_assert_not_null(end);
    char *routes = strndup(table, (size_t)(end - table));
    cr_assert(strstr(routes, "<td>/devui</td><td>devui</td>") != NULL, "the route /devui is listed:\n%s", routes);
    cr_assert(strstr(routes, "<td>/devui/reactive</td><td>devui</td>") != NULL, "and /devui/reactive:\n%s", routes);
    cr_assert(strstr(routes, "<td>coroutine</td>") != NULL && strstr(routes, "<td>reactive</td>") != NULL,
              "with their policies:\n%s", routes);
    free(routes);
    cr_assert(strstr(dom, "<button id=\"reload\"") != NULL, "a reload button:\n%s", dom);
    free(dom);

    /* 2. a screenshot, kept as an artifact */
    char shot[600], shot_arg[700];
    artifact_path("devui.png", shot, sizeof(shot));
    unlink(shot);
    snprintf(shot_arg, sizeof(shot_arg), "--screenshot=%s", shot);
    snprintf(profile, sizeof(profile), "--user-data-dir=%s/profile-shot", tmp);
    const char *snap[] = {chromium, CHROMIUM_FLAGS, profile, shot_arg, "--window-size=1200,900", url, NULL};
    rc = wait_child(spawn(snap, browser_env(), NULL, blog, 1), 120000, 1, &timed_out);
    blog_text = read_file(blog);
    cr_assert(!timed_out && rc == 0, "chromium --screenshot: exit %d%s:\n%s", rc, timed_out ? " (timed out)" : "",
              blog_text);
    free(blog_text);
    assert_png(shot, 1200, 900);
    cr_log_info("Dev UI screenshot: %s", shot);

    /* 3. click the reload button in a real browser, through WebDriver */
    start_chromedriver(driver);
    char caps[2048];
    snprintf(caps, sizeof(caps),
             "{\"capabilities\":{\"alwaysMatch\":{\"browserName\":\"chrome\",\"goog:chromeOptions\":{"
             "\"binary\":\"%s\",\"args\":[\"--headless\",\"--no-sandbox\",\"--disable-gpu\","
             "\"--disable-dev-shm-usage\",\"--no-first-run\",\"--disable-background-networking\","
             "\"--disable-component-update\",\"--disable-sync\",\"--window-size=1200,900\","
             "\"--user-data-dir=%s/profile-wd\"]}}}}",
             chromium, tmp);
    char *resp = wd("POST", "/session", caps);
    char *session = wd_string(resp, "sessionId");
    free(resp);
    char path[300], json[300];
    snprintf(path, sizeof(path), "/session/%s/url", session);
    snprintf(json, sizeof(json), "{\"url\":\"%s\"}", url);
    free(wd("POST", path, json));

    char *st = admin_get(&dev, "/status");
    long before = reloads_ok(st);
    free(st);
    char *button = wd_find(session, "#reload");
    snprintf(path, sizeof(path), "/session/%s/element/%s/click", session, button);
    free(button);
    free(wd("POST", path, "{}"));
    wd_wait_text(session, "#reload-status", "reload requested", 30000);

    /* the click reached the server: a reload ran, and the page's poller shows its outcome */
    double t0 = now_ms();
    long after = before;
    while (after <= before && now_ms() - t0 < 15000) {
        st = admin_get(&dev, "/status");
        after = reloads_ok(st);
        free(st);
        if (after <= before)
            usleep(100000);
    }
    cr_assert_gt(after, before, "reloads.ok went from %ld to %ld after the click", before, after);
    st = admin_get(&dev, "/status");
    cr_assert(strstr(st, "(admin /reload)") != NULL, "the reload came through admin /reload:\n%s", st);
    free(st);
    wd_wait_text(session, "#last-reload", "ok: ", 30000);

    snprintf(path, sizeof(path), "/session/%s/screenshot", session);
    resp = wd("GET", path, NULL);
    char *png = wd_string(resp, "value");
    free(resp);
    artifact_path("devui-after-reload.png", shot, sizeof(shot));
    write_base64(shot, png);
    free(png);
    assert_png(shot, 1200, 0); /* the viewport: the window less what headless Chromium reserves */

    snprintf(path, sizeof(path), "/session/%s", session);
    free(wd("DELETE", path, NULL));
    free(session);

    int code = wt_stop(&dev);
    char *log = wt_read_log(&dev);
    cr_assert_eq(code, 0, "weft dev exited %d on SIGTERM:\n%s", code, log);
    free(log);
}
