/*
 * The weft configuration: a libconfig file parsed and validated against
 * weft's schema into plain C structures. Nothing here starts anything, so the
 * same code serves `weft -t`, start-up and (later) reload.
 */
#ifndef WEFT_CONFIG_H
#define WEFT_CONFIG_H

#include <libconfig.h>
#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"
#include "config/edge_cfg.h"
#include "config/methods.h"

typedef enum weft_dispatch {
    WEFT_DISPATCH_POOL,
    WEFT_DISPATCH_COROUTINE,
    WEFT_DISPATCH_REACTIVE,
    WEFT_DISPATCH_AUTO /* coroutine or pool, chosen from what the handler does (dispatch/auto.c) */
} weft_dispatch;

const char *weft_dispatch_name(weft_dispatch d);

/* log.request_id_header: which answers carry X-Request-Id. */
enum { WEFT_REQID_ALWAYS, WEFT_REQID_WHEN_SENT, WEFT_REQID_NEVER };


typedef struct weft_tls_cfg {
    char *certificate; /* PEM chain file, leaf first */
    char *key;         /* PEM private key file */
    int min_version;   /* OpenSSL protocol version constant */
    char *ciphers;     /* TLS <= 1.2 cipher list, or NULL for OpenSSL's default */
} weft_tls_cfg;

typedef struct weft_listen_cfg {
    char *host; /* numeric address as written, brackets removed: "0.0.0.0", "::" */
    uint16_t port;     /* the port served (PORT and ephemeral ports resolved at bind) */
    uint16_t cfg_port; /* the port as configured */
    int line;
    weft_tls_cfg *tls; /* NULL: cleartext (HTTP/1.1 and HTTP/2 with prior knowledge) */
    struct weft_cidr *trusted; /* trusted_proxies: peers whose Forwarded / X-Forwarded-* count */
    size_t n_trusted;
    int proxy_protocol; /* every connection starts with a PROXY v1/v2 header (restart-only) */
    int forwarded;      /* client_header = "Forwarded" (RFC 7239) instead of X-Forwarded-For */
} weft_listen_cfg;

typedef struct weft_pool_cfg {
    char *name;
    int size;  /* worker threads */
    int queue; /* bound on waiting requests; beyond it: 503 */
    int queue_timeout_ms; /* a request waiting longer for a worker gets 503; 0: no bound */
    int max_long_lived;   /* workers lent to WebSockets and streams beyond `size` (dispatch/workpool.h) */
    int nice;             /* the workers' scheduling priority below the loops: 0 (same) to 19 */
    int line;
} weft_pool_cfg;

/* A route's `auto` group: how dispatch = "auto" moves it (docs/CONFIG.md). */
typedef struct weft_auto_cfg {
    int prefer;      /* -1: measure; WEFT_DISPATCH_POOL or _COROUTINE: pinned there */
    int min_dwell_s; /* a promotion back to coroutine waits this long after the last change */
    int probe_s;     /* first interval between probes of a demoted route */
    int probe_max_s; /* cap of the interval, doubled by each probe that blocked */
} weft_auto_cfg;

/* A route's rate_limit group (http/ratelimit.c): a token bucket of `burst`
 * requests refilled at requests / per_s a second, per client or for the route. */
enum { WEFT_RL_NONE, WEFT_RL_CLIENT, WEFT_RL_ROUTE };
typedef struct weft_ratelimit_cfg {
    int per;       /* WEFT_RL_* */
    long requests; /* this many ... */
    long per_s;    /* ... every per_s seconds */
    long burst;    /* the bucket's size: requests at once after a quiet spell */
} weft_ratelimit_cfg;

typedef struct weft_route_cfg {
    char *path;       /* pattern, e.g. "/persons/{id}" */
    unsigned methods; /* WEFT_M_* mask */
    char *plugin;
    weft_dispatch dispatch;
    char *pool;                /* dispatch == pool or auto only */
    weft_auto_cfg adapt;       /* dispatch == auto only */
    config_setting_t *options; /* the route's `options` group, or NULL */
    int timeout_ms;            /* answer 504 and cancel after this long; 0: no deadline */
    size_t max_body;           /* largest request body; limits.max_body unless set */
    int stream_body;           /* the handler reads the body as it arrives (req_body_read) */
    int max_concurrent;        /* requests of this route in flight at once; more: 503; 0: no cap */
    weft_ratelimit_cfg rate_limit; /* per == WEFT_RL_NONE: no limit */
    weft_headers_cfg *headers;   /* header rules after the global ones; NULL: none */
    weft_compress_cfg *compress; /* replaces the global compress; NULL: the global one */
    weft_cors_cfg *cors;         /* NULL: no CORS */
    const char *file;
    int line;
    /* limits.max_buffered_response(_total), copied here so that request/
     * reads the serving generation's values (request/backlog.h) */
    size_t max_buffered_response, max_buffered_response_total;
} weft_route_cfg;

