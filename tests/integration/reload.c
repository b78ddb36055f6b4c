/* Hot reload: plugin swaps and config reloads under load lose no request. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "devserver.h"
#include "harness.h"

static wt_server srv;
static char plugdir[128];

/* Installs a build of the ver plugin the way operators must: write a
 * temporary file, then rename it over the old one. */
static void install_bytes(const char *src_path, const char *junk)
{
    char tmp[256], dst[256];
    snprintf(tmp, sizeof(tmp), "%s/.ver.so.tmp", plugdir);
    snprintf(dst, sizeof(dst), "%s/ver.so", plugdir);
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    cr_assert_geq(out, 0);
    if (junk != NULL) {
        cr_assert_eq(write(out, junk, strlen(junk)), (ssize_t)strlen(junk));
    } else {
        int in = open(src_path, O_RDONLY);
        cr_assert_geq(in, 0, "%s", src_path);
        char buf[65536];
        ssize_t n;
        while ((n = read(in, buf, sizeof(buf))) > 0)
            cr_assert_eq(write(out, buf, (size_t)n), n);
        close(in);
    }
    close(out);
    cr_assert_eq(rename(tmp, dst), 0);
}

static void install(char tag)
{
    char src[512];
    snprintf(src, sizeof(src), "%s/ver_%c/ver.so", WEFT_FIXTURE_DIR, tag);
    install_bytes(src, NULL);
}

static void write_conf(const char *tag, const char *dispatch)
{
    char conf[2048];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\n"
             "plugin_dirs = [\"%s\"];\npid_file = \"%s/weft.pid\";\n"
             "pools = ({ name = \"default\"; size = 4; queue = 1000; });\n"
             "routes = (\n"
             "  { path = \"/ver\"; plugin = \"ver\"; dispatch = \"%s\"; options = { tag = \"%s\"; }; },\n"
             "  { path = \"/pool/ver\"; plugin = \"ver\"; dispatch = \"pool\"; }\n"
             ");\n",
             plugdir, plugdir, dispatch, tag);
    wt_write_conf(&srv, conf);
}

static void setup(void)
{
    snprintf(plugdir, sizeof(plugdir), "/tmp/weft-plugins-test-XXXXXX");
    cr_assert_not_null(mkdtemp(plugdir));
    install('A');
    write_conf("t0", "coroutine");
    wt_start(&srv, NULL);
    cr_assert_gt(srv.admin_port, 0);
}

