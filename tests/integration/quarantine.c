/*
 * A handler that crashes is named before the process dies, and its plugin
 * build is quarantined at the next start: its routes answer 503, the rest
 * serves, until `weft quarantine clear` or another build lifts it.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static char plugdir[128];

/* crashy.so copied into a private plugin directory, plus `extra` bytes at
 * the end: trailing bytes leave the ELF loadable but make it another build
 * (another SHA-256), as a rebuilt plugin would be. */
static void install_crashy(const char *extra)
{
    char src[512], tmp[256], dst[256];
    snprintf(src, sizeof(src), "%s/crashy/crashy.so", WEFT_FIXTURE_DIR);
    snprintf(tmp, sizeof(tmp), "%s/.crashy.tmp", plugdir);
    snprintf(dst, sizeof(dst), "%s/crashy.so", plugdir);
    int in = open(src, O_RDONLY), out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    cr_assert(in >= 0 && out >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0)
        cr_assert_eq(write(out, buf, (size_t)n), n);
    if (extra != NULL)
        cr_assert_eq(write(out, extra, strlen(extra)), (ssize_t)strlen(extra));
    close(in);
    close(out);
    cr_assert_eq(rename(tmp, dst), 0);
}

static void start(wt_server *s, const char *dispatch)
{
    snprintf(plugdir, sizeof(plugdir), "/tmp/weft-quarantine-XXXXXX");
    cr_assert_not_null(mkdtemp(plugdir));
    install_crashy(NULL);
    wt_write_conf(s, "");
    char conf[2048];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\n"
             "plugin_dirs = [\"%s\"];\npid_file = \"%s/run/weft.pid\";\n"
             "pools = ({ name = \"default\"; size = 2; queue = 100; });\n"
             "routes = (\n"
             WT_HELLO_ROUTE ",\n"
             "  { path = \"/c\"; plugin = \"crashy\"; dispatch = \"%s\"; }\n"
             ");\n",
             plugdir, s->dir, dispatch);
    wt_start(s, conf);
}

static long get(const wt_server *s, const char *path, char *body, size_t size, char *retry, size_t rsize)
{
    wt_resp r;
    if (wt_http(s, "GET", path, NULL, &r) != 0)
        return -1;
    long st = r.status;
    if (body != NULL)
        snprintf(body, size, "%s", r.body);
    if (retry != NULL && wt_header(&r, "retry-after", retry, rsize) == NULL)
        retry[0] = '\0';
    wt_resp_free(&r);
    return st;
}

static void wait_status(const wt_server *s, const char *path, long want, double limit_ms)
{
    double t0 = wt_now_ms();
    long st;
    while ((st = get(s, path, NULL, 0, NULL, 0)) != want) {
        if (wt_now_ms() - t0 > limit_ms) {
            char *log = wt_read_log(s);
            cr_assert_fail("%s answered %ld, not %ld; log:\n%s", path, st, want, log);
        }
        usleep(20000);
    }
}

/* Crashes the server through /c, checks the crash line, restarts it. */
static void crash_and_restart(wt_server *s, const char *dispatch)
{
    cr_assert_eq(get(s, "/c", NULL, 0, NULL, 0), 200);
    get(s, "/c?crash=1", NULL, 0, NULL, 0);
    double t0 = wt_now_ms();
    int status;
    while (waitpid(s->pid, &status, WNOHANG) == 0) {
        cr_assert_lt(wt_now_ms() - t0, 20000.0, "weft survived a segfaulting handler?");
        usleep(10000);
    }
    s->pid = 0;
    /* SIGSEGV; SIGABRT or an exit status when a sanitizer reports it first */
    cr_assert(WIFSIGNALED(status) || WEXITSTATUS(status) != 0, "status %d", status);
    char *log = wt_read_log(s);
    char want[512];
    snprintf(want, sizeof(want), "weft: FATAL: SIGSEGV in route /c (plugin crashy 3.1.4, sha256 ");
    cr_assert(strstr(log, want) != NULL, "want '%s' in:\n%s", want, log);
    snprintf(want, sizeof(want), ", dispatch=%s) handling GET /c?crash=1; crash record %s/run/crash-crashy.rec",
             dispatch, s->dir);
    cr_assert(strstr(log, want) != NULL, "want '%s' in:\n%s", want, log);
    cr_assert(strstr(log, "backtrace follows\n") != NULL, "%s", log);
    free(log);

    wt_start(s, NULL);
    log = wt_read_log(s);
    cr_assert(strstr(log, "plugin crashy 3.1.4 (sha256 ") != NULL && strstr(log, "is QUARANTINED since") != NULL,
              "%s", log);
    free(log);
    char body[1024], retry[32];
    cr_assert_eq(get(s, "/hello", body, sizeof(body), NULL, 0), 200);
    cr_assert_eq(get(s, "/c", body, sizeof(body), retry, sizeof(retry)), 503);
    cr_assert(strstr(body, "plugin crashy is quarantined") != NULL, "%s", body);
    cr_assert(strcmp(retry, "300") == 0, "Retry-After: '%s'", retry);
    wt_server admin = *s;
    admin.port = s->admin_port;
    wt_resp r;
    cr_assert_eq(wt_http(&admin, "GET", "/status", NULL, &r), 0);
    cr_assert(strstr(r.body, "\"quarantined\": [") != NULL && strstr(r.body, "\"plugin\": \"crashy\"") != NULL &&
                  strstr(r.body, "crashed with SIGSEGV in route /c") != NULL,
              "%s", r.body);
    wt_resp_free(&r);
}

