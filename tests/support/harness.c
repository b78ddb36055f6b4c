#include "harness.h"
#include "spawn.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The server under test: this build's, unless WEFT_TEST_BIN names another
 * (tests/tsan.sh points it, and WEFT_TEST_PLUGIN_DIR, at a ThreadSanitizer
 * build of the server and plugins). */
static const char *weft_bin(void)
{
    const char *e = getenv("WEFT_TEST_BIN");
    return e != NULL && *e != '\0' ? e : WEFT_BIN;
}

static const char *plugin_dir(void)
{
    const char *e = getenv("WEFT_TEST_PLUGIN_DIR");
    return e != NULL && *e != '\0' ? e : WEFT_PLUGIN_DIR;
}

double wt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

char *wt_read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[8192];
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            buf = realloc(buf, cap);
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (buf == NULL)
        buf = calloc(1, 1);
    buf[len] = '\0';
    return buf;
}

/* The way editors and the docs say to save: write a temporary file, rename it
 * over the old one (a watcher only ever sees complete files). The temporary
 * name ends in neither .c nor .h, so writing it triggers no build. */
void wt_write_file_atomic(const char *path, const char *text)
{
    char tmp[4200];
    const char *slash = strrchr(path, '/');
    cr_assert_not_null(slash, "%s: not a path", path);
    snprintf(tmp, sizeof(tmp), "%.*s/.%s.tmp", (int)(slash - path), path, slash + 1);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f, "cannot write %s: %s", tmp, strerror(errno));
    cr_assert_geq(fputs(text, f), 0);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(rename(tmp, path), 0, "rename %s -> %s: %s", tmp, path, strerror(errno));
}

void wt_rm_rf(const char *dir)
{
    if (strncmp(dir, "/tmp/weft-", 10) != 0 || strstr(dir, "'") != NULL)
        return;
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        cr_log_warn("could not remove %s", dir);
}

static void make_dir(wt_server *s)
{
    if (s->dir[0] != '\0')
        return;
    snprintf(s->dir, sizeof(s->dir), "/tmp/weft-test-XXXXXX");
    cr_assert_not_null(mkdtemp(s->dir), "mkdtemp: %s", strerror(errno));
    snprintf(s->conf, sizeof(s->conf), "%s/weft.conf", s->dir);
    snprintf(s->log, sizeof(s->log), "%s/weft.log", s->dir);
}

/* Writes `conf`, with `pooler = MODE;` put first in its database group when
 * WT_DB_POOLER=MODE is set (tests/pgbouncer.sh runs a suite through
 * PgBouncer) and the config does not choose a pooler itself. */
static void put_conf(FILE *f, const char *conf)
{
    const char *mode = getenv("WT_DB_POOLER");
    const char *at = mode != NULL && mode[0] != '\0' && strstr(conf, "pooler =") == NULL
                         ? strstr(conf, "database = {")
                         : NULL;
    if (at == NULL) {
        fputs(conf, f);
        return;
    }
    at += strlen("database = {");
    fprintf(f, "%.*s pooler = \"%s\"; %s", (int)(at - conf), conf, mode, at);
}

void wt_write_conf(wt_server *s, const char *conf)
{
    make_dir(s);
    char tmp[320];
    snprintf(tmp, sizeof(tmp), "%s.tmp", s->conf);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f);
    put_conf(f, conf);
    fclose(f);
    cr_assert_eq(rename(tmp, s->conf), 0);
}

static char **build_env(const char *const *extra)
{
    /* BXFI_MAP is this test's Criterion sandbox: tests that weft runs (weft dev) need their own. */
    static const char *const drop[] = {"WEFT_PLUGIN_PATH=", "PORT=", "BXFI_MAP=", NULL};
    static char plugin_path[1024];
    snprintf(plugin_path, sizeof(plugin_path), "WEFT_PLUGIN_PATH=%s:%s", plugin_dir(), WEFT_FIXTURE_DIR);
    size_t k = 0;
    while (extra != NULL && extra[k] != NULL)
        k++;
    const char **set = calloc(k + 2, sizeof(char *));
    cr_assert_not_null(set);
    set[0] = plugin_path;
    for (size_t i = 0; i < k; i++)
        set[i + 1] = extra[i];
    char **env = wt_env(drop, set);
    free(set);
    return env;
}

