/*
 * Logs the operator's way: logrotate moves the files away and weft opens
 * them again by path on SIGUSR1 and on a reload; log.format = "json" writes
 * one JSON object per line (time, level, msg, route, plugin, request_id).
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static wt_server srv;
static char access_log[400];

static void get_ok(const char *path)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s: %s", path, r.body);
    wt_resp_free(&r);
}

/* The access log line of `path` appears in `file` (h2o writes it once the response is done). */
static void wait_file_has(const char *file, const char *needle)
{
    for (double t0 = wt_now_ms(); wt_now_ms() - t0 < 10000; usleep(20000)) { /* poll with a deadline */
        char *text = wt_read_file(file);
        int found = text != NULL && strstr(text, needle) != NULL;
        free(text);
        if (found)
            return;
    }
    char *text = wt_read_file(file);
    cr_assert_fail("'%s' never appeared in %s:\n%s", needle, file, text != NULL ? text : "(no file)");
}

/* Moves `file` to file.N, as logrotate does (rename, no copy). */
static void rotate(const char *file, int n, char *moved, size_t size)
{
    snprintf(moved, size, "%s.%d", file, n);
    cr_assert_eq(rename(file, moved), 0, "%s", file);
}

static void start_with_logs(void)
{
    wt_write_conf(&srv, "");
    snprintf(access_log, sizeof(access_log), "%s/access.log", srv.dir);
    char conf[2048];
    /* error_log is the harness's own log path: the same file the server
     * would write to anyway, now opened (and reopened) by weft. */
    snprintf(conf, sizeof(conf),
             "threads = 1;\n" WT_LISTEN "\n" WT_ADMIN "\n"
             "log = { access_log = \"%s\"; error_log = \"%s\"; };\n"
             "routes = (" WT_HELLO_ROUTE ");\n",
             access_log, srv.log);
    wt_start(&srv, conf);
}