static void finish(wt_server *s)
{
    wt_finish(s);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", plugdir);
    cr_expect_eq(system(cmd), 0);
}

static void crash_then_clear(const char *dispatch)
{
    wt_server s = {0};
    start(&s, dispatch);
    crash_and_restart(&s, dispatch);
    const char *args[] = {"quarantine", "clear", "crashy", "-c", s.conf, NULL};
    char *out;
    cr_assert_eq(wt_run(&out, args, NULL), 0, "%s", out);
    cr_assert(strstr(out, "quarantine of plugin crashy lifted") != NULL, "%s", out);
    free(out);
    wait_status(&s, "/c", 200, 10000);
    finish(&s);
}

Test(quarantine, pool_handler_crash_is_named_and_quarantined, .timeout = 120) { crash_then_clear("pool"); }
Test(quarantine, coroutine_handler_crash_is_named_and_quarantined, .timeout = 120) { crash_then_clear("coroutine"); }
Test(quarantine, reactive_handler_crash_is_named_and_quarantined, .timeout = 120) { crash_then_clear("reactive"); }

Test(quarantine, another_build_lifts_it, .timeout = 120)
{
    wt_server s = {0};
    start(&s, "pool");
    crash_and_restart(&s, "pool");
    install_crashy("\nrebuilt\n");
    char *log = wt_wait_log(&s, "reload: generation 2 serving", 10000);
    free(log);
    wait_status(&s, "/c", 200, 10000);
    log = wt_read_log(&s);
    cr_assert(strstr(log, "is for another build") != NULL, "%s", log);
    free(log);
    char rec[512];
    snprintf(rec, sizeof(rec), "%s/run/crash-crashy.rec", s.dir);
    cr_assert_neq(access(rec, F_OK), 0, "the obsolete record is removed");
    finish(&s);
}

Test(quarantine, clear_without_records_says_so, .timeout = 60)
{
    wt_server s = {0};
    wt_write_conf(&s, WT_LISTEN "\nstate_dir = \"state\";\n"
                      WT_HELLO_ROUTES "\n");
    const char *args[] = {"quarantine", "clear", "-c", s.conf, NULL};
    char *out;
    cr_assert_eq(wt_run(&out, args, NULL), 0, "%s", out);
    cr_assert(strstr(out, "no crash record in ") != NULL && strstr(out, "/state: nothing is quarantined") != NULL,
              "%s", out);
    free(out);
}

/* A coroutine stack overflow (caught on the guard page) is a handler crash
 * like any other: the crash line names route and plugin, a crash record is
 * written, and the restarted server quarantines the build instead of
 * crashing again on the next such request. Before, it printed the overflow
 * line and died with no record, so a restart crash-looped. */
Test(quarantine, coroutine_stack_overflow_is_recorded_and_quarantined, .timeout = 120)
{
    wt_server s = {0};
    wt_write_conf(&s, "");
    wt_startf(&s,
              "threads = 1;\n" WT_LISTEN "\n" WT_ADMIN "\npid_file = \"%s/run/weft.pid\";\n"
              "coroutine = { stack_size = 16384; };\n"
              "routes = (\n" WT_HELLO_ROUTE ",\n"
              "  { path = \"/coroutine/deep\"; plugin = \"deep\"; dispatch = \"coroutine\"; }\n);\n",
              s.dir);
    cr_assert_eq(get(&s, "/coroutine/deep?depth=4", NULL, 0, NULL, 0), 200, "shallow recursion fits");
    get(&s, "/coroutine/deep?depth=100000", NULL, 0, NULL, 0);
    double t0 = wt_now_ms();
    int status;
    while (waitpid(s.pid, &status, WNOHANG) == 0) {
        cr_assert_lt(wt_now_ms() - t0, 20000.0, "weft survived a stack overflow?");
        usleep(10000);
    }
    s.pid = 0;
    char *log = wt_read_log(&s);
    cr_assert(strstr(log, "coroutine stack overflow in route /coroutine/deep (stack size 16384 bytes)") != NULL,
              "%s", log);
    char want[512];
    snprintf(want, sizeof(want),
             "weft: FATAL: stack overflow (SIGSEGV) in route /coroutine/deep (plugin deep 1.0.0, sha256 ");
    cr_assert(strstr(log, want) != NULL, "want '%s' in:\n%s", want, log);
    snprintf(want, sizeof(want), ", dispatch=coroutine) handling GET /coroutine/deep?depth=100000; crash record %s/run/crash-deep.rec",
             s.dir);
    cr_assert(strstr(log, want) != NULL, "want '%s' in:\n%s", want, log);
    free(log);

    wt_start(&s, NULL);
    log = wt_read_log(&s);
    cr_assert(strstr(log, "plugin deep 1.0.0 (sha256 ") != NULL && strstr(log, "is QUARANTINED since") != NULL, "%s",
              log);
    free(log);
    char body[1024];
    cr_assert_eq(get(&s, "/hello", body, sizeof(body), NULL, 0), 200);
    cr_assert_eq(get(&s, "/coroutine/deep?depth=100000", body, sizeof(body), NULL, 0), 503);
    cr_assert(strstr(body, "plugin deep is quarantined") != NULL, "%s", body);
    wt_server admin = s;
    admin.port = s.admin_port;
    wt_resp r;
    cr_assert_eq(wt_http(&admin, "GET", "/status", NULL, &r), 0);
    cr_assert(strstr(r.body, "crashed with stack overflow in route /coroutine/deep") != NULL, "%s", r.body);
    wt_resp_free(&r);
    wt_finish(&s);
}
