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
#include <sys/wait.h>
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

/* Every line of `log` up to a sanitizer's own report (an ASan build prints
 * one after weft's when a handler faults) is one JSON object with time and
 * level; calls `each` on it. Returns how many lines there were. */
static int each_json_line(char *log, void (*each)(json_t *o, const char *line, void *ud), void *ud)
{
    int lines = 0;
    for (char *save, *line = strtok_r(log, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "==", 2) == 0 || strstr(line, "Sanitizer") != NULL)
            break;
        json_error_t err;
        json_t *o = json_loads(line, 0, &err);
        cr_assert_not_null(o, "not one JSON object: '%s' (%s)", line, err.text);
        cr_assert(json_is_string(json_object_get(o, "time")) && json_is_string(json_object_get(o, "level")) &&
                      json_is_string(json_object_get(o, "msg")),
                  "time, level, msg: %s", line);
        each(o, line, ud);
        json_decref(o);
        lines++;
    }
    return lines;
}

/* A config with log.format = "json" and one reactive route to a fixture plugin (in WEFT_FIXTURE_DIR `subdir`). */
static void json_conf(char *conf, size_t size, const char *listen, const char *subdir, const char *path,
                      const char *plugin)
{
    wt_write_conf(&srv, "");
    snprintf(conf, size,
             "threads = 1;\n%s\n" WT_ADMIN "\nlog = { format = \"json\"; };\nplugin_dirs = [\"%s%s\"];\n"
             "routes = ( { path = \"%s\"; plugin = \"%s\"; dispatch = \"reactive\"; } );\n",
             listen, WEFT_FIXTURE_DIR, subdir, path, plugin);
}

typedef struct first_seen {
    const char *odd_name;
    int route, odd;
} first_seen;

static void first_lines(json_t *o, const char *line, void *ud)
{
    first_seen *seen = ud;
    const char *msg = json_string_value(json_object_get(o, "msg"));
    if (strcmp(msg, "reqinfo says hello") == 0) {
        const char *route = json_string_value(json_object_get(o, "route"));
        const char *plugin = json_string_value(json_object_get(o, "plugin"));
        const char *id = json_string_value(json_object_get(o, "request_id"));
        cr_assert(route != NULL && strcmp(route, "/x") == 0, "%s", line);
        cr_assert(plugin != NULL && strcmp(plugin, "reqinfo") == 0, "%s", line);
        cr_assert(id != NULL && id[0] != '\0', "%s", line);
        seen->route = 1;
    }
    if (strstr(msg, seen->odd_name) != NULL)
        seen->odd = 1;
}

