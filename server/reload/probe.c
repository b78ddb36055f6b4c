#include "reload/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/spawn.h"
#include "base/timer.h"
#include "plugin/host.h"
#include "plugin/module.h"
#include "plugin/ptimer.h"
#include "plugin/route_init.h"

extern char **environ;

/* The child tells its parent what it is about to do, one line per step,
 * unbuffered: the last marker read before the child died names the culprit.
 *   "@probe init <route index> <version>" / "@probe fini ..." / "@probe load <name>" */
#define MARK "@probe "

static void mark(const char *what, size_t route, const char *version)
{
    char line[512];
    int n = snprintf(line, sizeof(line), MARK "%s %zu %s\n", what, route, version != NULL ? version : "?");
    if (n > 0 && write(STDOUT_FILENO, line, (size_t)n) < 0)
        _exit(3);
}

static int wanted(const char *plugin, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(plugin, names[i]) == 0)
            return 1;
    return 0;
}

static char *read_all(int fd)
{
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    for (ssize_t n; buf != NULL && (n = read(fd, buf + len, cap - len - 1)) != 0;) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        len += (size_t)n;
        if (cap - len < 2) {
            char *bigger = realloc(buf, cap *= 2);
            if (bigger == NULL)
                free(buf);
            buf = bigger;
        }
    }
    if (buf != NULL)
        buf[len] = '\0';
    return buf;
}

/* Loads the versions named and runs their routes' init and fini, marking
 * each step on stdout; what both kinds of child run. */
static int probe_routes(weft_config *cfg, const char *const *names, int n_names)
{
    weft_errors errs = {0};
    weft_route *routes = calloc(cfg->n_routes + 1, sizeof(*routes));
    weft_module **mods = calloc(cfg->n_routes + 1, sizeof(*mods));
    void **states = calloc(cfg->n_routes + 1, sizeof(*states)); /* each plugin's own, from load() */
    unsigned char *loaded = calloc(cfg->n_routes + 1, sizeof(*loaded));
    /* Timers are accepted as in the server, and never started: no loop runs here. */
    struct weft_ptimers **timers = calloc(cfg->n_routes + 1, sizeof(*timers));
    unsigned char *refused = calloc(cfg->n_routes + 1, sizeof(*refused)); /* per module: an error in load or init */
    size_t n_mods = 0;
    if (routes == NULL || mods == NULL || states == NULL || loaded == NULL || timers == NULL || refused == NULL)
        return 4;
    for (size_t i = 0; i < cfg->n_routes; i++) {
        weft_route *r = &routes[i];
        r->cfg = &cfg->routes[i];
        if (!wanted(r->cfg->plugin, names, n_names))
            continue;
        size_t k = 0;
        while (k < n_mods && strcmp(mods[k]->name, r->cfg->plugin) != 0)
            k++;
        if (k == n_mods) {
            mark("load", i, "?");
            if ((mods[k] = weft_module_load(r->cfg->plugin, cfg->plugin_dirs, cfg->n_plugin_dirs, &errs)) == NULL)
                continue;
            n_mods++;
            if ((timers[k] = weft_ptimers_new(mods[k]->name)) == NULL)
                return 4;
            if (weft_route_init_load(cfg, mods[k]->name, &mods[k]->desc, &weft_host_table, &states[k], &loaded[k],
                                     timers[k], &errs) != 0)
                refused[k] = 1;
        }
        if (mods[k]->desc.load != NULL && !loaded[k])
            continue;
        weft_route_set_module(r, mods[k]);
        r->desc = &weft_route_module(r)->desc;
        mark("init", i, weft_route_module(r)->desc.version);
        if (weft_route_init_run(r, &weft_host_table, states[k], timers[k], &errs) != 0)
            refused[k] = 1;
    }
    for (size_t i = cfg->n_routes; i-- > 0;) {
        weft_route *r = &routes[i];
        if (r->initialised && weft_route_module(r)->desc.fini != NULL) {
            mark("fini", i, weft_route_module(r)->desc.version);
            weft_route_module(r)->desc.fini(r->state);
        }
    }
    for (size_t k = 0; k < n_mods; k++)
        if (loaded[k] && mods[k]->desc.unload != NULL)
            mods[k]->desc.unload(states[k]);
    /* What loaded and initialised cleanly: the parent's log line counts
     * these, not every plugin it asked about. */
    for (size_t k = 0; k < n_mods; k++)
        if (!refused[k])
            mark("ok", k, mods[k]->name);
    mark("done", 0, "-");
    for (size_t k = 0; k < n_mods; k++) {
        weft_ptimers_free(timers[k]);
        weft_module_release(mods[k]);
    }
    free(timers);
    free(refused);
    free(mods);
    free(states);
    free(loaded);
    free(routes);
    weft_errors_clear(&errs);
    return 0;
}

