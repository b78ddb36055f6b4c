/*
 * Integration-test harness: runs the real weft binary on an ephemeral port
 * with a config written by the test, and talks HTTP to it with libcurl.
 */
#ifndef WEFT_TEST_HARNESS_H
#define WEFT_TEST_HARNESS_H

#include <stddef.h>
#include <stdlib.h>
#include <sys/types.h>

#include "confs.h"

typedef struct wt_server {
    pid_t pid;
    int port;
    int admin_port; /* 0 when the admin listener is off or elsewhere */
    char dir[256];  /* private temp directory: config, log */
    char conf[300];
    char log[300];
} wt_server;

typedef struct wt_resp {
    long status;
    char *body;        /* NUL-terminated */
    size_t len;
    char headers[8192]; /* raw response headers */
} wt_resp;

/** A growing buffer, NUL-terminated, for libcurl's CURLOPT_WRITEFUNCTION = wt_curl_sink. */
typedef struct wt_buf {
    char *data;
    size_t len;
} wt_buf;
size_t wt_curl_sink(char *p, size_t size, size_t n, void *ud);

/**
 * Writes `conf` to a temp file. `extra_env` ("NAME=value", NULL-terminated list) may be NULL.
 * With WT_DB_POOLER=MODE in the environment (tests/pgbouncer.sh) the config's
 * `database = {` group gets `pooler = "MODE";` first: a suite runs through a pooler unchanged.
 */
void wt_write_conf(wt_server *s, const char *conf);
/** Starts weft on the config; waits for its "listening on" line. Fails the test on error. */
void wt_start(wt_server *s, const char *conf);
void wt_start_env(wt_server *s, const char *conf, const char *const *extra_env);
/**
 * wt_start_env with weft run by a wrapper that execs it: `wrapper` (argv,
 * NULL-terminated; argv[0] searched in PATH) gets weft's path, "-c" and the
 * config appended, e.g. a shell that hands weft sockets as systemd does.
 * The pid is the wrapper's, which must exec weft (not fork it).
 */
void wt_start_via(wt_server *s, const char *conf, const char *const *wrapper, const char *const *extra_env);
/**
 * wt_start on a printf-formatted config. The server's directory exists
 * before `fmt` is formatted, so an argument may be s->dir itself (for an
 * access log or a token file in it).
 */
