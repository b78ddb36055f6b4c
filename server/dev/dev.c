/* `weft dev`: prepares the projects, runs the server on the generated config, and rebuilds on save. */
#include "dev/dev.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>
#include <time.h>

#include "base/log.h"
#include "base/signals.h"
#include "base/timer.h"
#include "config/route_files.h"
#include "dev/database.h"
#include "dev/devconf.h"
#include "dev/keys.h"
#include "dev/logtap.h"
#include "dev/project.h"
#include "dev/supervise.h"
#include "plugin/quarantine.h"
#include "base/file.h"
#include "dev/tests.h"
#include "reload/watcher.h"

/* A save arrives as a burst of events (write, rename, a second file): let it
 * settle this long before building. */
#define SETTLE_NS (100 * 1000000ull)

/* What a watched directory saw, as weft_watcher_take_tagged reports it. */
enum { SOURCE = 1, ROUTES = 2, NEW_DIR = 4, USER_CONF = 8, TEST_SOURCE = 16 };
#define ROOT_TAG (-1)
#define TESTS_TAG 1000 /* + project index: its tests/ directory */

static atomic_int active;
static weft_dev_dirs dirs;
static weft_watcher *watcher;

/* The builder thread sleeps until the watcher wakes it. */
static pthread_mutex_t wake_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cv = PTHREAD_COND_INITIALIZER;
static int woken, stopping;
static pthread_t builder;
static int builder_started;

int weft_dev_active(void) { return atomic_load(&active); }

static unsigned classify_project(const char *name, int is_dir)
{
    size_t len = strlen(name);
    if (is_dir)
        return 0;
    if (len > 2 && (strcmp(name + len - 2, ".c") == 0 || strcmp(name + len - 2, ".h") == 0))
        return SOURCE;
    return strcmp(name, "route.conf") == 0 || weft_route_file_is_plugin_fragment(name) ? ROUTES : 0;
}

static unsigned classify_tests(const char *name, int is_dir)
{
    return classify_project(name, is_dir) == SOURCE ? TEST_SOURCE : 0;
}

static unsigned classify_root(const char *name, int is_dir)
{
    if (is_dir)
        return name[0] != '.' ? NEW_DIR : 0;
    return strcmp(name, "weft.dev.conf") == 0 ? USER_CONF : 0;
}

static void wake(void)
{
    pthread_mutex_lock(&wake_mu);
    woken = 1;
    pthread_cond_signal(&wake_cv);
    pthread_mutex_unlock(&wake_mu);
}

/* Projects [first, n) get their watches; before their first build, so no save is lost. */
static void watch_from(int first)
{
    weft_dev_lock();
    int n = weft_dev_n_projects();
    weft_dev_unlock();
    for (int i = first; watcher != NULL && i < n; i++) {
        const weft_dev_project *p = weft_dev_project_at(i);
        weft_watcher_add(watcher, p->dir, i, 0, classify_project);
        char tests[PATH_MAX + 8];
        if (weft_dev_has_tests(p) && weft_dev_format(tests, sizeof(tests), "tests path", "%s/tests", p->dir) == 0)
            weft_watcher_add(watcher, tests, TESTS_TAG + i, 0, classify_tests);
    }
}

typedef struct changes {
    unsigned root;
    unsigned project[WEFT_DEV_MAX_PROJECTS];
} changes;

static void note(void *ud, int tag, unsigned bits)
{
    changes *c = ud;
    if (tag == ROOT_TAG)
        c->root |= bits;
    else if (tag >= 0 && tag < WEFT_DEV_MAX_PROJECTS)
        c->project[tag] |= bits;
    else if (tag >= TESTS_TAG && tag < TESTS_TAG + WEFT_DEV_MAX_PROJECTS)
        c->project[tag - TESTS_TAG] |= bits;
}

/* Collects events until none arrived for SETTLE_NS. */
static void settle(changes *c)
{
    for (;;) {
        unsigned long long last = 0;
        weft_watcher_take_tagged(watcher, note, c, &last);
        uint64_t now = weft_now_ns();
        if (now >= last + SETTLE_NS)
            return;
        uint64_t ns = last + SETTLE_NS - now;
        struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
        nanosleep(&ts, NULL);
    }
}

static void build_and_test(int i)
{
    if (weft_dev_build(weft_dev_project_at(i), &dirs) == 0)
        weft_dev_tests_request(i);
}

static void apply(changes *c)
{
    if (c->root & NEW_DIR) {
        int first = weft_dev_scan(&dirs);
        watch_from(first);
        weft_dev_lock();
        int n = weft_dev_n_projects();
        weft_dev_unlock();
        for (int i = first; i < n; i++)
            c->project[i] |= SOURCE;
    }
    for (int i = 0; i < WEFT_DEV_MAX_PROJECTS; i++) {
        if (c->project[i] & ROUTES)
            weft_dev_load_routes(weft_dev_project_at(i));
        if (c->project[i] & ~TEST_SOURCE)
            build_and_test(i);
        else if (c->project[i])
            weft_dev_tests_request(i);
    }
    weft_dev_write_config(&dirs);
}

