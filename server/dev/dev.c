#include "dev/dev.h"

/* Paths here are built from a realpath()ed root into PATH_MAX buffers; a
 * truncated one simply fails to open, which is reported. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <libconfig.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dispatch/blocking.h"
#include "config/config.h"
#include "reload/generation.h"
#include "http/http.h"
#include "base/file.h"
#include "base/log.h"
#include "core/loop.h"
#include "base/stats.h"
#include "reload/reload.h"
#include "base/names.h"
#include "config/route_files.h"
#include "config/router.h"
#include "dev/scaffold.h"
#include "base/timer.h"
#include "version.h"

#define MAX_PROJECTS 64

typedef struct project {
    char name[72];
    char dir[PATH_MAX];
    char routes_text[8192]; /* its route fragment, installed as NAME.routes next to NAME.so */
    char **paths;           /* route paths, for the error page */
    size_t n_paths;
    int built;              /* a good build is installed */
    int failed;             /* the last build failed, or (crashed) its code crashed the server */
    int crashed;
    char *output;           /* compiler output of the last build */
    time_t built_at;
    unsigned builds;
} project;

static atomic_int active;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static project projects[MAX_PROJECTS];
static int n_projects;
static char root[PATH_MAX], state[PATH_MAX], plugdir[PATH_MAX], confpath[PATH_MAX];

int weft_dev_active(void) { return atomic_load(&active); }

/* ---- projects ---- */

/* NAME.routes (older projects: route.conf, the bare list), read with
 * libconfig itself for the paths. */
static void load_routes(project *p)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/%s.routes", p->dir, p->name);
    char *text = weft_file_read(path, NULL), *wrapped = NULL;
    if (text == NULL) {
        snprintf(path, sizeof(path), "%s/route.conf", p->dir);
        text = weft_file_read(path, NULL);
        if (text == NULL && asprintf(&text, "{ path = \"/%s\"; plugin = \"%s\"; dispatch = \"coroutine\"; }\n",
                                     p->name, p->name) < 0)
            weft_fatal("out of memory");
        if (asprintf(&wrapped, "routes = ( %s );\n", text) < 0)
            weft_fatal("out of memory");
        free(text);
        text = wrapped;
    }
    snprintf(p->routes_text, sizeof(p->routes_text), "%s", text);
    for (size_t i = 0; i < p->n_paths; i++)
        free(p->paths[i]);
    free(p->paths);
    p->paths = NULL;
    p->n_paths = 0;
    config_t lc;
    config_init(&lc);
    if (config_read_string(&lc, text)) {
        config_setting_t *list = config_lookup(&lc, "routes");
        int n = list != NULL ? config_setting_length(list) : 0;
        p->paths = calloc((size_t)n + 1, sizeof(char *));
        for (int i = 0; i < n; i++) {
            const char *rp = NULL;
            if (config_setting_lookup_string(config_setting_get_elem(list, (unsigned)i), "path", &rp))
                p->paths[p->n_paths++] = strdup(rp);
        }
    } else {
        weft_log_warn("dev: %s:%d: %s", path, config_error_line(&lc), config_error_text(&lc));
    }
    config_destroy(&lc);
    free(text);
}

static int is_project(const char *dir, const char *name)
{
    char src[PATH_MAX + 80];
    snprintf(src, sizeof(src), "%s/%s.c", dir, name);
    struct stat st;
    return weft_name_is_valid(name) && stat(src, &st) == 0 && S_ISREG(st.st_mode);
}

static void scan(void)
{
    DIR *d = opendir(root);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n_projects < MAX_PROJECTS) {
        if (e->d_name[0] == '.')
            continue;
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/%s", root, e->d_name);
        int known = 0;
        for (int i = 0; i < n_projects && !known; i++)
            known = strcmp(projects[i].name, e->d_name) == 0;
        if (known || !is_project(dir, e->d_name))
            continue;
        project *p = &projects[n_projects++];
        memset(p, 0, sizeof(*p));
        snprintf(p->name, sizeof(p->name), "%s", e->d_name);
        snprintf(p->dir, sizeof(p->dir), "%s", dir);
        load_routes(p);
        weft_log_info("dev: plugin project %s (%s)", p->name, p->dir);
    }
    closedir(d);
}

/* ---- building ---- */