/* A route that serves a directory instead of a plugin: `static = { ... }`
 * (config/route_static.c, served by edge/static.c). */
typedef struct weft_static_cfg {
    char *path;          /* a literal prefix: "/assets" serves /assets/... */
    char *dir;           /* absolute, resolved against the file the route is in */
    char **index;        /* NULL-terminated file names tried for a path ending in '/' */
    int follow_symlinks; /* 0: a symlink resolving outside dir is never served */
    int send_compressed; /* serve NAME.br / .zst / .gz when Accept-Encoding takes them */
    weft_ratelimit_cfg rate_limit; /* as a plugin route's: its own, the top level's, or none */
    const char *file;
    int line;
} weft_static_cfg;

enum { WEFT_OFF = 0, WEFT_ON_MAIN = 1, WEFT_ON_ADMIN = 2 };

/* database.pooler: what stands between weft and PostgreSQL (docs/DATABASE.md, "Through a connection pooler"). */
enum { WEFT_POOLER_NONE, WEFT_POOLER_SESSION, WEFT_POOLER_TRANSACTION };

typedef struct weft_db_cfg {
    char *conninfo;        /* libpq conninfo; PG* environment variables fill the rest */
    char *listen_conninfo; /* LISTEN's own session (db_listen.c); NULL: conninfo, unless pooler is transaction */
    char *password;        /* database.password_file's content; NULL: libpq's own ways */
    int pool_connections;  /* blocking connections lent to pool workers; 0: workers use the loops' pipelined ones */
    int loop_connections;  /* pipelined non-blocking connections per event loop */
    int statement_timeout_ms;
    int connect_timeout_s;
    int tx_connections; /* connections held by open transactions: per event loop, and for pool workers */
    int tx_wait_ms;     /* how long db_begin waits for one before WEFT_UNAVAILABLE */
    int pooler;         /* WEFT_POOLER_*: no `options` startup parameter behind one; statement_timeout set by SQL */
    int unnamed;        /* database.prepared = false: unnamed statements (a Parse with each); else named, once per connection */
    int configured; /* a database group, or PGHOST/PGHOSTADDR/PGPORT/PGDATABASE/PGSERVICE: readiness checks it */
} weft_db_cfg;

/* A route fragment that was read (config/route_files.h). */
typedef struct weft_route_file {
    char *path;
    config_t lc; /* owns its routes' options groups: lives as long as the config */
} weft_route_file;

/* A drop-in file (a routes.d .conf, NAME.routes, or the plugin it routes to)
 * left out of a config because it would not load: the rest serves without it. */
typedef struct weft_refusal {
    char *file;
    char *reason; /* the errors it caused, joined by "; " */
} weft_refusal;

/* Which drop-in files a load may leave out instead of failing. */
typedef struct weft_dropin_policy {
    int any;                   /* every one (a start, weft -t) */
    const weft_refusal *known; /* else only these (a reload: those the serving config left out) */
    size_t n_known;
    const weft_refusal *skip; /* not even read: the generation build refused them (reload/dropins.c) */
    size_t n_skip;
} weft_dropin_policy;

/** WebSockets accepted by plugins (websocket group). */
typedef struct weft_ws_cfg {
    size_t max_message; /* largest message received, in bytes; larger: closed with 1009 */
    int idle_timeout_s; /* nothing received for this long: closed with 1001 */
    size_t max_queued_total; /* bytes queued to all sockets of the process; past it slow readers are closed */
} weft_ws_cfg;

/** Trace context and span export (trace group, config/trace_cfg.c; docs/CONFIG.md). */
typedef struct weft_trace_cfg {
    int accept_incoming;    /* continue a valid incoming traceparent (else every request starts a trace) */
    double sample_ratio;    /* share of new traces recorded (sampled flag set, spans exported) */
    char *otlp_endpoint;    /* OTLP/HTTP traces URL; NULL: no export */
    char *service_name;     /* the spans' service.name */
    int batch_size, batch_interval_ms, queue_size, export_timeout_ms;
} weft_trace_cfg;