Test(logs, json_format_is_one_object_per_line, .timeout = 60)
{
    char conf[2048];
    json_conf(conf, sizeof(conf), WT_LISTEN, "", "/x", "reqinfo");
    /* A name the encoder must escape: a quote and a backslash, in a refused drop-in's file name. */
    char routesd[400], odd[500];
    snprintf(routesd, sizeof(routesd), "%s/routes.d", srv.dir);
    cr_assert_eq(mkdir(routesd, 0755), 0);
    snprintf(odd, sizeof(odd), "%s/q\"u\\ote.conf", routesd);
    wt_write_file_atomic(odd, "routes = ( oops );\n");
    wt_start(&srv, conf);
    get_ok("/x?do=log");
    char *log = wt_wait_log(&srv, "reqinfo says hello", 10000);
    first_seen seen = {.odd_name = odd};
    int lines = each_json_line(log, first_lines, &seen);
    cr_assert(lines >= 3 && seen.route, "%d lines:\n%s", lines, log);
    cr_assert(seen.odd, "the refused file's name, escaped and decoded back: %s", odd);
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

typedef struct seen {
    int latin1, quotes, euros_cut, xff;
} seen;

static void note_lines(json_t *o, const char *line, void *ud)
{
    seen *s = ud;
    const char *msg = json_string_value(json_object_get(o, "msg"));
    int cut = json_is_true(json_object_get(o, "truncated"));
    if (strcmp(msg, "note: caf\xef\xbf\xbd \xef\xbf\xbd!") == 0)
        s->latin1 = 1;
    if (strncmp(msg, "note: \"\"\"", 9) == 0 && strspn(msg + 6, "\"") == 2000 && !cut)
        s->quotes = 1;
    if (strncmp(msg, "note: \xe2\x82\xac", 9) == 0 && cut && strcmp(msg + strlen(msg) - 3, "...") == 0)
        s->euros_cut = (strlen(msg) - 6 - 3) % 3 == 0; /* whole euro signs before the mark */
    if (strstr(msg, "ignoring a malformed X-Forwarded-For hop from a trusted proxy: '\xef\xbf\xbd") != NULL)
        s->xff = 1;
    (void)line;
}

static char *repeat(const char *unit, size_t times, const char *prefix)
{
    size_t n = strlen(unit), p = strlen(prefix);
    char *s = malloc(p + n * times + 1);
    cr_assert_not_null(s);
    memcpy(s, prefix, p);
    for (size_t i = 0; i < times; i++)
        memcpy(s + p + i * n, unit, n);
    s[p + n * times] = '\0';
    return s;
}

static void get_with(const char *path, const char *header)
{
    wt_resp r;
    const char *h[] = {header, NULL};
    cr_assert_eq(wt_http_headers(&srv, "GET", path, h, NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s: %s", path, r.body);
    wt_resp_free(&r);
}

/* Issue 44 #8: a plugin logging a client's 8-bit header, a long message of
 * quotes or euro signs, weft's own warning quoting a trusted proxy's 8-bit
 * X-Forwarded-For: each line JSON with time and level (it was
 * {"msg":"out of memory"}, or cut mid-object at 4,094 bytes). */
Test(logs, json_lines_stay_json_whatever_the_bytes, .timeout = 60)
{
    char conf[2048];
    json_conf(conf, sizeof(conf), "listen = ( { address = \"127.0.0.1:0\"; trusted_proxies = [\"127.0.0.1\"]; } );", "",
              "/x", "reqinfo");
    wt_start(&srv, conf);
    get_with("/x?do=lognote", "X-Note: caf\xe9 \xff!");
    char *quotes = repeat("\"", 2000, "X-Note: "), *euros = repeat("\xe2\x82\xac", 700, "X-Note: ");
    get_with("/x?do=lognote", quotes);
    get_with("/x?do=lognote", euros);
    get_with("/x", "X-Forwarded-For: \xfe\xff");
    get_ok("/x?do=log");
    char *log = wt_wait_log(&srv, "reqinfo says hello", 10000);
    seen s = {0};
    int lines = each_json_line(log, note_lines, &s);
    cr_assert(s.latin1 && s.quotes && s.euros_cut && s.xff, "latin1 %d quotes %d euros %d xff %d in %d lines", s.latin1,
              s.quotes, s.euros_cut, s.xff, lines);
    free(log);
    free(quotes);
    free(euros);
    wt_finish(&srv);
    wt_rm_rf(srv.dir);
}

typedef struct crash_seen {
    int fatal, frames;
} crash_seen;

static void crash_lines(json_t *o, const char *line, void *ud)
{
    crash_seen *s = ud;
    const char *msg = json_string_value(json_object_get(o, "msg"));
    const char *route = json_string_value(json_object_get(o, "route"));
    const char *plugin = json_string_value(json_object_get(o, "plugin"));
    if (strncmp(msg, "weft: FATAL: SIGSEGV in route /c (plugin crashy ", 48) == 0) {
        cr_assert(route != NULL && strcmp(route, "/c") == 0 && plugin != NULL && strcmp(plugin, "crashy") == 0, "%s",
                  line);
        cr_assert_str_eq(json_string_value(json_object_get(o, "level")), "error");
        s->fatal = 1;
    }
    if (strncmp(msg, "backtrace #", 11) == 0 && strstr(msg, "[0x") != NULL)
        s->frames++;
}

/* The crash report too: the FATAL line and each backtrace frame a JSON line
 * (they were plain text inside the JSON error log). */
Test(logs, json_crash_report_is_json_lines, .timeout = 60)
{
    char conf[2048];
    json_conf(conf, sizeof(conf), WT_LISTEN, "/crashy", "/c", "crashy");
    wt_start(&srv, conf);
    wt_resp r;
    wt_http(&srv, "GET", "/c?crash=1", NULL, &r); /* no answer: the process dies */
    wt_resp_free(&r);
    int status;
    double t0 = wt_now_ms();
    while (waitpid(srv.pid, &status, WNOHANG) == 0) {
        cr_assert_lt(wt_now_ms() - t0, 20000.0, "weft survived a segfaulting handler?");
        usleep(10000);
    }
    srv.pid = 0;
    char *log = wt_read_log(&srv);
    crash_seen s = {0};
    each_json_line(log, crash_lines, &s);
    cr_assert(s.fatal && s.frames >= 3, "fatal %d, %d frames", s.fatal, s.frames);
    free(log);
    wt_finish(&srv);
    wt_rm_rf(srv.dir);
}