int weft_probe_child_main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    char *text = read_all(STDIN_FILENO);
    weft_errors errs = {0};
    /* Broken drop-ins are left out as the server leaves them out (reload/dropins.h). */
    weft_dropin_policy any = {.any = 1};
    weft_config *cfg = text != NULL ? weft_config_load_dropins(argv[2], text, &any, &errs) : NULL;
    free(text);
    weft_errors_clear(&errs);
    /* Errors are not the probe's business: the server finds and reports
     * them itself. The probe only finds out whether the code survives. */
    if (cfg == NULL)
        return 0;
    int rc = probe_routes(cfg, (const char *const *)argv + 3, argc - 3);
    weft_config_free(cfg);
    weft_module_cleanup();
    return rc;
}

static long probe_timeout_ms(void)
{
    const char *v = getenv("WEFT_PROBE_TIMEOUT_MS");
    long ms = v != NULL ? strtol(v, NULL, 10) : 0;
    return ms > 0 ? ms : 10000;
}

/* Starts `/proc/self/exe __probe CONFIG NAME...` with the config text on
 * stdin (a memfd: no pipe to deadlock on) and stdout+stderr into `out_fd`. */
static pid_t spawn(const weft_config *cfg, const char *const *names, size_t n, int *out_fd, weft_errors *errs)
{
    int in = memfd_create("weft-probe-config", MFD_CLOEXEC);
    int out[2] = {-1, -1};
    size_t len = cfg->text != NULL ? strlen(cfg->text) : 0;
    if (in < 0 || (len > 0 && write(in, cfg->text, len) != (ssize_t)len) || lseek(in, 0, SEEK_SET) != 0 ||
        pipe2(out, O_CLOEXEC) != 0) {
        weft_errors_add(errs, "%s: cannot prepare the plugin probe: %s", cfg->path, strerror(errno));
        if (in >= 0)
            close(in);
        return -1;
    }
    const char **argv = calloc(n + 4, sizeof(*argv));
    size_t n_env = 0;
    while (environ[n_env] != NULL)
        n_env++;
    char **env = calloc(n_env + 2, sizeof(*env));
    char dir_var[300];
    const char *dir = weft_module_private_dir();
    snprintf(dir_var, sizeof(dir_var), "WEFT_PROBE_DIR=%s", dir != NULL ? dir : "");
    pid_t pid = -1;
    if (argv != NULL && env != NULL) {
        argv[0] = "weft";
        argv[1] = WEFT_PROBE_ARG;
        argv[2] = cfg->path;
        for (size_t i = 0; i < n; i++)
            argv[3 + i] = names[i];
        size_t o = 0;
        for (size_t i = 0; i < n_env; i++)
            if (strncmp(environ[i], "WEFT_PROBE_DIR=", 15) != 0 && strncmp(environ[i], "NOTIFY_SOCKET=", 14) != 0)
                env[o++] = environ[i];
        env[o] = dir_var;
        const int from[] = {in, out[1], out[1]}, to[] = {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO};
        /* listening sockets, the control pipe...: none is the child's business */
        int rc = weft_spawn(&pid, "/proc/self/exe", (char *const *)argv, env, from, to, 3, 3);
        if (rc != 0) {
            weft_errors_add(errs, "%s: cannot start the plugin probe (/proc/self/exe): %s", cfg->path, strerror(rc));
            pid = -1;
        }
    } else {
        weft_errors_add(errs, "%s: cannot start the plugin probe: out of memory", cfg->path);
    }
    free(argv);
    free(env);
    close(in);
    close(out[1]);
    if (pid < 0)
        close(out[0]);
    *out_fd = out[0];
    return pid;
}