char *wt_read_log(const wt_server *s)
{
    char *text = wt_read_file(s->log);
    return text != NULL ? text : strdup("");
}

static int admin_port_of(const char *line)
{
    const char *p = line + strlen("admin listening on http://");
    const char *end = strchr(p, '/');
    const char *colon = p;
    for (const char *q = p; end != NULL && q < end; q++)
        if (*q == ':')
            colon = q;
    return atoi(colon + 1);
}

void wt_start_env(wt_server *s, const char *conf, const char *const *extra_env)
{
    wt_start_via(s, conf, NULL, extra_env);
}

void wt_start_via(wt_server *s, const char *conf, const char *const *wrapper, const char *const *extra_env)
{
    if (conf != NULL)
        wt_write_conf(s, conf);
    char **env = build_env(extra_env);
    const char *bin = weft_bin();
    const char *argv[16];
    size_t n = 0;
    for (; wrapper != NULL && wrapper[n] != NULL; n++) {
        cr_assert_lt(n, sizeof(argv) / sizeof(argv[0]) - 4, "wrapper command too long");
        argv[n] = wrapper[n];
    }
    int wrapped = n > 0;
    argv[n++] = wrapped ? bin : "weft";
    argv[n++] = "-c";
    argv[n++] = s->conf;
    argv[n] = NULL;
    pid_t pid = wt_spawn(wrapped ? wrapper[0] : bin, argv, env, NULL, s->log, WT_SPAWN_TRUNCATE);
    free(env);
    s->pid = pid;
    s->port = 0;
    double deadline = wt_now_ms() + 15000;
    while (wt_now_ms() < deadline) {
        char *log = wt_read_log(s);
        /* the main listener's line, not "admin listening on ..." */
        const char *p = log;
        while ((p = strstr(p, "listening on http://")) != NULL && p >= log + 6 && strncmp(p - 6, "admin ", 6) == 0)
            p++;
        const char *a = strstr(log, "admin listening on http://");
        if (a != NULL)
            s->admin_port = admin_port_of(a);
        if (p != NULL) {
            const char *colon = strchr(p + 20, ']');
            colon = strchr(colon != NULL ? colon : p + 20, ':');
            if (colon != NULL && strchr(colon, '/') != NULL)
                s->port = atoi(colon + 1);
        }
        int ready = strstr(log, "serving ") != NULL;
        free(log);
        if (s->port > 0 && ready)
            return;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            char *l = wt_read_log(s);
            cr_assert_fail("weft exited during start-up (status %d):\n%s", status, l);
        }
        usleep(20000);
    }
    cr_assert_fail("weft did not start within 15 s");
}

void wt_start(wt_server *s, const char *conf) { wt_start_env(s, conf, NULL); }