static void teardown(void)
{
    wt_suite_stop(&srv);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", plugdir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(reload, .init = setup, .fini = teardown, .timeout = 240);

static void body_of(const char *path, char *out, size_t size, long *status)
{
    wt_resp r;
    int rc = wt_http(&srv, "GET", path, NULL, &r);
    *status = rc == 0 ? r.status : -1;
    snprintf(out, size, "%s", r.body);
    wt_resp_free(&r);
}

/* Polls until GET path answers with `want` in its body; returns the ms it took. */
static double wait_for(const char *path, const char *want, double limit_ms)
{
    double t0 = wt_now_ms();
    char body[256] = "";
    long st = 0;
    while (wt_now_ms() - t0 < limit_ms) {
        body_of(path, body, sizeof(body), &st);
        if (st == 200 && strstr(body, want) != NULL)
            return wt_now_ms() - t0;
        usleep(10000);
    }
    cr_assert_fail("%s never answered '%s' within %.0f ms (last: %ld %s)", path, want, limit_ms, st, body);
    return -1;
}

static char *admin_status(void) { return wt_admin_get(&srv, "/status"); }

static void sighup(void) { cr_assert_eq(kill(srv.pid, SIGHUP), 0); }

/* ---- continuous load ---- */

Test(reload, swaps_and_reloads_under_load_lose_nothing)
{
    enum { CLIENTS = 50, ROUNDS = 20 };
    const char *paths[] = {"/ver?sleep_ms=20"};
    wt_load *load = wt_load_start(&srv, CLIENTS, paths, 1);
    double worst_swap = 0, worst_reload = 0;
    for (int round = 1; round <= ROUNDS; round++) {
        char tag = round % 2 ? 'B' : 'A';
        install(tag);
        char want[16];
        snprintf(want, sizeof(want), "ver=%c", tag);
        double ms = wait_for("/ver", want, 10000); /* a new version is probed in a child first */
        worst_swap = ms > worst_swap ? ms : worst_swap;

        char conftag[16], wanttag[24];
        snprintf(conftag, sizeof(conftag), "t%d", round);
        snprintf(wanttag, sizeof(wanttag), "tag=t%d\n", round);
        write_conf(conftag, "coroutine");
        sighup();
        ms = wait_for("/ver", wanttag, 10000);
        worst_reload = ms > worst_reload ? ms : worst_reload;
    }
    long ok, failed;
    char last_failure[256];
    wt_load_stop(load, &ok, &failed, last_failure, sizeof(last_failure));
    cr_assert_eq(failed, 0, "%ld of %ld requests failed during swaps (last: %s)", failed, ok + failed, last_failure);
    cr_assert_gt(ok, 100);
    cr_log_info("worst swap %.0f ms, worst reload %.0f ms, %ld requests", worst_swap, worst_reload, ok);
    wt_finish(&srv);
}

typedef struct held {
    char body[256];
    long status;
} held;

static void *long_request(void *arg)
{
    held *h = arg;
    body_of("/ver?sleep_ms=2000", h->body, sizeof(h->body), &h->status);
    return NULL;
}

static int mapped_copies(void)
{
    char path[64], line[1024];
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)srv.pid);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    int n = 0;
    char last[1024] = "";
    while (fgets(line, sizeof(line), f) != NULL) {
        char *p = strstr(line, "/weft-plugins-");
        if (p == NULL || strstr(p, "/ver.") == NULL || strcmp(p, last) == 0)
            continue;
        /* one library maps several segments; count distinct files */
        int seen = strstr(last, p) != NULL;
        snprintf(last, sizeof(last), "%s", p);
        n += !seen;
    }
    fclose(f);
    return n;
}

Test(reload, long_request_finishes_on_old_version_which_is_then_unloaded)
{
    wait_for("/ver", "ver=A", 1000);
    pthread_t t;
    held h = {0};
    pthread_create(&t, NULL, long_request, &h);
    wt_wait_metric(&srv, "weft_inflight_requests", 1, 10000);
    install('B');
    wait_for("/ver", "ver=B", 10000);
    char *st = admin_status();
    cr_assert(strstr(st, "\"version\": \"1.0.A\"") != NULL, "old version still loaded while in use: %s", st);
    free(st);
    cr_assert_eq(mapped_copies(), 2, "both versions mapped while the long request runs");
    pthread_join(t, NULL);
    cr_assert_eq(h.status, 200);
    cr_assert(strstr(h.body, "ver=A") != NULL, "the long request must finish on the version it started on: %s",
              h.body);
    double t0 = wt_now_ms();
    for (;;) {
        st = admin_status();
        /* /status drops the version when its generation is retired; the
         * dlclose follows on the reaper's next step: wait for both. */
        int gone = strstr(st, "\"version\": \"1.0.A\"") == NULL && mapped_copies() == 1;
        free(st);
        if (gone)
            break;
        cr_assert_lt(wt_now_ms() - t0, 10000.0,
                     "old version not unloaded and unmapped (dlclose) after its last request: %d copies mapped",
                     mapped_copies());
        usleep(50000);
    }
    /* logged once the retirement is done, which may come after the unmap */
    free(wt_wait_log(&srv, "retired", 10000));
    wt_finish(&srv);
}

Test(reload, broken_plugin_is_refused_and_old_keeps_serving)
{
    wait_for("/ver", "ver=A", 1000);
    install_bytes(NULL, "this is not an ELF file\n");
    char *log = wt_wait_log(&srv, "keeps serving", 10000); /* the summary, after the errors: the probe's own line says "refused" first */
    cr_assert(strstr(log, "plugin 'ver'") != NULL && strstr(log, "cannot load") != NULL, "%s", log);
    cr_assert(strstr(log, "keeps serving") != NULL, "%s", log);
    free(log);
    wait_for("/ver", "ver=A", 200);
    char *st = admin_status();
    cr_assert(strstr(st, "\"failed\": 1") != NULL, "%s", st);
    free(st);
    wt_finish(&srv);
}

