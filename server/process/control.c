#include "process/control.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/accesslog.h"
#include "core/listener.h"
#include "process/handover.h"
#include "process/hold.h"
#include "process/outcome.h"
#include "ops/admin.h"
#include "base/log.h"
#include "ops/notify.h"
#include "reload/reload.h"
#include "base/timer.h"
#include "reload/watcher.h"
#include "config/route_files.h"

/* File events settle for this long before a reload: an editor's save or a
 * `cp` + `mv` arrives as several events. */
#define DEBOUNCE_NS (150 * 1000000ull)
#define HOLD_POLL_MS 200

static int sig_fd = -1, wake_fd = -1;
static weft_watcher *watcher;
static char *pid_file;
/* Set once a new process took over (process/handover.h): the pid file and
 * its companions are that process's now. */
static int handed_over;

static pthread_mutex_t grave_mu = PTHREAD_MUTEX_INITIALIZER;
static weft_generation **graveyard;
static size_t n_grave, cap_grave;

void weft_control_wake(void)
{
    uint64_t one = 1;
    ssize_t r = write(wake_fd, &one, sizeof(one));
    (void)r;
}

/* Called by whichever thread drops a generation's last reference. */
static void bury(weft_generation *g)
{
    pthread_mutex_lock(&grave_mu);
    if (n_grave == cap_grave) {
        cap_grave = cap_grave ? cap_grave * 2 : 8;
        graveyard = realloc(graveyard, cap_grave * sizeof(*graveyard));
        if (graveyard == NULL)
            weft_fatal("out of memory");
    }
    graveyard[n_grave++] = g;
    pthread_mutex_unlock(&grave_mu);
    weft_control_wake();
}

void weft_control_reap(void)
{
    for (;;) {
        pthread_mutex_lock(&grave_mu);
        weft_generation *g = n_grave > 0 ? graveyard[--n_grave] : NULL;
        pthread_mutex_unlock(&grave_mu);
        if (g == NULL)
            return;
        unsigned long id = g->id;
        weft_generation_destroy(g);
        weft_log_info("generation %lu retired: its last request finished; plugins finalised", id);
    }
}

static void watch_current(void)
{
    if (watcher == NULL)
        return;
    const weft_config *cfg = weft_reload_serving()->cfg;
    char *dirs[128];
    int n = 0;
    char *env = getenv("WEFT_PLUGIN_PATH") ? strdup(getenv("WEFT_PLUGIN_PATH")) : NULL;
    for (char *tok = env ? strtok(env, ":") : NULL; tok != NULL && n < 64; tok = strtok(NULL, ":"))
        dirs[n++] = tok;
    for (size_t i = 0; i < cfg->n_plugin_dirs && n < 128; i++)
        dirs[n++] = cfg->plugin_dirs[i];
    /* The config file is watched even with watch = false: a reload that turns
     * watching on must not miss an edit made while it was swapping in; events
     * are only acted on while the serving config says watch = true. */
    weft_watcher_set(watcher, dirs, n, cfg->path, cfg->routes_dir);
    free(env);
}

