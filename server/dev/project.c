#include "dev/project.h"

#include <dirent.h>
#include <errno.h>
#include <libconfig.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/log.h"
#include "base/names.h"
#include "base/timer.h"
#include "dev/scaffold.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static weft_dev_project projects[WEFT_DEV_MAX_PROJECTS];
static int n_projects;

void weft_dev_lock(void) { pthread_mutex_lock(&mu); }
void weft_dev_unlock(void) { pthread_mutex_unlock(&mu); }
int weft_dev_n_projects(void) { return n_projects; }
weft_dev_project *weft_dev_project_at(int i) { return &projects[i]; }

int weft_dev_format(char *out, size_t size, const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, size, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size) {
        weft_log_error("dev: %s too long (over %zu bytes): %.80s...", what, size - 1, out);
        return -1;
    }
    return 0;
}

/* The route paths in `text` (a fragment, `routes = ( ... );`), read with libconfig itself. */
static char **parse_paths(const char *file, const char *text, size_t *n_out)
{
    *n_out = 0;
    char **paths = NULL;
    config_t lc;
    config_init(&lc);
    if (config_read_string(&lc, text)) {
        config_setting_t *list = config_lookup(&lc, "routes");
        int n = list != NULL ? config_setting_length(list) : 0;
        paths = calloc((size_t)n + 1, sizeof(char *));
        for (int i = 0; paths != NULL && i < n; i++) {
            const char *rp = NULL;
            if (config_setting_lookup_string(config_setting_get_elem(list, (unsigned)i), "path", &rp) &&
                (paths[*n_out] = strdup(rp)) != NULL)
                ++*n_out;
        }
    } else {
        weft_log_warn("dev: %s:%d: %s", file, config_error_line(&lc), config_error_text(&lc));
    }
    config_destroy(&lc);
    return paths;
}

/* p's route fragment into `routes`: NAME.routes; older projects' route.conf
 * (the bare list); else one coroutine route /NAME. `path` names the source. */
static int read_fragment(const weft_dev_project *p, char *path, size_t size, char *routes, size_t rsize)
{
    if (weft_dev_format(path, size, "routes path", "%s/%s.routes", p->dir, p->name) != 0)
        return -1;
    char *text = weft_file_read(path, NULL);
    if (text != NULL) {
        int rc = weft_dev_format(routes, rsize, path, "%s", text);
        free(text);
        return rc;
    }
    if (weft_dev_format(path, size, "route.conf path", "%s/route.conf", p->dir) != 0)
        return -1;
    text = weft_file_read(path, NULL);
    int rc = text != NULL ? weft_dev_format(routes, rsize, path, "routes = ( %s );\n", text)
                          : weft_dev_format(routes, rsize, "default route",
                                            "routes = ( { path = \"/%s\"; plugin = \"%s\"; dispatch = \"coroutine\"; } );\n",
                                            p->name, p->name);
    free(text);
    return rc;
}

void weft_dev_load_routes(weft_dev_project *p)
{
    char path[PATH_MAX + 80], routes[sizeof(p->routes_text)];
    int fits = read_fragment(p, path, sizeof(path), routes, sizeof(routes)) == 0;
    size_t n = 0;
    char **paths = fits ? parse_paths(path, routes, &n) : NULL;
    /* Swapped in under the lock: the error page reads paths at any time. */
    pthread_mutex_lock(&mu);
    char **old = p->paths;
    size_t n_old = p->n_paths;
    if (fits)
        memcpy(p->routes_text, routes, sizeof(routes));
    p->paths = paths;
    p->n_paths = n;
    pthread_mutex_unlock(&mu);
    for (size_t i = 0; i < n_old; i++)
        free(old[i]);
    free(old);
}

static int is_project(const char *dir, const char *name)
{
    char src[PATH_MAX + 80];
    struct stat st;
    return weft_name_is_valid(name) && snprintf(src, sizeof(src), "%s/%s.c", dir, name) < (int)sizeof(src) &&
           stat(src, &st) == 0 && S_ISREG(st.st_mode);
}