/* PIDFILE.hold (debian/weft.preinst): a package upgrade unpacking new plugins. */
static void hold_file(char *path, size_t size)
{
    snprintf(path, size, "%s/weft.pid.hold", plugdir);
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    cr_assert_geq(fd, 0, "%s", path);
    close(fd);
}

Test(reload, a_package_hold_defers_plugin_swaps_until_it_is_released)
{
    wait_for("/ver", "ver=A", 1000);
    char hold[200];
    hold_file(hold, sizeof(hold));
    install('B');
    free(wt_wait_log(&srv, "plugin hot swaps held while", 10000));
    /* Held: well past the 150 ms debounce, still the old build. The
     * 'held' line comes once the change is due; a swap would follow it. */
    wait_for("/ver", "ver=A", 200);
    char *log = wt_read_log(&srv);
    cr_assert(strstr(log, "generation 2") == NULL, "swapped during the hold:\n%s", log);
    free(log);
    cr_assert_eq(unlink(hold), 0);
    free(wt_wait_log(&srv, "plugin hot swap hold released", 10000));
    free(wt_wait_log(&srv, "generation 2 serving", 10000));
    wait_for("/ver", "ver=B", 5000);
    wt_finish(&srv);
}

Test(reload, a_stale_package_hold_is_ignored_with_a_warning)
{
    wait_for("/ver", "ver=A", 1000);
    char hold[200];
    hold_file(hold, sizeof(hold));
    /* An hour old: the dpkg that made it died. */
    struct timespec old[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
    cr_assert_eq(utimensat(AT_FDCWD, hold, old, 0), 0);
    install('B');
    free(wt_wait_log(&srv, "a leftover of an upgrade that did not finish", 10000));
    free(wt_wait_log(&srv, "generation 2 serving", 10000));
    wait_for("/ver", "ver=B", 5000);
    wt_finish(&srv);
}

Test(reload, broken_config_is_refused_with_file_and_line)
{
    wait_for("/ver", "tag=t0", 1000);
    wt_write_conf(&srv, "threads = 2;\n" WT_LISTEN "\nroutes = (\n { path = \"/ver\"; plugin = \"ver\"; "
                        "dispatch = \"sideways\"; }\n);\n");
    /* `weft reload` checks the file first and refuses to signal */
    char *out;
    const char *args[] = {"reload", "-c", srv.conf, NULL};
    cr_assert_eq(wt_run(&out, args, NULL), 1, "%s", out);
    cr_assert(strstr(out, ":4:") != NULL, "%s", out);
    free(out);
    sighup(); /* and the server refuses it on its own too */
    char want[400];
    snprintf(want, sizeof(want), "%s:4: routes[0]: dispatch 'sideways'", srv.conf);
    char *log = wt_wait_log(&srv, "keeps serving", 3000); /* the summary, after the errors: the probe's own line says "refused" first */
    cr_assert(strstr(log, want) != NULL, "want '%s' in:\n%s", want, log);
    free(log);
    wait_for("/ver", "tag=t0", 200);
    /* a good config through `weft reload` (pid file) applies */
    write_conf("fixed", "pool");
    cr_assert_eq(wt_run(&out, args, NULL), 0, "%s", out);
    free(out);
    wait_for("/ver", "tag=fixed", 10000);
    wt_finish(&srv);
}

/* A reload that only changes a route's options says so: "1 changed", not 0. */
Test(reload, options_only_change_is_counted)
{
    write_conf("t1", "coroutine");
    sighup();
    char *log = wt_wait_log(&srv, "generation 2 serving", 3000);
    cr_assert(strstr(log, "route /ver changed: options") != NULL, "%s", log);
    cr_assert(strstr(log, "0 added, 0 removed, 1 changed") != NULL, "%s", log);
    free(log);
    wait_for("/ver", "tag=t1", 10000);
    wt_finish(&srv);
}

/* Restart-only settings: `weft reload` refuses before signalling, with the
 * very message the server logs when it is signalled anyway. */
Test(reload, weft_reload_refuses_restart_only_changes_like_the_server)
{
    char conf[2048];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\n"
             "plugin_dirs = [\"%s\"];\npid_file = \"%s/weft.pid\";\nlimits = { max_body = 4096; };\n"
             "pools = ({ name = \"default\"; size = 4; queue = 1000; });\n"
             "routes = ( { path = \"/ver\"; plugin = \"ver\"; dispatch = \"coroutine\"; options = { tag = \"t9\"; }; } );\n",
             plugdir, plugdir);
    wt_write_conf(&srv, conf);
    char *out;
    const char *args[] = {"reload", "-c", srv.conf, NULL};
    cr_assert_eq(wt_run(&out, args, NULL), 1, "%s", out);
    const char *start = strstr(out, "weft: ");
    cr_assert(start != NULL && strstr(start, "only change with a restart: limits.max_body") != NULL, "%s", out);
    char msg[1024];
    snprintf(msg, sizeof(msg), "%.*s", (int)strcspn(start + 6, "\n"), start + 6);
    free(out);
    sighup();
    char *log = wt_wait_log(&srv, "keeps serving", 3000); /* the summary, after the errors: the probe's own line says "refused" first */
    cr_assert(strstr(log, msg) != NULL, "the server says the same '%s':\n%s", msg, log);
    free(log);
    wait_for("/ver", "tag=t0", 200);
    wt_finish(&srv);
}