static void *builder_main(void *arg)
{
    (void)arg;
    weft_signals_block_async();
    for (;;) {
        pthread_mutex_lock(&wake_mu);
        while (!woken && !stopping)
            pthread_cond_wait(&wake_cv, &wake_mu);
        int stop = stopping;
        woken = 0;
        pthread_mutex_unlock(&wake_mu);
        if (stop)
            return NULL;
        changes c = {0};
        settle(&c);
        apply(&c);
    }
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "weft dev: cannot create %s: %s\n", path, strerror(errno));
        return -1;
    }
    /* Private, but the traversal bits pgdev.sh grants (as root the private
     * PostgreSQL runs as postgres, which must reach .weft-dev/pg) stay: with
     * them gone, stopping it found "no server running" and left it running. */
    struct stat st;
    mode_t keep = stat(path, &st) == 0 ? st.st_mode & (S_IXGRP | S_IXOTH) : 0;
    chmod(path, 0700 | keep);
    return 0;
}

/* Finds and builds the projects under dir, writes the dev config, starts watching. */
static int prepare(const char *dir)
{
    if (realpath(dir, dirs.root) == NULL) {
        fprintf(stderr, "weft dev: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    if (weft_dev_format(dirs.state, sizeof(dirs.state), "state directory", "%s/.weft-dev", dirs.root) != 0 ||
        weft_dev_format(dirs.plugins, sizeof(dirs.plugins), "plugin directory", "%s/plugins", dirs.state) != 0 ||
        weft_dev_format(dirs.build, sizeof(dirs.build), "build directory", "%s/build", dirs.state) != 0 ||
        weft_dev_format(dirs.conf, sizeof(dirs.conf), "config path", "%s/weft.conf", dirs.state) != 0 ||
        make_dir(dirs.state) != 0 || make_dir(dirs.plugins) != 0 || make_dir(dirs.build) != 0)
        return -1;
    /* Watches exist before the first build, so no save during it is lost. */
    watcher = weft_watcher_new(wake);
    if (watcher == NULL || weft_watcher_add(watcher, dirs.root, ROOT_TAG, 1, classify_root) != 0)
        weft_log_error("dev: cannot watch %s; sources are not rebuilt on save", dirs.root);
    watch_from(weft_dev_scan(&dirs));
    weft_dev_lock();
    int n = weft_dev_n_projects();
    weft_dev_unlock();
    if (n == 0)
        weft_log_warn("dev: no plugin project in %s (a directory NAME with NAME.c); create one with `weft new-plugin "
                      "NAME %s`",
                      dirs.root, dir);
    weft_dev_tests_start(&dirs);
    for (int i = 0; i < n; i++)
        build_and_test(i);
    if (weft_dev_write_config(&dirs) != 0) {
        fprintf(stderr, "weft dev: cannot write %s\n", dirs.conf);
        return -1;
    }
    atomic_store(&active, 1);
    weft_dev_keys_start();
    if (watcher != NULL)
        builder_started = pthread_create(&builder, NULL, builder_main, NULL) == 0;
    return 0;
}

static void finish(void)
{
    atomic_store(&active, 0);
    if (builder_started) {
        pthread_mutex_lock(&wake_mu);
        stopping = 1;
        pthread_cond_signal(&wake_cv);
        pthread_mutex_unlock(&wake_mu);
        pthread_join(builder, NULL);
        builder_started = 0;
    }
    weft_dev_keys_stop();
    weft_dev_tests_stop();
    weft_watcher_free(watcher);
    watcher = NULL;
    weft_dev_projects_free();
}

static int (*serve_fn)(const char *config, void (*loaded)(const weft_generation *gen));
static const char *dev_dir;

/* Builds a crash quarantined (its record in the state directory) show the crash instead of serving. */
static void mark_quarantined(const weft_generation *gen)
{
    for (size_t i = 0; i < gen->n_modules; i++) {
        const char *q = gen->quarantined[i].plugin;
        char log[PATH_MAX + 80];
        if (q[0] != '\0' &&
            weft_dev_format(log, sizeof(log), "crash log path", "%s/crash-%s.log", dirs.state, q) == 0)
            weft_dev_mark_crashed(q, weft_file_read(log, NULL));
    }
}

/* One dev server's life, a child of the supervisor: build, serve, stop. */
static int dev_child(void *arg)
{
    (void)arg;
    if (weft_dev_logtap_start() != 0)
        weft_log_warn("dev: cannot tap the log (%s); the Dev UI shows no log tail", strerror(errno));
    int rc = prepare(dev_dir) == 0 ? serve_fn(dirs.conf, mark_quarantined) : 1;
    finish();
    weft_dev_logtap_stop();
    return rc;
}

int weft_dev_main(int argc, char **argv, int (*serve)(const char *config, void (*loaded)(const weft_generation *gen)))
{
    if (argc > 3) {
        fprintf(stderr, "usage: weft dev [DIR]\n");
        return 2;
    }
    dev_dir = argc == 3 ? argv[2] : ".";
    serve_fn = serve;
    /* The database outlives the dev server's restarts: started here, once. */
    char root[PATH_MAX], state[PATH_MAX + 16], pgdir[PATH_MAX + 32] = "";
    if (realpath(dev_dir, root) == NULL) {
        fprintf(stderr, "weft dev: %s: %s\n", dev_dir, strerror(errno));
        return 1;
    }
    if (weft_dev_format(state, sizeof(state), "state directory", "%s/.weft-dev", root) != 0 || make_dir(state) != 0)
        return 1;
    weft_dev_database_start(state, pgdir, sizeof(pgdir));
    /* A child that crashed left the terminal as its keys set it. */
    struct termios term;
    int tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &term) == 0;
    int rc = weft_dev_supervise(dev_child, NULL);
    if (tty)
        tcsetattr(STDIN_FILENO, TCSANOW, &term);
    weft_dev_database_stop(pgdir);
    return rc;
}