static void build(project *p)
{
    char out_tmp[PATH_MAX + 80], out[PATH_MAX + 80], cmd[4 * PATH_MAX];
    snprintf(out_tmp, sizeof(out_tmp), "%s/build/%s.so", state, p->name);
    snprintf(out, sizeof(out), "%s/%s.so", plugdir, p->name);
    const char *cc = getenv("CC") != NULL ? getenv("CC") : "cc";
    snprintf(cmd, sizeof(cmd), "cd '%s' && %s -g -O1 -Wall -Wextra %s -shared -fPIC -fvisibility=hidden -o '%s' %s.c 2>&1",
             p->dir, cc, weft_sdk_cflags(), out_tmp, p->name);
    uint64_t t0 = weft_now_ns();
    FILE *pipe = popen(cmd, "r");
    char *output = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&output, &len);
    char chunk[4096];
    size_t n;
    while (pipe != NULL && (n = fread(chunk, 1, sizeof(chunk), pipe)) > 0)
        fwrite(chunk, 1, n, m);
    int status = pipe != NULL ? pclose(pipe) : -1;
    fclose(m);
    int ok = status == 0;
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
        return;
    }
    /* Into the plugin directory by rename: the server's watcher sees one
     * complete file. 0755 whatever the umask: the loader refuses
     * group-writable plugins. */
    if (chmod(out_tmp, 0755) != 0 || rename(out_tmp, out) != 0) {
        weft_log_error("dev: cannot install %s: %s", out, strerror(errno));
        return;
    }
    /* Its routes travel with it, exactly as an operator drops them in. */
    char routes[PATH_MAX + 80], routes_tmp[PATH_MAX + 80];
    snprintf(routes, sizeof(routes), "%s/%s.routes", plugdir, p->name);
    snprintf(routes_tmp, sizeof(routes_tmp), "%s/.%s.routes.new", plugdir, p->name);
    char *installed = weft_file_read(routes, NULL);
    pthread_mutex_lock(&mu);
    int same = installed != NULL && strcmp(installed, p->routes_text) == 0;
    FILE *rf = same ? NULL : fopen(routes_tmp, "w");
    int wrote = rf != NULL && fputs(p->routes_text, rf) >= 0;
    pthread_mutex_unlock(&mu);
    free(installed);
    if (!same && (rf == NULL || fclose(rf) != 0 || !wrote || rename(routes_tmp, routes) != 0))
        weft_log_error("dev: cannot install %s: %s", routes, strerror(errno));
    pthread_mutex_lock(&mu);
    p->built = 1;
    pthread_mutex_unlock(&mu);
    weft_log_info("dev: built %s in %llu ms%s%s", p->name, (unsigned long long)((weft_now_ns() - t0) / 1000000u),
                  output[0] ? "; compiler said:\n" : "", output);
}

/* The dev config: fixed settings plus the routes of every plugin that has a good build. */
static int write_config(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    const char *user = NULL;
    char userconf[PATH_MAX + 32];
    snprintf(userconf, sizeof(userconf), "%s/weft.dev.conf", root);
    struct stat st;
    if (stat(userconf, &st) == 0)
        user = userconf;
    fprintf(f, "# Generated by `weft dev` from the projects in %s; rewritten on every build.\n", root);
    char *user_text = user != NULL ? weft_file_read(user, NULL) : NULL;
    if (user_text != NULL) {
        /* Inlined, not @included: it holds any settings except the ones below. */
        fprintf(f, "# from %s\n%s\n", userconf, user_text);
        free(user_text);
    } else {
        fprintf(f, "listen = [\"127.0.0.1:8080\"];\nadmin = { listen = \"127.0.0.1:9901\"; };\n");
        fprintf(f, "blocking = { threshold_ms = 20; interval_s = 1; };\n");
    }
    /* Routes are not here: each built project's NAME.routes sits next to its .so. */
    fprintf(f, "plugin_dirs = [\"plugins\"];\nwatch = true;\npid_file = \"weft.pid\";\n");
    fclose(f);
    char *old = weft_file_read(confpath, NULL);
    int same = old != NULL && strcmp(old, text) == 0;
    free(old);
    int rc = 0;
    if (!same) {
        char tmp[PATH_MAX + 8];
        snprintf(tmp, sizeof(tmp), "%s.tmp", confpath);
        FILE *o = fopen(tmp, "w");
        rc = o != NULL && fputs(text, o) >= 0 && fclose(o) == 0 && rename(tmp, confpath) == 0 ? 0 : -1;
    }
    free(text);
    return rc;
}

/* ---- the source watcher ---- */

/* Watches exist before the first build, so no save between the first build
 * and the watcher thread's start is lost. */