Test(logs, sigusr1_and_reload_reopen_both_logs, .timeout = 60)
{
    start_with_logs();
    get_ok("/hello?first");
    wait_file_has(access_log, "GET /hello?first");

    char old_access[500], old_error[500];
    rotate(access_log, 1, old_access, sizeof(old_access));
    rotate(srv.log, 1, old_error, sizeof(old_error));
    kill(srv.pid, SIGUSR1);
    free(wt_wait_log(&srv, "logs reopened (SIGUSR1)", 10000)); /* in the new error log */
    get_ok("/hello?second");
    wait_file_has(access_log, "GET /hello?second");
    char *old = wt_read_file(old_access);
    cr_assert(old != NULL && strstr(old, "?first") != NULL && strstr(old, "?second") == NULL,
              "the moved file stops growing:\n%s", old);
    free(old);
    old = wt_read_file(old_error);
    cr_assert(old != NULL && strstr(old, "logs reopened") == NULL, "%s", old);
    free(old);

    /* A reload (systemctl reload, weft reload) reopens them too. */
    rotate(access_log, 2, old_access, sizeof(old_access));
    rotate(srv.log, 2, old_error, sizeof(old_error));
    kill(srv.pid, SIGHUP);
    free(wt_wait_log(&srv, "logs reopened (SIGHUP)", 10000));
    get_ok("/hello?third");
    wait_file_has(access_log, "GET /hello?third");
    struct stat st;
    cr_assert_eq(stat(access_log, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0640, "created 0640, not world-readable: %o", st.st_mode & 0777);
    wt_finish(&srv);
    wt_rm_rf(srv.dir);
}

Test(logs, json_format_is_one_object_per_line, .timeout = 60)
{
    wt_write_conf(&srv, "");
    char conf[2048];
    snprintf(conf, sizeof(conf),
             "threads = 1;\n" WT_LISTEN "\n" WT_ADMIN "\nlog = { format = \"json\"; };\n"
             "plugin_dirs = [\"%s\"];\n"
             "routes = ( { path = \"/x\"; plugin = \"reqinfo\"; dispatch = \"reactive\"; } );\n",
             WEFT_FIXTURE_DIR);
    /* A name the encoder must escape: a quote and a backslash, in a refused drop-in's file name. */
    char routesd[400], odd[500];
    snprintf(routesd, sizeof(routesd), "%s/routes.d", srv.dir);
    cr_assert_eq(mkdir(routesd, 0755), 0);
    snprintf(odd, sizeof(odd), "%s/q\"u\\ote.conf", routesd);
    wt_write_file_atomic(odd, "routes = ( oops );\n");
    wt_start(&srv, conf);
    get_ok("/x?do=log");
    char *log = wt_wait_log(&srv, "reqinfo says hello", 10000);
    int lines = 0, seen_route = 0, seen_odd = 0;
    for (char *save, *line = strtok_r(log, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        json_error_t err;
        json_t *o = json_loads(line, 0, &err);
        cr_assert_not_null(o, "not one JSON object: '%s' (%s)", line, err.text);
        cr_assert(json_is_string(json_object_get(o, "time")) && json_is_string(json_object_get(o, "level")) &&
                      json_is_string(json_object_get(o, "msg")),
                  "time, level, msg: %s", line);
        const char *msg = json_string_value(json_object_get(o, "msg"));
        if (strcmp(msg, "reqinfo says hello") == 0) {
            const char *route = json_string_value(json_object_get(o, "route"));
            const char *plugin = json_string_value(json_object_get(o, "plugin"));
            const char *id = json_string_value(json_object_get(o, "request_id"));
            cr_assert(route != NULL && strcmp(route, "/x") == 0, "%s", line);
            cr_assert(plugin != NULL && strcmp(plugin, "reqinfo") == 0, "%s", line);
            cr_assert(id != NULL && id[0] != '\0', "%s", line);
            seen_route = 1;
        }
        if (strstr(msg, odd) != NULL)
            seen_odd = 1;
        json_decref(o);
        lines++;
    }
    cr_assert(lines >= 3 && seen_route, "%d lines:\n%s", lines, log);
    cr_assert(seen_odd, "the refused file's name, escaped and decoded back: %s", odd);
    free(log);
    wt_finish(&srv);
    wt_rm_rf(srv.dir);
}

/* The package's logrotate rule: rename (no copytruncate), then the signal
 * tested above. logrotate itself runs in the booted-systemd stage. */
Test(logs, debian_logrotate_renames_and_signals_usr1)
{
    char *rule = wt_read_file(WEFT_SOURCE_DIR "/debian/weft.logrotate");
    cr_assert_not_null(rule, "debian/weft.logrotate is missing");
    cr_assert(strstr(rule, "/var/log/weft/*.log {") != NULL, "%s", rule);
    cr_assert(strstr(rule, "su weft weft") != NULL, "/var/log/weft belongs to weft: %s", rule);
    cr_assert(strstr(rule, "copytruncate") == NULL, "weft reopens: no copy needed: %s", rule);
    cr_assert(strstr(rule, "--signal=USR1 weft.service") != NULL && strstr(rule, "kill -USR1") != NULL, "%s", rule);
    free(rule);
}

/* A relative log path is the config file's neighbour, wherever weft was
 * started from (the test's working directory is the build's, not srv.dir). */
Test(logs, relative_log_paths_resolve_from_the_config_file, .timeout = 60)
{
    wt_write_conf(&srv, "");
    wt_start(&srv, "threads = 1;\n" WT_LISTEN "\n" WT_ADMIN "\n"
                   "log = { access_log = \"relative-access.log\"; };\n"
                   "routes = (" WT_HELLO_ROUTE ");\n");
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", "/hello?relative", NULL, &r), 0);
    wt_resp_free(&r);
    char path[600];
    snprintf(path, sizeof(path), "%s/relative-access.log", srv.dir);
    wait_file_has(path, "GET /hello?relative");
    cr_assert_neq(access("relative-access.log", F_OK), 0, "not in the working directory");
    wt_finish(&srv);
}
