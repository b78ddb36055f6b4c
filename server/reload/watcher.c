#include "reload/watcher.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/signals.h"
#include "base/timer.h"
#include "config/route_files.h"

/* weft dev watches up to 64 projects, their tests/ and their root beside nothing else. */
#define MAX_WATCHES 136

/* WATCH_TAGGED: a directory of weft_watcher_add, reported by its own tag. */
enum { WATCH_PLUGINS = 1, WATCH_CONFIG = 2, WATCH_ROUTES_D = 4, WATCH_TAGGED = 8 };
/* A fragment counts when it appears, changes or goes away; a plugin only
 * when a complete file arrives (a removed .so is the loader's business at
 * the next reload, not a reason for one). */
#define ARRIVED (IN_CLOSE_WRITE | IN_MOVED_TO)

struct weft_watcher {
    int fd;
    int stop_pipe[2];
    pthread_t thread;
    void (*wake)(void);
    pthread_mutex_t mu;
    struct {
        int wd;
        int kind;                     /* what the directory is: WATCH_* bits */
        int tag;                      /* WATCH_TAGGED only */
        weft_watch_classify classify; /* WATCH_TAGGED only */
        unsigned pending;             /* WATCH_TAGGED only: classify's bits since the last take */
    } watches[MAX_WATCHES];
    int n_watches;
    char config_name[256];
    char signature[8192]; /* what is watched now, to skip needless re-arming */
    /* pending events */
    int pending;
    char names[1024];
    unsigned long long last_ns;
};

static void record(weft_watcher *w, const struct inotify_event *ev)
{
    if (ev->len == 0)
        return;
    const char *name = ev->name;
    size_t len = strlen(name);
    pthread_mutex_lock(&w->mu);
    int kind = 0;
    for (int i = 0; i < w->n_watches; i++) {
        if (w->watches[i].wd != ev->wd)
            continue;
        if (w->watches[i].kind == WATCH_TAGGED) {
            unsigned bits = w->watches[i].classify(name, (ev->mask & IN_ISDIR) != 0);
            w->watches[i].pending |= bits;
            if (bits)
                w->last_ns = weft_now_ns();
            continue;
        }
        kind |= w->watches[i].kind;
    }
    int arrived = (ev->mask & ARRIVED) != 0;
    if (((kind & WATCH_PLUGINS) && weft_route_file_is_plugin_fragment(name)) ||
        ((kind & WATCH_ROUTES_D) && weft_route_file_is_dropin(name))) {
        w->pending |= WEFT_WATCH_ROUTES;
        w->last_ns = weft_now_ns();
    } else if ((kind & WATCH_PLUGINS) && arrived && len > 3 && strcmp(name + len - 3, ".so") == 0) {
        w->pending |= WEFT_WATCH_PLUGIN;
        char plugin[256];
        snprintf(plugin, sizeof(plugin), "%.*s", (int)(len - 3), name);
        if (strstr(w->names, plugin) == NULL && strlen(w->names) + len + 2 < sizeof(w->names))
            snprintf(w->names + strlen(w->names), sizeof(w->names) - strlen(w->names), "%s%s",
                     w->names[0] ? "," : "", plugin);
        w->last_ns = weft_now_ns();
    } else if ((kind & WATCH_CONFIG) && arrived && (strcmp(name, w->config_name) == 0 || strcmp(name, "..data") == 0)) {
        /* "..data": Kubernetes updates a mounted ConfigMap by renaming a new
         * symlink over this one, never by writing the file itself. */
        w->pending |= WEFT_WATCH_CONFIG;
        w->last_ns = weft_now_ns();
    }
    pthread_mutex_unlock(&w->mu);
}

static void *watch_main(void *arg)
{
    weft_watcher *w = arg;
    weft_signals_block_async();
    _Alignas(struct inotify_event) char buf[8192];
    for (;;) {
        struct pollfd p[2] = {{w->fd, POLLIN, 0}, {w->stop_pipe[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (!(p[0].revents & POLLIN))
            continue;
        ssize_t n = read(w->fd, buf, sizeof(buf));
        if (n <= 0)
            continue;
        for (char *ptr = buf; ptr < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)ptr;
            record(w, ev);
            ptr += sizeof(*ev) + ev->len;
        }
        w->wake();
    }
    return NULL;
}

weft_watcher *weft_watcher_new(void (*wake)(void))
{
    weft_watcher *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->fd < 0 || pipe2(w->stop_pipe, O_CLOEXEC) != 0) {
        weft_log_warn("inotify unavailable (%s): plugin and config changes need an explicit reload", strerror(errno));
        if (w->fd >= 0)
            close(w->fd);
        free(w);
        return NULL;
    }
    w->wake = wake;
    pthread_mutex_init(&w->mu, NULL);
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0)
        weft_fatal("cannot start the file watcher thread");
    return w;
}