void wt_startf(wt_server *s, const char *fmt, ...)
{
    make_dir(s); /* before formatting: an argument may be s->dir */
    char conf[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(conf, sizeof(conf), fmt, ap);
    va_end(ap);
    cr_assert(n >= 0 && (size_t)n < sizeof(conf), "config longer than %zu bytes", sizeof(conf));
    wt_start(s, conf);
}

int wt_stop(wt_server *s)
{
    if (s->pid <= 0)
        return -1;
    kill(s->pid, SIGTERM);
    int status = 0;
    double deadline = wt_now_ms() + 30000;
    while (waitpid(s->pid, &status, WNOHANG) == 0) {
        if (wt_now_ms() > deadline) {
            /* A server that does not stop is a bug to find, not only to
             * kill: every thread's stack goes into its log first. */
            char cmd[1024];
            snprintf(cmd, sizeof(cmd),
                     "command -v gdb >/dev/null && echo '--- weft did not stop within 30 s; its threads:' >> '%s' && "
                     "timeout 60 gdb -p %d -batch -ex 'thread apply all bt' >> '%s' 2>&1",
                     s->log, (int)s->pid, s->log);
            int ignored = system(cmd);
            (void)ignored;
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &status, 0);
            break;
        }
        usleep(10000);
    }
    s->pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

size_t wt_curl_sink(char *p, size_t size, size_t n, void *ud)
{
    wt_buf *b = ud;
    b->data = realloc(b->data, b->len + size * n + 1);
    memcpy(b->data + b->len, p, size * n);
    b->len += size * n;
    b->data[b->len] = '\0';
    return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    wt_resp *r = ud;
    size_t used = strlen(r->headers), len = size * n;
    if (used + len < sizeof(r->headers)) {
        memcpy(r->headers + used, p, len);
        r->headers[used + len] = '\0';
    }
    return len;
}

static CURL *make_easy(const wt_server *s, const char *method, const char *path, const char *body, wt_buf *b,
                       wt_resp *r, struct curl_slist *headers)
{
    char url[2048];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", s->port, path);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wt_curl_sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (headers != NULL)
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    if (r != NULL) {
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    }
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET") != 0)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body != NULL) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    return c;
}

static struct curl_slist *type_headers(const char *content_type)
{
    if (content_type == NULL)
        return NULL;
    /* "Expect:" stops curl waiting for a 100-continue on bodies over 1 KiB;
     * an empty type removes the header altogether. */
    char ct[256];
    snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
    return curl_slist_append(curl_slist_append(NULL, "Expect:"), ct);
}

static int perform(const wt_server *s, const char *method, const char *path, struct curl_slist *headers,
                   const char *body, wt_resp *out, int http2)
{
    memset(out, 0, sizeof(*out));
    wt_buf b = {0};
    CURL *c = make_easy(s, method, path, body, &b, out, headers);
    if (http2)
        curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    curl_easy_cleanup(c);
    curl_slist_free_all(headers);
    out->body = b.data != NULL ? b.data : strdup("");
    out->len = b.len;
    return rc == CURLE_OK ? 0 : -1;
}

int wt_http_typed(const wt_server *s, const char *method, const char *path, const char *content_type,
                  const char *body, wt_resp *out)
{
    return perform(s, method, path, type_headers(content_type), body, out, 0);
}

int wt_http_headers(const wt_server *s, const char *method, const char *path, const char *const *headers,
                    const char *body, wt_resp *out)
{
    struct curl_slist *list = curl_slist_append(NULL, "Expect:");
    for (size_t i = 0; headers != NULL && headers[i] != NULL; i++)
        list = curl_slist_append(list, headers[i]);
    return perform(s, method, path, list, body, out, 0);
}

int wt_request(const wt_server *s, const wt_req *q, wt_resp *out)
{
    struct curl_slist *list =
        q->content_type != NULL ? type_headers(q->content_type) : curl_slist_append(NULL, "Expect:");
    for (size_t i = 0; q->headers != NULL && q->headers[i] != NULL; i++)
        list = curl_slist_append(list, q->headers[i]);
    return perform(s, q->method != NULL ? q->method : "GET", q->path, list, q->body, out, q->http2);
}

int wt_http(const wt_server *s, const char *method, const char *path, const char *body, wt_resp *out)
{
    return wt_http_typed(s, method, path, NULL, body, out);
}

void wt_pct_encode(const char *raw, char *out, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)raw; *p != '\0' && o + 4 < size; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p) != NULL) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    out[o] = '\0';
}

const char *wt_header(const wt_resp *r, const char *name, char *out, size_t size)
{
    size_t n = strlen(name);
    for (const char *p = r->headers; p != NULL && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1;
            while (*v == ' ')
                v++;
            size_t len = strcspn(v, "\r\n");
            snprintf(out, size, "%.*s", (int)len, v);
            return out;
        }
    }
    return NULL;
}

void wt_resp_free(wt_resp *r)
{
    free(r->body);
    r->body = NULL;
}


double wt_http_batch(const wt_server *s, int n, const char *method, const char *const *paths,
                     const char *content_type, const char *const *bodies, long *statuses, char **out)
{
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)n);
    CURL **easy = calloc((size_t)n, sizeof(CURL *));
    struct curl_slist **hdrs = calloc((size_t)n, sizeof(*hdrs));
    wt_buf *bufs = calloc((size_t)n, sizeof(wt_buf));
    double t0 = wt_now_ms();
    for (int i = 0; i < n; i++) {
        hdrs[i] = type_headers(content_type);
        easy[i] = make_easy(s, method, paths[i], bodies != NULL ? bodies[i] : NULL, &bufs[i], NULL, hdrs[i]);
        curl_easy_setopt(easy[i], CURLOPT_FORBID_REUSE, 1L);
        curl_multi_add_handle(multi, easy[i]);
    }
    int running = n;
    while (running > 0) {
        curl_multi_perform(multi, &running);
        if (running > 0)
            curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    double elapsed = wt_now_ms() - t0;
    for (int i = 0; i < n; i++) {
        statuses[i] = 0;
        curl_easy_getinfo(easy[i], CURLINFO_RESPONSE_CODE, &statuses[i]);
        if (out != NULL)
            out[i] = bufs[i].data != NULL ? bufs[i].data : strdup("");
        else
            free(bufs[i].data);
        curl_multi_remove_handle(multi, easy[i]);
        curl_easy_cleanup(easy[i]);
        curl_slist_free_all(hdrs[i]);
    }
    curl_multi_cleanup(multi);
    free(easy);
    free(hdrs);
    free(bufs);
    return elapsed;
}