static int watch_fd = -1;
static int wds[MAX_PROJECTS + 1];
static int watched;

static void watch_projects(void)
{
    for (; watch_fd >= 0 && watched < n_projects; watched++)
        wds[watched] = inotify_add_watch(watch_fd, projects[watched].dir, IN_CLOSE_WRITE | IN_MOVED_TO);
}

static void *watch_main(void *arg)
{
    (void)arg;
    int fd = watch_fd;
    if (fd < 0)
        return NULL;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (;;) {
        pthread_mutex_lock(&mu);
        watch_projects();
        pthread_mutex_unlock(&mu);
        int dirty[MAX_PROJECTS] = {0}, rescan = 0;
        _Alignas(struct inotify_event) char buf[8192];
        /* wait for an event, then let a burst (an editor's save) settle */
        for (int timeout = -1;; timeout = 100) {
            struct pollfd p = {fd, POLLIN, 0};
            if (poll(&p, 1, timeout) <= 0)
                break;
            ssize_t n = read(fd, buf, sizeof(buf));
            for (char *ptr = buf; n > 0 && ptr < buf + n;) {
                struct inotify_event *ev = (struct inotify_event *)ptr;
                ptr += sizeof(*ev) + ev->len;
                if (ev->wd == wds[MAX_PROJECTS]) {
                    rescan = 1;
                    continue;
                }
                size_t len = ev->len ? strlen(ev->name) : 0;
                int source = len > 2 && (strcmp(ev->name + len - 2, ".c") == 0 || strcmp(ev->name + len - 2, ".h") == 0);
                int routes = ev->len && (strcmp(ev->name, "route.conf") == 0 ||
                                         weft_route_file_is_plugin_fragment(ev->name));
                for (int i = 0; i < watched; i++)
                    if (wds[i] == ev->wd && (source || routes)) {
                        dirty[i] |= 1;
                        if (routes) {
                            pthread_mutex_lock(&mu);
                            load_routes(&projects[i]);
                            pthread_mutex_unlock(&mu);
                        }
                    }
            }
        }
        if (rescan) {
            pthread_mutex_lock(&mu);
            int before = n_projects;
            scan();
            int after = n_projects;
            pthread_mutex_unlock(&mu);
            for (int i = before; i < after; i++)
                dirty[i] = 1;
        }
        for (int i = 0; i < n_projects; i++)
            if (dirty[i])
                build(&projects[i]);
        write_config();
    }
    return NULL;
}

/* ---- HTTP: the build-error page and the Dev UI ---- */

static void html_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

static void send_html(h2o_req_t *req, int status, char *html, size_t len)
{
    req->res.status = status;
    req->res.reason = status == 200 ? "OK" : "Internal Server Error";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("text/html; charset=utf-8"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-store"));
    h2o_iovec_t body = h2o_strdup(&req->pool, html, len);
    free(html);
    req->res.content_length = body.len;
    h2o_send_inline(req, body.base, body.len);
}

static int path_matches(const char *pattern, const char *path, size_t len)
{
    weft_router *r = weft_router_new();
    void *conflict;
    char why[128];
    weft_match m;
    int hit = 0;
    if (weft_router_add(r, pattern, WEFT_M_ALL, (void *)1, &conflict, why, sizeof(why)) == 0) {
        weft_router_match(r, path, len, WEFT_M_GET, &m);
        hit = m.status == 200;
    }
    weft_router_free(r);
    return hit;
}

int weft_dev_intercept(h2o_req_t *req)
{
    if (!weft_dev_active())
        return 0;
    pthread_mutex_lock(&mu);
    project *hit = NULL;
    for (int i = 0; i < n_projects && hit == NULL; i++)
        for (size_t k = 0; projects[i].failed && k < projects[i].n_paths && hit == NULL; k++)
            if (path_matches(projects[i].paths[k], req->path_normalized.base, req->path_normalized.len))
                hit = &projects[i];
    if (hit == NULL) {
        pthread_mutex_unlock(&mu);
        return 0;
    }
    char *html = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&html, &len);
    const char *what = hit->crashed ? "Crashed: " : "Build failed: ";
    fputs("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>", f);
    fputs(what, f);
    html_escape(f, hit->name);
    fputs("</title><style>body{font:15px system-ui,sans-serif;margin:2em;color:#222}"
          "pre{background:#1e1e1e;color:#eee;padding:1em;overflow:auto;border-radius:6px}"
          "h1{color:#b00020}</style></head><body><h1>",
          f);
    fputs(what, f);
    html_escape(f, hit->name);
    fputs(hit->crashed ? "</h1><p>This build crashed the dev server, which restarted; its routes show this until "
                         "the next good build. The crash line and backtrace:</p><pre id=\"compiler-output\">"
                       : "</h1><p>The last build of this plugin failed; the previous good version stays loaded and "
                         "serves again after the next good build. Compiler output:</p><pre id=\"compiler-output\">",
          f);
    html_escape(f, hit->output != NULL ? hit->output : "");
    fputs("</pre><p><a href=\"javascript:location.reload()\">Reload this page</a></p></body></html>\n", f);
    pthread_mutex_unlock(&mu);
    fclose(f);
    send_html(req, 500, html, len);
    return 1;
}