static int write_pid_file(const char *path)
{
    /* A missing last directory (a fresh checkout's .weft/) is created;
     * deeper structure is the operator's (or systemd's RuntimeDirectory). */
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash != NULL && slash != dir) {
        *slash = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            weft_log_warn("pid_file: cannot create %s: %s", dir, strerror(errno));
    }
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        weft_log_error("pid_file: cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

void weft_control_serving_path(const char *pid_path, char *out, size_t size)
{
    snprintf(out, size, "%s.serving.conf", pid_path);
}

/* The text, not the path: the file on disk may already be the next edit. */
static void write_serving(const weft_config *cfg)
{
    if (pid_file == NULL)
        return;
    char path[4200], tmp[4300];
    weft_control_serving_path(pid_file, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    /* 0600: a conninfo may hold a password. */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL || fputs(cfg->text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        weft_log_warn("cannot write %s (weft reload then signals without checking for restart-only changes): %s",
                      path, strerror(errno));
        if (f == NULL && fd >= 0)
            close(fd);
    }
}

int weft_control_init(weft_generation *first)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    /* Blocked before any thread starts, so every thread inherits the mask. */
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    sig_fd = signalfd(-1, &set, SFD_CLOEXEC);
    wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (sig_fd < 0 || wake_fd < 0) {
        weft_log_error("cannot set up signal handling: %s", strerror(errno));
        return -1;
    }
    if (first->cfg->pid_file != NULL) {
        /* A process started by a hand-over names itself once it is the main one. */
        if (!weft_handover_is_child() && write_pid_file(first->cfg->pid_file) != 0)
            return -1;
        pid_file = strdup(first->cfg->pid_file);
        write_serving(first->cfg);
        if (!weft_handover_is_child())
            weft_handover_outcome_init(pid_file);
    }
    weft_generation_set_reaper(bury);
    weft_admin_set_waker(weft_control_wake);
    weft_reload_init(first);
    watcher = weft_watcher_new(weft_control_wake);
    watch_current();
    return 0;
}

void weft_control_cleanup(void)
{
    weft_watcher_free(watcher);
    watcher = NULL;
    if (pid_file != NULL && !handed_over) {
        char path[4200];
        weft_handover_outcome_path(pid_file, path, sizeof(path));
        unlink(path);
        weft_control_serving_path(pid_file, path, sizeof(path));
        unlink(path);
        weft_outcome_path(pid_file, path, sizeof(path));
        unlink(path);
        unlink(pid_file);
    }
    free(pid_file);
    pid_file = NULL;
    free(graveyard);
    graveyard = NULL;
    n_grave = cap_grave = 0;
    close(sig_fd);
    close(wake_fd);
}

/* Only plugins that routes use are worth a reload; others are merely available now. */
static int used_by_routes(const char *names)
{
    const weft_generation *g = weft_reload_serving();
    char copy[1024];
    snprintf(copy, sizeof(copy), "%s", names);
    int used = 0;
    for (char *save, *tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        int here = 0;
        for (size_t i = 0; i < g->n_routes && !here; i++)
            here = strcmp(g->routes[i].cfg->plugin, tok) == 0;
        /* A NAME.routes dropped before its NAME.so was skipped then: it counts now. */
        if (!here && weft_route_files_has_fragment(g->cfg, tok))
            here = 1;
        if (!here)
            weft_log_info("plugin file %s.so changed; no route uses it, so nothing reloads (it is loadable by name)",
                          tok);
        used |= here;
    }
    return used;
}

static void notify_serving(void)
{
    const weft_generation *g = weft_reload_serving();
    weft_notify_ready("generation %lu serving %zu route(s)", g->id, g->n_routes);
}

/* logrotate's postrotate (SIGUSR1) and every reload: the error and access
 * logs are opened again by path, so a file moved away stops growing. */
static void reopen_logs(const char *why)
{
    char err[600];
    if (weft_log_reopen(err, sizeof(err)) != 0)
        weft_log_error("log.error_log: %s; still writing to the old file", err);
    if (weft_accesslog_reopen(err, sizeof(err)) != 0)
        weft_log_error("log.access_log: %s; still writing to the old file", err);
    weft_log_info("logs reopened (%s)", why);
}

/* A reload as systemd wants to see it: RELOADING=1, then READY=1 again. */
static void reload(weft_reload_kind kind, const char *why)
{
    weft_notify_reloading(why);
    if (weft_reload(kind, why) == 0 && kind == WEFT_RELOAD_CONFIG)
        write_serving(weft_reload_serving()->cfg);
    if (kind == WEFT_RELOAD_CONFIG)
        reopen_logs(why);
    if (pid_file != NULL)
        weft_outcome_write(pid_file); /* what `weft reload` waits for */
    notify_serving();
    watch_current();
}

/* Until the watchdog's next ping, the end of the debounce (or the next look
 * at a package's hold), or the hand-over's deadline: the earliest; -1 for none. */
static int poll_timeout(int pending, int held, unsigned long long last_event)
{
    int timeout = weft_notify_watchdog();
    if (pending) {
        uint64_t now = weft_now_ns(), due = last_event + DEBOUNCE_NS;
        int debounce = now >= due ? 0 : (int)((due - now) / 1000000u) + 1;
        if (debounce == 0 && held)
            debounce = HOLD_POLL_MS; /* until the package's postinst lets go */
        timeout = timeout < 0 || debounce < timeout ? debounce : timeout;
    }
    int upgrade_ms = weft_handover_timeout_ms();
    if (upgrade_ms >= 0 && (timeout < 0 || upgrade_ms < timeout))
        timeout = upgrade_ms;
    return timeout;
}

/* One signal from sig_fd: SIGTERM or SIGINT is returned (the server stops),
 * the others are acted on and give 0. */
static int take_signal(int *upgrade_fd)
{
    struct signalfd_siginfo si;
    if (read(sig_fd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
            weft_notify_stopping();
            return (int)si.ssi_signo;
        }
        if (si.ssi_signo == SIGHUP)
            reload(WEFT_RELOAD_CONFIG, "SIGHUP");
        if (si.ssi_signo == SIGUSR1)
            reopen_logs("SIGUSR1");
        if (si.ssi_signo == SIGUSR2 && *upgrade_fd < 0)
            *upgrade_fd = weft_handover_start(pid_file);
        else if (si.ssi_signo == SIGUSR2)
            weft_log_warn("SIGUSR2: a hand-over is already under way");
    }
    return 0;
}

/* What the watcher saw since the last look, added to *pending, and the
 * plugin files it names to `names`. */
static void take_changes(int *pending, unsigned long long *last_event, char *names, size_t size)
{
    char more[1024];
    unsigned long long at;
    int what = weft_watcher_take(watcher, more, sizeof(more), &at);
    if (!weft_reload_serving()->cfg->watch)
        what &= ~WEFT_WATCH_CONFIG;
    if (what) {
        *pending |= what;
        *last_event = at;
        if (more[0] && strlen(names) + strlen(more) + 2 < size)
            snprintf(names + strlen(names), size - strlen(names), "%s%s", names[0] ? "," : "", more);
    }
}

/* The changes of a debounce period, as one reload. */
static void reload_changes(int pending, const char *names)
{
    if (pending & WEFT_WATCH_CONFIG) {
        reload(WEFT_RELOAD_CONFIG, "config file changed");
    } else if (pending & WEFT_WATCH_ROUTES) {
        /* Like a plugin change: the serving main config, fragments
         * and plugins re-read (a half-edited main file stays out). */
        char why[1100];
        snprintf(why, sizeof(why), "route fragment changed%s%s", names[0] ? "; plugin file changed: " : "",
                 names);
        reload(WEFT_RELOAD_PLUGINS, why);
    } else if (used_by_routes(names)) {
        char why[1100];
        snprintf(why, sizeof(why), "plugin file changed: %s", names);
        reload(WEFT_RELOAD_PLUGINS, why);
    }
}

int weft_control_run(void)
{
    if (weft_handover_is_child()) {
        if (weft_handover_child_ready() != 0)
            return SIGTERM;
        /* Only now: a new process that failed would have left the old one's loops without new connections. */
        weft_listeners_steer();
        if (pid_file != NULL && write_pid_file(pid_file) == 0)
            weft_handover_outcome_init(pid_file);
    }
    notify_serving();
    int upgrade_fd = -1; /* the new process's answer, while a hand-over is under way */
    int pending = 0, held = 0;
    char names[1024] = "";
    unsigned long long last_event = 0;
    for (;;) {
        int timeout = poll_timeout(pending, held, last_event);
        struct pollfd p[3] = {{sig_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}, {upgrade_fd, POLLIN, 0}};
        int ready = poll(p, upgrade_fd >= 0 ? 3 : 2, timeout);
        if (ready < 0 && errno != EINTR)
            weft_fatal("poll: %s", strerror(errno));
        if (upgrade_fd >= 0 && ((p[2].revents & (POLLIN | POLLHUP | POLLERR)) || weft_handover_timeout_ms() == 0)) {
            int took = weft_handover_step(pid_file, !(p[2].revents & (POLLIN | POLLHUP | POLLERR)));
            if (took >= 0)
                upgrade_fd = -1;
            if (took == 1) {
                handed_over = 1;
                return SIGUSR2;
            }
        }
        if (p[0].revents & POLLIN) {
            int stop = take_signal(&upgrade_fd);
            if (stop != 0)
                return stop;
        }
        if (p[1].revents & POLLIN) {
            uint64_t v;
            ssize_t r = read(wake_fd, &v, sizeof(v));
            (void)r;
        }
        weft_control_reap();
        if (weft_admin_take_reload_request())
            reload(WEFT_RELOAD_CONFIG, "admin /reload");
        if (watcher != NULL)
            take_changes(&pending, &last_event, names, sizeof(names));
        /* An edited main config is the operator's own doing and is read at
         * once; plugin and fragment changes wait out a package upgrade. */
        held = pending && !(pending & WEFT_WATCH_CONFIG) && weft_hold_active(pid_file);
        if (pending && !held && weft_now_ns() >= last_event + DEBOUNCE_NS) {
            reload_changes(pending, names);
            pending = 0;
            names[0] = '\0';
        }
    }
}