void wt_startf(wt_server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** SIGTERM, then waits; returns the exit status (or 128+signal). */
int wt_stop(wt_server *s);
/**
 * Stops the server inside a test and fails the test unless it exits 0 —
 * Criterion ignores assertions in a suite's .fini, so every test that
 * started a server ends with this.
 */
void wt_finish(wt_server *s);
/** A suite's .fini: stops the server and expects a clean exit (for the tests that did not). */
void wt_suite_stop(wt_server *s);
/** Waits until the log contains `needle`; returns the log (malloc'd) or fails the test. */
char *wt_wait_log(const wt_server *s, const char *needle, double limit_ms);
/** The server's log so far (malloc'd). */
char *wt_read_log(const wt_server *s);

/** One request; `body` may be NULL. Returns 0 or -1 (transport error). */
int wt_http(const wt_server *s, const char *method, const char *path, const char *body, wt_resp *out);
/** Same, with a Content-Type (NULL: curl's default for the body; "": none at all). */
int wt_http_typed(const wt_server *s, const char *method, const char *path, const char *content_type,
                  const char *body, wt_resp *out);
/** Same, with extra request headers ("Name: value", NULL-terminated list). */
int wt_http_headers(const wt_server *s, const char *method, const char *path, const char *const *headers,
                    const char *body, wt_resp *out);
/** A request with everything a test may set; NULL fields are left out (method NULL: GET). */
typedef struct wt_req {
    const char *method, *path;
    const char *content_type;   /* as wt_http_typed */
    const char *body;
    const char *const *headers; /* "Name: value", NULL-terminated */
    int http2;                  /* HTTP/2 with prior knowledge (h2c) instead of HTTP/1.1 */
} wt_req;
/** One request; returns 0 or -1 (transport error). */
int wt_request(const wt_server *s, const wt_req *q, wt_resp *out);
/** Unreserved characters as they are, every other byte as %XX, into out. */
void wt_pct_encode(const char *raw, char *out, size_t size);
/** Header value from a response (case-insensitive), copied into buf; NULL if absent. */
const char *wt_header(const wt_resp *r, const char *name, char *buf, size_t size);
void wt_resp_free(wt_resp *r);
/**
 * Polls the server's /metrics (main listener, else admin) until the series
 * `name` is at least `min`; fails the test after `limit_ms`. Tests wait on
 * the server's own gauges (weft_inflight_requests: requests dispatched and
 * not yet answered), never on a fixed sleep.
 */
void wt_wait_metric(const wt_server *s, const char *name, double min, double limit_ms);

/**
 * `n` requests at once over separate connections: paths[i] and, if bodies is
 * not NULL, bodies[i], all with `content_type` (as wt_http_typed). Statuses
 * and, if out is not NULL, bodies (caller frees) come back; returns elapsed ms.
 */
double wt_http_batch(const wt_server *s, int n, const char *method, const char *const *paths,
                     const char *content_type, const char *const *bodies, long *statuses, char **out);
/** `n` concurrent GETs of `path`; fills statuses and bodies (caller frees bodies); returns elapsed ms. */
double wt_http_many(const wt_server *s, const char *path, int n, long *statuses, char **bodies);

/**
 * Background load: `clients` threads, each GETting paths[i % n_paths] in a
 * loop over keep-alive connections until wt_load_stop; every answer other
 * than 200 counts as a failure (the last one described in `last_failure`).
 * Each client pauses 1 ms between an answer and its next request: a steady
 * stream of requests across whatever the test does (a reload, a hand-over),
 * not a flood that takes both cores from every other test running beside
 * it (4 unpaced clients on /hello ran ~20,000 requests/s).
 */
typedef struct wt_load wt_load;
wt_load *wt_load_start(const wt_server *s, int clients, const char *const *paths, int n_paths);
/** Stops and joins the clients; fills the counts and frees the load. */
void wt_load_stop(wt_load *l, long *ok, long *failed, char *last_failure, size_t size);

/** The value of one exact series ("name" or "name{labels}") on /metrics; -1 if absent. */
double wt_metric(const wt_server *s, const char *key);
/** Polls /metrics until `key` equals `want` (a gauge back to 0); fails the test after limit_ms. */
void wt_wait_metric_eq(const wt_server *s, const char *key, double want, double limit_ms);

/** Fails the test, saying how to start one, unless PGHOST names a PostgreSQL (suite only). */
void wt_need_pg(void);
/** One number from psql against the PostgreSQL in PG* (suite only); fails the test if psql does. */
long long wt_sql_value(const char *sql);

/** Starts tests/support/mock_upstream.py on 127.0.0.1; returns its port. */
int wt_mock_start(pid_t *pid);
/** The same over https with the given PEM certificate and key. */
int wt_mock_start_tls(pid_t *pid, const char *cert, const char *key);
void wt_mock_stop(pid_t pid);
/** Starts tests/support/SCRIPT (a Python server that prints "port N" first)
 *  with up to 5 `args` (NULL-terminated, or NULL); returns its port. Stop it
 *  with wt_mock_stop. */
int wt_py_server_start(pid_t *pid, const char *script, const char *const *args);

/** Runs `weft ARGS...` to completion; stdout+stderr into out (malloc'd). Returns the exit status. */
int wt_run(char **out, const char *const *args, const char *const *extra_env);

/** Monotonic milliseconds. */
double wt_now_ms(void);
/** A free TCP port below the kernel's ephemeral range, for a test that must
 *  name the port before the server starts (PORT=...): one the kernel chose
 *  and the test released could be given to another test's listener or
 *  outgoing connection before the server binds it. */
int wt_free_port(void);
/** A whole file (malloc'd, NUL-terminated); NULL when it cannot be opened. */
char *wt_read_file(const char *path);
/** Writes `text` to a temporary file beside `path` and renames it over `path`. */
void wt_write_file_atomic(const char *path, const char *text);
/** rm -rf of a directory of ours (/tmp/weft-*); anything else is left alone. */
void wt_rm_rf(const char *dir);
/**
 * Whether the server's RSS means anything in this build: under ASan freed
 * memory sits in quarantine and TSan's shadow memory grows with every
 * thread, so memory bounds are checked in plain builds only (the sanitizer
 * builds check for leaks and races instead).
 */
static inline int wt_rss_checked(void)
{
#ifdef __SANITIZE_ADDRESS__
    return 0;
#else
    return getenv("WEFT_TEST_SANITIZER") == NULL;
#endif
}
/** A dispatch policy name, as a Criterion test parameter (plain data). */
typedef struct wt_policy {
    char name[16];
} wt_policy;
/** pool, coroutine, reactive. */
extern wt_policy wt_policies[3];
/** For ParameterizedTestParameters (include <criterion/parameterized.h>). */
#define wt_policy_params() cr_make_param_array(wt_policy, wt_policies, 3)


/** The value of one exact series ("name{labels}") in GET /metrics; -1 if absent. */
/**
 * Polls /metrics until `key` is >= (at_least) or <= `want`; returns the ms
 * it took, or fails the test after limit_ms.
 */
double wt_await_metric(const wt_server *s, const char *key, int at_least, double want, double limit_ms);
/** Opens a connection and sends "GET path HTTP/1.1" on it, unread; returns the fd. */
int wt_send_get(const wt_server *s, const char *path);

/* ---- support/observe.c ---- */
/** Number of threads of a process (from /proc). */
int wt_thread_count(pid_t pid);
/** Resident memory of a process in KiB (from /proc); -1 if unknown. */
long wt_rss_kib(pid_t pid);
/** Write system calls the process made so far (/proc/PID/io syscw: write, writev, sendfile, not sendmsg); -1 if unreadable. */
long wt_write_syscalls(pid_t pid);
/** Open descriptors of a process (from /proc). */
int wt_fd_count(pid_t pid);
/** User + system CPU seconds a process has used (from /proc). */
double wt_cpu_seconds(pid_t pid);
/**
 * Requests the server has dispatched: answered (the series `answered_key`,
 * e.g. weft_requests_total{route=...,code="2xx"}) plus in flight. Never more
 * than the truth, so "all N dispatched" holds once it reads N.
 */
double wt_dispatched(const wt_server *s, const char *answered_key);
/** Polls wt_dispatched until it reaches `n`; fails the test after limit_ms. */
void wt_wait_dispatched(const wt_server *s, const char *answered_key, double n, double limit_ms);

#endif