typedef struct weft_config {
    char *path; /* the file read */
    char *text; /* its contents, as parsed */
    config_t lc;
    int threads;
    weft_listen_cfg *listen;
    size_t n_listen;
    char **plugin_dirs; /* absolute (relative ones resolved against the config's directory) */
    size_t n_plugin_dirs;
    weft_pool_cfg *pools;
    size_t n_pools;
    weft_route_cfg *routes; /* the main file's first, then each fragment's */
    size_t n_routes;
    char *routes_dir;                /* routes.d next to the config file */
    weft_route_file **route_files;   /* fragments read, in reading order */
    size_t n_route_files;
    weft_refusal *refused; /* drop-in files left out, in reading order */
    size_t n_refused;
    struct {
        size_t max_body;
        size_t max_uri; /* request target (path + query) in bytes; longer: 414 */
        int max_connections;
        int max_connections_per_ip; /* open connections from one client address; 0: no cap */
        int request_timeout_ms; /* HTTP/1: receiving a request, and keep-alive idle */
        int idle_timeout_ms;    /* HTTP/2 connection idle */
        int timeout_ms;         /* default handler deadline of a route; 0: none */
        int max_resets;         /* streams one connection may reset before their answer ... */
        int reset_window_ms;    /* ... within this window (http/abuse.c) */
        int max_inflight_per_conn; /* handler work in flight per connection */
        size_t max_header_line; /* HTTP/1 request header line, bytes; longer: 431 */
        size_t max_headers;     /* HTTP/1 request header lines in total, bytes; more: 431 */
        size_t max_route_file_size;   /* bytes of one route fragment; bigger: refused */
        size_t max_route_file_routes; /* routes in one route fragment; more: refused */
        int rate_limit_clients; /* entries of the per-client rate limit table (restart-only) */
        size_t max_buffered_response;       /* answer bytes queued for one client connection (request/backlog.c) */
        size_t max_buffered_response_total; /* ... for all of them; past it the slowest readers are closed */
        size_t max_buffered_body_total;     /* collected request bodies, all together (http/bodybuf.c); past it 503 */
        int max_compressing_responses; /* answers compressed on the fly at once (edge/compress.c); 0: none */
    } limits;
    struct {
        int metrics; /* WEFT_ON_MAIN, WEFT_ON_ADMIN or WEFT_OFF */
        int health;
    } observability;
    struct {
        int level;
        char *access_log;      /* NULL: no access log */
        char *error_log;       /* NULL: standard error as it was given (the journal under systemd) */
        int json;              /* log.format = "json": one JSON object per line */
        int request_id_header; /* WEFT_REQID_ALWAYS, _WHEN_SENT or _NEVER */
    } log;
    struct {
        size_t stack_size;
    } coroutine;
    struct {
        int threshold_ms;
        int interval_s;
    } blocking;
    struct {
        int grace_s;
        int unready_ms; /* readiness 503 while still accepting, before the listeners close */
    } shutdown;
    weft_ws_cfg websocket;
    weft_ratelimit_cfg rate_limit; /* the top level's: every route's without one of its own */
    weft_db_cfg database;
    struct {
        int enabled;
        int is_default; /* not configured: a busy default port only warns */
        char *host;
        uint16_t port;
        uint16_t cfg_port;
        int allow_remote;
        char **allowed_hosts; /* Host names besides loopback ones the admin listener answers to */
        size_t n_allowed_hosts;
        char *token;          /* from admin.token_file: the bearer /reload requires; NULL: none */
    } admin;
    int watch;      /* reload when the config file changes */
    char *pid_file; /* NULL: none */
    char *state_dir; /* crash records; NULL: $STATE_DIRECTORY, else the pid file's directory */
    char *user;     /* switch to this user after binding when started as root; NULL: stay */
    weft_headers_cfg *headers;   /* top-level header rules, for every answer; NULL: none */
    weft_compress_cfg *compress; /* top-level compress; NULL: answers go out as they are */
    weft_trace_cfg trace;
    weft_static_cfg *statics; /* static routes, in reading order like routes */
    size_t n_statics;
} weft_config;

/**
 * Reads and validates `path`. On failure returns NULL and appends every
 * problem, each naming file, line and setting, to `errs`.
 */
weft_config *weft_config_load(const char *path, weft_errors *errs);
/** Same, from text already read (`path` names it in messages and anchors relative paths). */
weft_config *weft_config_load_text(const char *path, const char *text, weft_errors *errs);
/**
 * Same, leaving out the drop-in files `p` allows to be left out when they
 * have errors (they land in cfg->refused instead of `errs`). `text` NULL:
 * read `path`. A NULL `p` leaves nothing out.
 */
weft_config *weft_config_load_dropins(const char *path, const char *text, const weft_dropin_policy *p,
                                      weft_errors *errs);
void weft_config_free(weft_config *cfg);
/** The pool a route names, or NULL. */
const weft_pool_cfg *weft_config_find_pool(const weft_config *cfg, const char *name);
/** The `plugins.NAME` options group, or NULL. */
config_setting_t *weft_config_plugin_options(const weft_config *cfg, const char *name);

#endif