double wt_http_many(const wt_server *s, const char *path, int n, long *statuses, char **bodies)
{
    const char **paths = calloc((size_t)n, sizeof(char *));
    for (int i = 0; i < n; i++)
        paths[i] = path;
    double ms = wt_http_batch(s, n, "GET", paths, NULL, NULL, statuses, bodies);
    free(paths);
    return ms;
}

int wt_run(char **out, const char *const *args, const char *const *extra_env)
{
    char path[] = "/tmp/weft-run-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_neq(fd, -1);
    close(fd);
    char **env = build_env(extra_env);
    size_t n = 0;
    while (args[n] != NULL)
        n++;
    const char **argv = calloc(n + 2, sizeof(char *));
    argv[0] = "weft";
    for (size_t i = 0; i < n; i++)
        argv[i + 1] = args[i];
    int timed_out;
    int status = wt_wait(wt_spawn(weft_bin(), argv, env, NULL, path, 0), -1, 0, &timed_out);
    free(argv);
    free(env);
    *out = wt_read_file(path);
    if (*out == NULL)
        *out = strdup("");
    unlink(path);
    return status;
}

void wt_finish(wt_server *s)
{
    if (s->pid <= 0)
        return;
    int status = wt_stop(s);
    char *log = wt_read_log(s);
    cr_assert_eq(status, 0, "weft exited with status %d (sanitizer reports and leaks count):\n%s", status, log);
    free(log);
}

void wt_suite_stop(wt_server *s)
{
    if (s->pid <= 0)
        return;
    int status = wt_stop(s);
    char *log = wt_read_log(s);
    cr_expect_eq(status, 0, "weft exited with %d:\n%s", status, log);
    free(log);
}

char *wt_wait_log(const wt_server *s, const char *needle, double limit_ms)
{
    for (double t0 = wt_now_ms();; usleep(50000)) {
        char *log = wt_read_log(s);
        if (strstr(log, needle) != NULL)
            return log;
        if (wt_now_ms() - t0 > limit_ms)
            cr_assert_fail("'%s' did not appear in the log within %.0f ms:\n%s", needle, limit_ms, log);
        free(log);
    }
}

static double metric_value(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p != NULL && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == ' ')
            return atof(p + n + 1);
    return -1;
}

void wt_wait_metric(const wt_server *s, const char *name, double min, double limit_ms)
{
    wt_server where = *s;
    double last = -1;
    for (double t0 = wt_now_ms(); wt_now_ms() - t0 < limit_ms; usleep(5000)) {
        wt_resp r;
        if (wt_http(&where, "GET", "/metrics", NULL, &r) != 0)
            continue;
        if (r.status == 404 && s->admin_port > 0 && where.port != s->admin_port) {
            where.port = s->admin_port; /* observability.metrics = "admin" */
        } else if (r.status == 200 && (last = metric_value(r.body, name)) >= min) {
            wt_resp_free(&r);
            return;
        }
        wt_resp_free(&r);
    }
    cr_assert_fail("%s stayed below %g for %.0f ms (last %g)", name, min, limit_ms, last);
}

wt_policy wt_policies[3] = {{"pool"}, {"coroutine"}, {"reactive"}};

struct wt_load {
    int port, clients, n_paths;
    const char *const *paths;
    atomic_int stop, next;
    atomic_long ok, failed;
    pthread_mutex_t mu;
    char last_failure[1024];
    pthread_t threads[64];
};

static size_t load_sink(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return size * n;
}