void weft_watcher_free(weft_watcher *w)
{
    if (w == NULL)
        return;
    ssize_t r = write(w->stop_pipe[1], "x", 1);
    (void)r;
    pthread_join(w->thread, NULL);
    close(w->fd);
    close(w->stop_pipe[0]);
    close(w->stop_pipe[1]);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* Returns the watch's index, or -1 (logged unless the directory is missing). */
static int add_mask(weft_watcher *w, const char *dir, int kind, uint32_t mask)
{
    if (w->n_watches == MAX_WATCHES) {
        weft_log_warn("cannot watch %s: already watching %d directories", dir, MAX_WATCHES);
        return -1;
    }
    int wd = inotify_add_watch(w->fd, dir, mask | IN_ONLYDIR);
    if (wd < 0) {
        if (errno != ENOENT)
            weft_log_warn("cannot watch %s: %s", dir, strerror(errno));
        return -1;
    }
    w->watches[w->n_watches++] = (typeof(w->watches[0])){.wd = wd, .kind = kind};
    return w->n_watches - 1;
}

static void add(weft_watcher *w, const char *dir, int kind)
{
    add_mask(w, dir, kind, ARRIVED | IN_DELETE | IN_MOVED_FROM);
}

static int dir_exists(const char *dir)
{
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

void weft_watcher_set(weft_watcher *w, char *const *dirs, int n_dirs, const char *config, const char *routes_dir)
{
    /* Re-arming drops events that arrive in between: only do it when the
     * set of watched places really changed — or a directory that was
     * missing exists now (a routes.d created after start). */
    char sig[sizeof(w->signature)];
    size_t used = (size_t)snprintf(sig, sizeof(sig), "%s|%s%s|", config != NULL ? config : "",
                                   routes_dir != NULL ? routes_dir : "", routes_dir && dir_exists(routes_dir) ? "+" : "");
    for (int i = 0; i < n_dirs && used < sizeof(sig); i++)
        used += (size_t)snprintf(sig + used, sizeof(sig) - used, "%s%s|", dirs[i], dir_exists(dirs[i]) ? "+" : "");
    pthread_mutex_lock(&w->mu);
    if (strcmp(sig, w->signature) == 0) {
        pthread_mutex_unlock(&w->mu);
        return;
    }
    snprintf(w->signature, sizeof(w->signature), "%s", sig);
    int kept = 0;
    for (int i = 0; i < w->n_watches; i++) {
        if (w->watches[i].kind == WATCH_TAGGED)
            w->watches[kept++] = w->watches[i];
        else
            inotify_rm_watch(w->fd, w->watches[i].wd);
    }
    w->n_watches = kept;
    w->config_name[0] = '\0';
    for (int i = 0; i < n_dirs; i++)
        add(w, dirs[i], WATCH_PLUGINS);
    if (routes_dir != NULL)
        add(w, routes_dir, WATCH_ROUTES_D);
    if (config != NULL) {
        char *copy = strdup(config), *copy2 = strdup(config);
        snprintf(w->config_name, sizeof(w->config_name), "%s", basename(copy));
        add(w, dirname(copy2), WATCH_CONFIG);
        free(copy);
        free(copy2);
    }
    pthread_mutex_unlock(&w->mu);
}

int weft_watcher_take(weft_watcher *w, char *names, unsigned long size, unsigned long long *last_ns)
{
    pthread_mutex_lock(&w->mu);
    int pending = w->pending;
    snprintf(names, size, "%s", w->names);
    *last_ns = w->last_ns;
    w->pending = 0;
    w->names[0] = '\0';
    pthread_mutex_unlock(&w->mu);
    return pending;
}

int weft_watcher_add(weft_watcher *w, const char *dir, int tag, int created_too, weft_watch_classify classify)
{
    pthread_mutex_lock(&w->mu);
    int i = add_mask(w, dir, WATCH_TAGGED, ARRIVED | (created_too ? IN_CREATE : 0));
    if (i >= 0) {
        w->watches[i].tag = tag;
        w->watches[i].classify = classify;
    }
    pthread_mutex_unlock(&w->mu);
    return i >= 0 ? 0 : -1;
}

int weft_watcher_take_tagged(weft_watcher *w, void (*fn)(void *ud, int tag, unsigned bits), void *ud,
                             unsigned long long *last_ns)
{
    /* Copied out under the lock, reported outside it: fn may take its
     * caller's locks, and the watcher thread must never wait on those. */
    struct {
        int tag;
        unsigned bits;
    } out[MAX_WATCHES];
    int n = 0;
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < w->n_watches; i++)
        if (w->watches[i].kind == WATCH_TAGGED && w->watches[i].pending) {
            out[n].tag = w->watches[i].tag;
            out[n++].bits = w->watches[i].pending;
            w->watches[i].pending = 0;
        }
    *last_ns = w->last_ns;
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < n; i++)
        fn(ud, out[i].tag, out[i].bits);
    return n;
}
