#include "devserver.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn.h"

void wt_dev_tmpdir(char *dir, size_t size)
{
    snprintf(dir, size, "/tmp/weft-devloop-XXXXXX");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

char **wt_dev_env(const char *const *set)
{
    static const char *const drop[] = {"WEFT_PLUGIN_PATH=", "PORT=",      "PGHOST=",          "PGSERVICE=",
                                       "PGDATABASE=",       "PGPORT=",    "PKG_CONFIG_PATH=", "PKG_CONFIG_LIBDIR=",
                                       "WEFT_CFLAGS=",      NULL};
    return wt_env(drop, set);
}

const char *wt_no_pkgconfig_env(const char *tmp)
{
    static char var[600];
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/no-pkgconfig", tmp);
    mkdir(dir, 0755);
    snprintf(var, sizeof(var), "PKG_CONFIG_LIBDIR=%s", dir);
    return var;
}

int wt_logged_port(const char *log, int admin)
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

void wt_dev_start(wt_server *s, const char *tmp, const char *dir, const char *const *extra_set)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "%s", tmp);
    snprintf(s->log, sizeof(s->log), "%s/weft-dev.log", tmp);
    const char *set[8] = {"PGHOST=/nonexistent", wt_no_pkgconfig_env(tmp)};
    size_t n = 2;
    for (size_t i = 0; extra_set != NULL && extra_set[i] != NULL && n < 7; i++)
        set[n++] = extra_set[i];
    const char *argv[] = {WEFT_BIN, "dev", dir, NULL};
    unlink(s->log);
    char **env = wt_dev_env(set);
    s->pid = wt_spawn(WEFT_BIN, argv, env, NULL, s->log, 0);
    free(env);
    /* Generous: the first build runs before the server listens. */
    double deadline = wt_now_ms() + 60000;
    while (wt_now_ms() < deadline) {
        char *log = wt_read_log(s);
        s->port = wt_logged_port(log, 0);
        s->admin_port = wt_logged_port(log, 1);
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

void wt_scaffold(const char *name, const char *dir)
{
    char *out = NULL;
    const char *args[] = {"new-plugin", name, dir, NULL};
    int rc = wt_run(&out, args, NULL);
    cr_assert_eq(rc, 0, "weft new-plugin %s %s exited %d:\n%s", name, dir, rc, out);
    free(out);
}

void wt_dev_project(const char *name, const char *tmp)
{
    wt_scaffold(name, tmp);
    char path[300];
    snprintf(path, sizeof(path), "%s/weft.dev.conf", tmp);
    wt_write_file_atomic(path, "listen = [\"127.0.0.1:0\"];\nadmin = { listen = \"127.0.0.1:0\"; };\n");
}

void wt_get(const wt_server *s, const char *path, wt_resp *r)
{
    cr_assert_eq(wt_http(s, "GET", path, NULL, r), 0, "GET %s: transport error", path);
}

char *wt_admin_get(const wt_server *s, const char *path)
{
    wt_server a = *s;
    a.port = s->admin_port;
    wt_resp r;
    wt_get(&a, path, &r);
    cr_assert_eq(r.status, 200, "admin GET %s: %ld %s", path, r.status, r.body);
    return r.body;
}

/* /status is pretty-printed JSON with sorted keys (jansson's JSON_INDENT(2) |
 * JSON_SORT_KEYS); the tests have no JSON library, so read it by its layout. */
long wt_reloads_ok(const char *status)
{
    const char *p = strstr(status, "\"reloads\": {");
    cr_assert_not_null(p, "no reloads in /status:\n%s", status);
    p = strstr(p, "\n    \"ok\": "); /* the reloads object's own member, not last.ok (deeper) */
    cr_assert_not_null(p, "no reloads.ok in /status:\n%s", status);
    return atol(p + strlen("\n    \"ok\": "));
}

void wt_stop_expect_0(wt_server *s, const char *what)
{
    if (s->pid <= 0)
        return;
    int status = wt_stop(s);
    char *log = wt_read_log(s);
    cr_expect_eq(status, 0, "%s exited with %d:\n%s", what, status, log);
    free(log);
}