static void *load_client(void *arg)
{
    wt_load *l = arg;
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", l->port,
             l->paths[atomic_fetch_add(&l->next, 1) % l->n_paths]);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, load_sink);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    while (!atomic_load(&l->stop)) {
        CURLcode rc = curl_easy_perform(c);
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (rc == CURLE_OK && status == 200) {
            atomic_fetch_add(&l->ok, 1);
        } else {
            atomic_fetch_add(&l->failed, 1);
            pthread_mutex_lock(&l->mu);
            snprintf(l->last_failure, sizeof(l->last_failure), "%s: curl %d (%s), status %ld", url, rc,
                     curl_easy_strerror(rc), status);
            pthread_mutex_unlock(&l->mu);
        }
        struct timespec pace = {0, 1000 * 1000}; /* a client's think time, not a wait for the server */
        nanosleep(&pace, NULL);
    }
    curl_easy_cleanup(c);
    return NULL;
}

wt_load *wt_load_start(const wt_server *s, int clients, const char *const *paths, int n_paths)
{
    wt_load *l = calloc(1, sizeof(*l));
    cr_assert_not_null(l);
    cr_assert(clients > 0 && clients <= 64 && n_paths > 0);
    l->port = s->port;
    l->clients = clients;
    l->paths = paths;
    l->n_paths = n_paths;
    pthread_mutex_init(&l->mu, NULL);
    for (int i = 0; i < clients; i++)
        cr_assert_eq(pthread_create(&l->threads[i], NULL, load_client, l), 0);
    return l;
}

void wt_load_stop(wt_load *l, long *ok, long *failed, char *last_failure, size_t size)
{
    atomic_store(&l->stop, 1);
    for (int i = 0; i < l->clients; i++)
        pthread_join(l->threads[i], NULL);
    *ok = atomic_load(&l->ok);
    *failed = atomic_load(&l->failed);
    snprintf(last_failure, size, "%s", l->last_failure);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

double wt_metric(const wt_server *s, const char *key)
{
    wt_server where = *s;
    for (int attempt = 0; attempt < 2; attempt++) {
        wt_resp r;
        if (wt_http(&where, "GET", "/metrics", NULL, &r) != 0)
            return -1;
        if (r.status == 404 && s->admin_port > 0 && where.port != s->admin_port) {
            where.port = s->admin_port; /* observability.metrics = "admin" */
            wt_resp_free(&r);
            continue;
        }
        double v = r.status == 200 ? metric_value(r.body, key) : -1;
        wt_resp_free(&r);
        return v;
    }
    return -1;
}

double wt_await_metric(const wt_server *s, const char *key, int at_least, double want, double limit_ms)
{
    double t0 = wt_now_ms(), v = -1;
    while (wt_now_ms() - t0 < limit_ms) {
        v = wt_metric(s, key);
        if (v >= 0 && (at_least ? v >= want : v <= want))
            return wt_now_ms() - t0;
        usleep(5000);
    }
    cr_assert_fail("%s stayed at %g (wanted %s %g) for %.0f ms", key, v, at_least ? ">=" : "<=", want, limit_ms);
    return -1;
}

int wt_send_get(const wt_server *s, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s", strerror(errno));
    char req[512];
    int len = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path);
    cr_assert_eq(write(fd, req, (size_t)len), len);
    return fd;
}

void wt_wait_metric_eq(const wt_server *s, const char *key, double want, double limit_ms)
{
    for (double t0 = wt_now_ms();; usleep(50000)) {
        double v = wt_metric(s, key);
        if (v == want)
            return;
        if (wt_now_ms() - t0 > limit_ms)
            cr_assert_fail("%s stayed %g (wanted %g) for %.0f ms", key, v, want, limit_ms);
    }
}


int wt_free_port(void)
{
    int low = 32768;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f != NULL) {
        if (fscanf(f, "%d", &low) != 1)
            low = 32768;
        fclose(f);
    }
    cr_assert_gt(low, 10001, "the ephemeral range starts at %d: no room below it", low);
    unsigned seed = (unsigned)getpid() ^ (unsigned)(wt_now_ms() * 1000);
    for (int i = 0; i < 200; i++) {
        int port = 10000 + (int)(rand_r(&seed) % (unsigned)(low - 10000));
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        int ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
        if (fd >= 0)
            close(fd);
        if (ok)
            return port;
    }
    cr_assert_fail("no free port in 10000-%d after 200 tries", low - 1);
    return -1;
}