static int known(const char *name)
{
    for (int i = 0; i < n_projects; i++)
        if (strcmp(projects[i].name, name) == 0)
            return 1;
    return 0;
}

int weft_dev_scan(const weft_dev_dirs *d)
{
    /* Only the builder thread (or start-up, before it exists) appends, so
     * n_projects read here cannot change under us. */
    int first = n_projects;
    DIR *dir = opendir(d->root);
    if (dir == NULL) {
        weft_log_error("dev: cannot read %s: %s", d->root, strerror(errno));
        return first;
    }
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        char path[PATH_MAX];
        if (e->d_name[0] == '.' || known(e->d_name) || snprintf(path, sizeof(path), "%s/%s", d->root, e->d_name) >=
                                                             (int)sizeof(path) ||
            !is_project(path, e->d_name))
            continue;
        if (n_projects == WEFT_DEV_MAX_PROJECTS) {
            weft_log_warn("dev: more than %d plugin projects in %s; %s and later ones are not built",
                          WEFT_DEV_MAX_PROJECTS, d->root, e->d_name);
            break;
        }
        weft_dev_project *p = &projects[n_projects];
        memset(p, 0, sizeof(*p));
        if (weft_dev_format(p->name, sizeof(p->name), "project name", "%s", e->d_name) != 0)
            continue; /* cannot happen: a valid name has at most 64 characters */
        memcpy(p->dir, path, sizeof(path));
        weft_dev_load_routes(p);
        pthread_mutex_lock(&mu);
        n_projects++;
        pthread_mutex_unlock(&mu);
        weft_log_info("dev: plugin project %s (%s)", p->name, p->dir);
    }
    closedir(dir);
    return first;
}

/* Runs `cmd` with its output into `log`; returns its exit status and the output in *output (malloc'd). */
static int run_logged(const char *cmd, const char *log, char **output)
{
    char full[5 * PATH_MAX];
    if (weft_dev_format(full, sizeof(full), "compiler command", "%s >'%s' 2>&1", cmd, log) != 0) {
        *output = strdup("the compiler command is too long");
        return -1;
    }
    int status = system(full);
    *output = weft_file_read(log, NULL);
    if (*output == NULL)
        *output = strdup(status == -1 ? "cannot run the compiler" : "");
    return status;
}

/* Its public/ folder travels with it as NAME.public beside NAME.so, where a
 * static route in NAME.routes finds it (docs/PLUGINS.md): a symlink, so a
 * saved file is served at once, with no build. */
static void link_public(const weft_dev_project *p, const weft_dev_dirs *d)
{
    char src[PATH_MAX + 16], dst[PATH_MAX + 80], tmp[PATH_MAX + 80];
    struct stat st;
    if (weft_dev_format(src, sizeof(src), "public path", "%s/public", p->dir) != 0 || stat(src, &st) != 0 ||
        !S_ISDIR(st.st_mode) ||
        weft_dev_format(dst, sizeof(dst), "public path", "%s/%s.public", d->plugins, p->name) != 0 ||
        weft_dev_format(tmp, sizeof(tmp), "public path", "%s/.%s.public.new", d->plugins, p->name) != 0)
        return;
    (void)unlink(tmp);
    if (symlink(src, tmp) != 0 || rename(tmp, dst) != 0)
        weft_log_error("dev: cannot link %s to %s: %s", dst, src, strerror(errno));
}

/* Its routes travel with it, exactly as an operator drops them in: NAME.routes
 * next to NAME.so, by write-then-rename, and only when they changed. */