Test(reload, unsafe_permissions_are_refused)
{
    char so[200];
    snprintf(so, sizeof(so), "%s/ver.so", plugdir);
    cr_assert_eq(chmod(so, 0775), 0);
    sighup();
    char *log = wt_wait_log(&srv, "keeps serving", 10000); /* the summary, after the errors: the probe's own line says "refused" first */
    cr_assert(strstr(log, "writable by its group") != NULL, "%s", log);
    free(log);
    wait_for("/ver", "ver=A", 200);
    cr_assert_eq(chmod(so, 0755), 0);
    cr_assert_eq(chmod(plugdir, 0777), 0);
    sighup();
    log = wt_wait_log(&srv, "plugin directory", 10000);
    cr_assert(strstr(log, "writable by others") != NULL, "%s", log);
    free(log);
    cr_assert_eq(chmod(plugdir, 0700), 0);
    wt_finish(&srv);
}

static void reload_and_wait(int i)
{
    char tag[16], want[24];
    snprintf(tag, sizeof(tag), "r%d", i);
    snprintf(want, sizeof(want), "tag=r%d\n", i);
    write_conf(tag, i % 2 ? "pool" : "coroutine");
    sighup();
    wait_for("/ver", want, 5000);
}

Test(reload, two_hundred_reloads_do_not_grow_memory_or_fds)
{
    /* Generation 1 plus one per reload: measure once the one before the
     * serving generation is retired (its plugins finalised, pools joined),
     * as the server's log says, not after a fixed pause. */
    for (int i = 0; i < 20; i++)
        reload_and_wait(i);
    free(wt_wait_log(&srv, "generation 20 retired", 10000));
    long rss0 = wt_rss_kib(srv.pid);
    int fds0 = wt_fd_count(srv.pid);
    for (int i = 20; i < 220; i++)
        reload_and_wait(i);
    free(wt_wait_log(&srv, "generation 220 retired", 10000));
    long rss1 = wt_rss_kib(srv.pid);
    int fds1 = wt_fd_count(srv.pid);
    cr_log_info("RSS %ld -> %ld KiB, fds %d -> %d over 200 reloads", rss0, rss1, fds0, fds1);
    /* A leak per reload would show 200; the slack is a client connection
     * the server may not have seen closing yet when the count is taken. */
    cr_assert_leq(fds1, fds0 + 2, "file descriptors leaked: %d -> %d", fds0, fds1);
#ifndef __SANITIZE_ADDRESS__
    /* Under ASan freed memory sits in quarantine and TSan's shadow memory
     * grows with every thread, so RSS says nothing there; those builds check
     * for leaks and races instead. */
    if (getenv("WEFT_TEST_SANITIZER") == NULL)
        cr_assert_lt(rss1 - rss0, 4096, "RSS grew %ld KiB over 200 reloads", rss1 - rss0);
#endif
    wt_finish(&srv);
}