/* Whether this process runs a single thread: only then may it fork a child
 * that runs more than async-signal-safe code (a lock another thread held at
 * the fork would stay held in the child forever). */
static int single_threaded(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (f == NULL)
        return 0;
    char line[256];
    int threads = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "Threads: %d", &threads) == 1)
            break;
    fclose(f);
    return threads == 1;
}

/* At start-up, before any thread exists, the probe child is a plain fork:
 * no exec and no dynamic linking of weft all over again (about 4 ms of the
 * exec'd probe's 10 ms of CPU, all of it on the way to serving), and the
 * new code runs in the very process image the server will run it in. The
 * child goes on from here with the config already parsed. */
static pid_t fork_child(const weft_config *cfg, const char *const *names, size_t n, int *out_fd, weft_errors *errs)
{
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        weft_errors_add(errs, "%s: cannot prepare the plugin probe: %s", cfg->path, strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        weft_module_prepare(names[i], cfg->plugin_dirs, cfg->n_plugin_dirs);
    fflush(NULL); /* nothing buffered may come out twice */
    pid_t pid = fork();
    if (pid == 0) {
        weft_module_prepared_keep();
        if (dup2(out[1], STDOUT_FILENO) < 0 || dup2(out[1], STDERR_FILENO) < 0)
            _exit(3);
        /* what an exec'd child gets: no other fd, no blocked signal, SIGPIPE fatal */
        close_range(3, ~0U, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        /* The child's own copy of the config: the parent never sees what
         * the plugins do to it. */
        int rc = probe_routes((weft_config *)cfg, names, (int)n);
        fflush(NULL);
        _exit(rc); /* not exit(): the parent's state (private directory, pid file) is not the child's to clean */
    }
    int err = errno;
    close(out[1]);
    if (pid < 0) {
        close(out[0]);
        weft_module_prepared_drop();
        weft_errors_add(errs, "%s: cannot start the plugin probe (fork): %s", cfg->path, strerror(err));
        return -1;
    }
    *out_fd = out[0];
    return pid;
}

/* Reads the child's output until it closes it or the deadline passes. */
static int collect(int fd, char *buf, size_t size, long timeout_ms)
{
    size_t len = 0;
    unsigned long long deadline = weft_now_ns() + (unsigned long long)timeout_ms * 1000000ULL;
    for (;;) {
        unsigned long long now = weft_now_ns();
        if (now >= deadline)
            return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)((deadline - now) / 1000000ULL) + 1);
        if (r < 0 && errno != EINTR)
            return 0;
        if (r <= 0)
            continue;
        /* Keep the tail, not the head: the child writes two markers per
         * route, and what counts is the last ones (the culprit, "done").
         * Keeping the first 32 KB refused every config of more than ~1,400
         * routes to a new plugin as "ended the process (exit status 0)". */
        if (len + 1 >= size) {
            const char *keep = strchr(buf + len / 2, '\n');
            size_t from = keep != NULL ? (size_t)(keep + 1 - buf) : len / 2;
            memmove(buf, buf + from, len - from);
            len -= from;
            buf[len] = '\0';
        }
        ssize_t n = read(fd, buf + len, size - len - 1);
        if (n <= 0 && !(n < 0 && errno == EINTR))
            break;
        if (n > 0) {
            len += (size_t)n;
            buf[len] = '\0';
        }
    }
    return 0;
}

/* The last step the child announced, and its other lines (its crash report). */
static const char *last_step(char *out, size_t *route, char *version, size_t vsize)
{
    const char *what = NULL;
    for (char *line = strstr(out, MARK); line != NULL; line = strstr(line + 1, MARK)) {
        if (line != out && line[-1] != '\n')
            continue;
        char w[16], v[128];
        size_t idx;
        if (sscanf(line + strlen(MARK), "%15s %zu %127s", w, &idx, v) == 3 && strcmp(w, "ok") != 0) {
            what = strcmp(w, "init") == 0 ? "init" : strcmp(w, "fini") == 0 ? "fini" : strcmp(w, "load") == 0 ? "load" : NULL;
            *route = idx;
            snprintf(version, vsize, "%s", v);
        }
    }
    return what;
}