static void dev_page(h2o_req_t *req)
{
    weft_loop *L = weft_loop_current;
    const weft_generation *g = L->gen;
    char *html = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&html, &len);
    fprintf(f, "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>weft dev</title><style>"
               "body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}"
               "td,th{border:1px solid #ccc;padding:.3em .7em;text-align:left}th{background:#f3f3f3}"
               ".ok{color:#087f23}.fail{color:#b00020}pre{background:#f6f6f6;padding:.5em;max-height:12em;overflow:auto}"
               "button{font-size:14px;padding:.3em 1em}</style></head><body>"
               "<h1>weft dev</h1><p>weft %s &middot; generation <span id=\"generation\">%lu</span> &middot; config "
               "<code>",
            WEFT_VERSION, g->id);
    html_escape(f, g->cfg->path);
    fputs("</code></p><p><button id=\"reload\" onclick=\"doReload()\">Reload config</button> "
          "<span id=\"reload-status\"></span></p><h2>Routes</h2><table id=\"routes\"><tr><th>path</th><th>plugin</th>"
          "<th>version</th><th>policy</th><th>req/s</th><th>avg latency</th></tr>",
          f);
    for (size_t i = 0; i < g->n_routes; i++) {
        const weft_route *r = &g->routes[i];
        fputs("<tr><td>", f);
        html_escape(f, r->cfg->path);
        fputs("</td><td>", f);
        html_escape(f, r->module->name);
        fprintf(f, "</td><td>%s #%u</td><td>%s</td><td class=\"rate\" data-slot=\"%d\">-</td><td class=\"lat\" "
                   "data-slot=\"%d\">-</td></tr>",
                r->module->desc.version ? r->module->desc.version : "?", r->module->seq,
                weft_dispatch_name(r->cfg->dispatch), r->stat_slot, r->stat_slot);
    }
    fputs("</table><h2>Builds</h2><table id=\"builds\"><tr><th>plugin</th><th>builds</th><th>last</th>"
          "<th>outcome</th></tr>",
          f);
    pthread_mutex_lock(&mu);
    for (int i = 0; i < n_projects; i++) {
        const project *p = &projects[i];
        char when[32] = "-";
        if (p->built_at)
            strftime(when, sizeof(when), "%H:%M:%S", localtime(&p->built_at));
        fputs("<tr><td>", f);
        html_escape(f, p->name);
        fprintf(f, "</td><td>%u</td><td>%s</td><td class=\"%s\">%s", p->builds, when, p->failed ? "fail" : "ok",
                p->failed ? "failed" : p->built ? "ok" : "not built");
        if (p->failed && p->output != NULL) {
            fputs("<pre>", f);
            html_escape(f, p->output);
            fputs("</pre>", f);
        }
        fputs("</td></tr>", f);
    }
    pthread_mutex_unlock(&mu);
    fputs("</table><h2>Last reload</h2><pre id=\"last-reload\">loading&hellip;</pre>"
          "<script>\n"
          "let prev = null;\n"
          "async function poll() {\n"
          "  const s = await (await fetch('/dev/stats')).json();\n"
          "  document.getElementById('generation').textContent = s.generation;\n"
          "  document.getElementById('last-reload').textContent = s.last_reload;\n"
          "  for (const td of document.querySelectorAll('td.rate, td.lat')) {\n"
          "    const cur = s.routes[td.dataset.slot], old = prev && prev.routes[td.dataset.slot];\n"
          "    if (!cur || !old) continue;\n"
          "    const dn = cur.count - old.count, dt = (s.at - prev.at) || 1;\n"
          "    if (td.classList.contains('rate')) td.textContent = (dn / dt).toFixed(1);\n"
          "    else td.textContent = dn > 0 ? ((cur.sum - old.sum) / dn * 1000).toFixed(2) + ' ms' : '-';\n"
          "  }\n"
          "  prev = s;\n"
          "}\n"
          "async function doReload() {\n"
          "  const r = await fetch('/reload', {method: 'POST'});\n"
          "  document.getElementById('reload-status').textContent = r.status == 202 ? 'reload requested' : 'reload failed: ' + r.status;\n"
          "  setTimeout(poll, 500);\n"
          "}\n"
          "poll(); setInterval(poll, 2000);\n"
          "</script></body></html>\n",
          f);
    fclose(f);
    send_html(req, 200, html, len);
}