static void install_routes(weft_dev_project *p, const weft_dev_dirs *d)
{
    link_public(p, d);
    char routes[PATH_MAX + 80], tmp[PATH_MAX + 80];
    if (weft_dev_format(routes, sizeof(routes), "routes path", "%s/%s.routes", d->plugins, p->name) != 0 ||
        weft_dev_format(tmp, sizeof(tmp), "routes path", "%s/.%s.routes.new", d->plugins, p->name) != 0)
        return;
    char *installed = weft_file_read(routes, NULL);
    pthread_mutex_lock(&mu);
    int same = installed != NULL && strcmp(installed, p->routes_text) == 0;
    FILE *f = same ? NULL : fopen(tmp, "w");
    int wrote = f != NULL && fputs(p->routes_text, f) >= 0;
    pthread_mutex_unlock(&mu);
    free(installed);
    /* 0644 whatever the umask: the server refuses a group- or
     * world-writable fragment, as it refuses such a .so. */
    if (!same && (f == NULL || fclose(f) != 0 || !wrote || chmod(tmp, 0644) != 0 || rename(tmp, routes) != 0))
        weft_log_error("dev: cannot install %s: %s", routes, strerror(errno));
    else if (same && chmod(routes, 0644) != 0)
        weft_log_error("dev: cannot chmod %s: %s", routes, strerror(errno));
}

int weft_dev_build(weft_dev_project *p, const weft_dev_dirs *d)
{
    char out_tmp[PATH_MAX + 80], out[PATH_MAX + 80], log[PATH_MAX + 80], cmd[4 * PATH_MAX];
    const char *cc = getenv("CC") != NULL ? getenv("CC") : "cc";
    if (weft_dev_format(out_tmp, sizeof(out_tmp), "build path", "%s/%s.so", d->build, p->name) != 0 ||
        weft_dev_format(log, sizeof(log), "build log path", "%s/%s.log", d->build, p->name) != 0 ||
        weft_dev_format(out, sizeof(out), "plugin path", "%s/%s.so", d->plugins, p->name) != 0 ||
        weft_dev_format(cmd, sizeof(cmd), "compiler command",
                        "cd '%s' && %s -g -O1 -Wall -Wextra %s -shared -fPIC -fvisibility=hidden -o '%s' %s.c",
                        p->dir, cc, weft_sdk_cflags(), out_tmp, p->name) != 0)
        return -1;
    uint64_t t0 = weft_now_ns();
    char *output = NULL;
    int ok = run_logged(cmd, log, &output) == 0;
    pthread_mutex_lock(&mu);
    p->builds++;
    p->built_at = time(NULL);
    free(p->output);
    p->output = output;
    p->failed = !ok;
    p->crashed = 0;
    pthread_mutex_unlock(&mu);
    if (!ok) {
        weft_log_error("dev: build of %s failed; its routes answer 500 with the compiler output until the next good "
                       "build (the previous version stays loaded)\n%s",
                       p->name, output);
        return -1;
    }
    /* Into the plugin directory by rename: the server's watcher sees one
     * complete file. 0755 whatever the umask: the loader refuses
     * group-writable plugins. */
    if (chmod(out_tmp, 0755) != 0 || rename(out_tmp, out) != 0) {
        weft_log_error("dev: cannot install %s: %s", out, strerror(errno));
        return -1;
    }
    install_routes(p, d);
    pthread_mutex_lock(&mu);
    p->built = 1;
    pthread_mutex_unlock(&mu);
    weft_log_info("dev: built %s in %llu ms%s%s", p->name, (unsigned long long)((weft_now_ns() - t0) / 1000000u),
                  output[0] ? "; compiler said:\n" : "", output);
    return 0;
}

void weft_dev_projects_free(void)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < n_projects; i++) {
        for (size_t k = 0; k < projects[i].n_paths; k++)
            free(projects[i].paths[k]);
        free(projects[i].paths);
        free(projects[i].output);
        free(projects[i].test_output);
    }
    n_projects = 0;
    pthread_mutex_unlock(&mu);
}

void weft_dev_mark_crashed(const char *name, char *text)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < n_projects; i++)
        if (strcmp(projects[i].name, name) == 0) {
            free(projects[i].output);
            projects[i].output = text;
            projects[i].failed = projects[i].crashed = 1;
            text = NULL;
        }
    pthread_mutex_unlock(&mu);
    free(text);
}