static int reported_signal(const char *out, char *how, size_t size)
{
    const char *p = strstr(out, "weft: FATAL: SIG");
    if (p == NULL)
        return 0;
    p += strlen("weft: FATAL: ");
    snprintf(how, size, "crashed with %.*s", (int)strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"), p);
    return 1;
}

static void add_child_output(const char *out, weft_errors *errs)
{
    int shown = 0;
    for (const char *p = out; *p && shown < 24;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);
        /* The child inherits JOURNAL_STREAM: its lines' "<N>" means nothing inside ours. */
        int prio = len >= 3 && p[0] == '<' && p[1] >= '0' && p[1] <= '7' && p[2] == '>' ? 3 : 0;
        if (len > 0 && strncmp(p + prio, MARK, strlen(MARK)) != 0) {
            weft_errors_add(errs, "  probe: %.*s", (int)(len - (size_t)prio), p + prio);
            shown++;
        }
        p += len + (nl != NULL);
    }
}

static int enabled;

void weft_probe_enable(void) { enabled = 1; }

int weft_probe_run(const weft_config *cfg, const char *const *names, size_t n, weft_errors *errs)
{
    if (!enabled)
        return 0;
    unsigned long long t0 = weft_now_ns();
    int fd, forked = single_threaded();
    pid_t pid = forked ? fork_child(cfg, names, n, &fd, errs) : spawn(cfg, names, n, &fd, errs);
    if (pid < 0)
        return -1;
    static char out[32768];
    out[0] = '\0';
    long timeout_ms = probe_timeout_ms();
    int timed_out = collect(fd, out, sizeof(out), timeout_ms) != 0;
    close(fd);
    if (timed_out)
        kill(pid, SIGKILL);
    int status = 0;
    struct rusage ru = {0};
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
        ;
    double ms = (double)(weft_now_ns() - t0) / 1e6;
    /* CPU time, unlike wall time, does not depend on how busy the machine is */
    double cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    int done = strstr(out, MARK "done ") != NULL;
    if (!timed_out && done && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        size_t ok = 0;
        for (const char *p = strstr(out, MARK "ok "); p != NULL; p = strstr(p + 1, MARK "ok "))
            ok++;
        /* A plugin refused in the child (truncated, a failing init) is the
         * build's to report, not a plugin that passed. */
        weft_log_info("probe: %zu of %zu new plugin version(s) loaded and initialised in %s child process in %.1f ms "
                      "(%.1f ms CPU)%s",
                      ok, n, forked ? "a forked" : "an exec'd", ms, cpu_ms,
                      ok < n ? "; the others were refused (the errors follow)" : "");
        return 0;
    }
    size_t idx = 0;
    char version[128] = "?", how[160];
    const char *what = last_step(out, &idx, version, sizeof(version));
    if (timed_out)
        snprintf(how, sizeof(how), "did not return within %ld ms (WEFT_PROBE_TIMEOUT_MS)", timeout_ms);
    else if (reported_signal(out, how, sizeof(how)))
        ; /* the child's own crash line: the first signal, before a sanitizer turned it into SIGABRT */
    else if (WIFSIGNALED(status) && sigabbrev_np(WTERMSIG(status)) != NULL)
        snprintf(how, sizeof(how), "crashed with SIG%s", sigabbrev_np(WTERMSIG(status)));
    else if (WIFSIGNALED(status))
        snprintf(how, sizeof(how), "crashed with signal %d", WTERMSIG(status));
    else
        snprintf(how, sizeof(how), "ended the process (exit status %d)", WEXITSTATUS(status));
    if (what != NULL && idx < cfg->n_routes) {
        const weft_route_cfg *rc = &cfg->routes[idx];
        if (strcmp(what, "load") == 0)
            weft_errors_add(errs, "%s:%d: plugin %s: loading it %s in a probe process", rc->file, rc->line,
                            rc->plugin, how);
        else
            weft_errors_add(errs, "%s:%d: plugin %s (version %s): %s of route %s %s in a probe process", rc->file,
                            rc->line, rc->plugin, version, what, rc->path, how);
    } else {
        weft_errors_add(errs, "%s: the plugin probe %s before it reached any plugin", cfg->path, how);
    }
    add_child_output(out, errs);
    return -1;
}