/* Raw per-route totals; the page turns two samples into rates. */
static void dev_stats(h2o_req_t *req)
{
    const weft_generation *g = weft_loop_current->gen;
    weft_reload_status rs;
    weft_reload_status_get(&rs);
    json_t *routes = json_object();
    for (size_t i = 0; i < g->n_routes; i++) {
        int slot = g->routes[i].stat_slot;
        uint64_t count = 0;
        double sum = 0;
        weft_stats_slot_totals(slot, &count, &sum);
        char key[16];
        snprintf(key, sizeof(key), "%d", slot);
        json_object_set_new(routes, key, json_pack("{s:I, s:f}", "count", (json_int_t)count, "sum", sum));
    }
    char last[2200];
    snprintf(last, sizeof(last), "%s%s", rs.at == 0 ? "no reload yet" : rs.last_ok ? "ok: " : "refused: ",
             rs.at == 0 ? "" : rs.message);
    json_t *doc = json_pack("{s:I, s:f, s:s, s:o}", "generation", (json_int_t)g->id, "at",
                            (double)weft_now_ns() / 1e9, "last_reload", last, "routes", routes);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    req->res.status = 200;
    req->res.reason = "OK";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/json"));
    h2o_iovec_t body = h2o_strdup(&req->pool, text, strlen(text));
    free(text);
    req->res.content_length = body.len;
    h2o_send_inline(req, body.base, body.len);
}

int weft_dev_admin(h2o_req_t *req)
{
    if (!weft_dev_active())
        return 0;
    h2o_iovec_t p = req->path_normalized;
    if (h2o_memis(p.base, p.len, H2O_STRLIT("/dev")) || h2o_memis(p.base, p.len, H2O_STRLIT("/dev/"))) {
        dev_page(req);
        return 1;
    }
    if (h2o_memis(p.base, p.len, H2O_STRLIT("/dev/stats"))) {
        dev_stats(req);
        return 1;
    }
    return 0;
}

/* ---- entry ---- */

static int make_dir(const char *path)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "weft dev: cannot create %s: %s\n", path, strerror(errno));
        return -1;
    }
    chmod(path, 0700);
    return 0;
}

int weft_dev_prepare(const char *dir, char *conf_out, size_t size)
{
    if (realpath(dir, root) == NULL) {
        fprintf(stderr, "weft dev: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    snprintf(state, sizeof(state), "%s/.weft-dev", root);
    snprintf(plugdir, sizeof(plugdir), "%s/plugins", state);
    char builddir[PATH_MAX + 8];
    snprintf(builddir, sizeof(builddir), "%s/build", state);
    snprintf(confpath, sizeof(confpath), "%s/weft.conf", state);
    if (make_dir(state) != 0 || make_dir(plugdir) != 0 || make_dir(builddir) != 0)
        return -1;
    watch_fd = inotify_init1(IN_CLOEXEC);
    if (watch_fd < 0)
        weft_log_error("dev: inotify: %s; sources are not watched", strerror(errno));
    else
        wds[MAX_PROJECTS] = inotify_add_watch(watch_fd, root, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
    pthread_mutex_lock(&mu);
    scan();
    watch_projects();
    pthread_mutex_unlock(&mu);
    if (n_projects == 0)
        weft_log_warn("dev: no plugin project in %s (a directory NAME with NAME.c); create one with `weft new-plugin "
                      "NAME %s`",
                      root, dir);
    for (int i = 0; i < n_projects; i++)
        build(&projects[i]);
    if (write_config() != 0) {
        fprintf(stderr, "weft dev: cannot write %s\n", confpath);
        return -1;
    }
    atomic_store(&active, 1);
    snprintf(conf_out, size, "%s", confpath);
    return 0;
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

void weft_dev_start_watching(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, watch_main, NULL) == 0)
        pthread_detach(t);
}