/*
 * A reload with a syntax error is refused and the server keeps serving. (The
 * first fuzz finding: libconfig 1.5 leaks a string token that is itself the
 * syntax error, so under ASan the server's exit at the end of this test fails
 * unless tests/lsan.supp suppresses that leak — see tests/fuzz/lsan.supp and
 * corpus/fuzz_config/leak-libconfig-*.)
 */
Test(reload, reload_with_syntax_error_is_refused)
{
    wait_for("/ver", "ver=A", 1000);
    char *good = wt_read_file(srv.conf);
    cr_assert_not_null(good);
    /* the string "/x" is the token the parser rejects (a '=' is missing) */
    wt_write_conf(&srv, "threads = 2;\n" WT_LISTEN "\nroutes = ( { path \"/x\"; plugin = \"hello\"; } );\n");
    sighup();
    char *log = wt_wait_log(&srv, "keeps serving", 5000); /* the summary, after the errors: the probe's own line says "refused" first */
    cr_assert(strstr(log, ":3:") != NULL, "%s", log);
    free(log);
    wt_write_conf(&srv, good);
    free(good);
    wait_for("/ver", "ver=A", 200);
    cr_assert_eq(kill(srv.pid, 0), 0, "after a refused reload: weft is gone");
    wt_finish(&srv);
}

static void wait_log_text(const char *needle) { free(wt_wait_log(&srv, needle, 5000)); }

Test(reload, restart_only_settings_are_refused_not_ignored)
{
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 3;\n" WT_LISTEN "\n" WT_ADMIN "\n"
             "plugin_dirs = [\"%s\"];\nroutes = ({ path = \"/ver\"; plugin = \"ver\"; dispatch = \"coroutine\"; "
             "options = { tag = \"threads\"; }; });\n",
             plugdir);
    wt_write_conf(&srv, conf);
    sighup();
    wait_log_text("only change with a restart: threads 2 -> 3");
    wait_for("/ver", "tag=t0", 200);
    wt_finish(&srv);
}

Test(reload, a_plugin_whose_init_fails_is_refused)
{
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\n"
             "plugin_dirs = [\"%s\"];\nroutes = ({ path = \"/ver\"; plugin = \"init_fails\"; dispatch = \"pool\"; });\n",
             plugdir);
    wt_write_conf(&srv, conf);
    sighup();
    wait_log_text("database password missing");
    wait_log_text("keeps serving");
    wait_for("/ver", "ver=A tag=t0", 200);
    wt_finish(&srv);
}

Test(reload, watch_reloads_when_the_config_file_changes)
{
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\nwatch = true;\n"
             "plugin_dirs = [\"%s\"];\nroutes = ({ path = \"/ver\"; plugin = \"ver\"; dispatch = \"coroutine\"; "
             "options = { tag = \"%s\"; }; });\n",
             plugdir, "w1");
    wt_write_conf(&srv, conf);
    sighup(); /* turns watching on */
    wait_for("/ver", "tag=w1", 10000);
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\nwatch = true;\n"
             "plugin_dirs = [\"%s\"];\nroutes = ({ path = \"/ver\"; plugin = \"ver\"; dispatch = \"coroutine\"; "
             "options = { tag = \"%s\"; }; });\n",
             plugdir, "w2");
    wt_write_conf(&srv, conf); /* no signal: the file change alone reloads */
    wait_for("/ver", "tag=w2", 10000);
    wait_log_text("config file changed");
    wt_finish(&srv);
}
