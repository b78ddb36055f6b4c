/*
 * aggregate — GET ...?ids=1,2,3 fetches {upstream}{path}{id} for every id
 * over HTTP, all at once, and answers the JSON array of the answers (null
 * for an id the upstream does not know).
 *
 * The outbound-call example: under `coroutine` one handler has every call
 * in flight while it is suspended; under `pool` a worker waits for the same
 * concurrent batch; under `reactive` each call completes in a callback.
 *
 * Options: upstream (required, "http://host:port"), path (default
 * "/coroutine/persons/"), timeout_ms (2000), connect_timeout_ms (1000),
 * max_ids (100), max_connections (64, per loop), ca_file (https only),
 * max_response (4 MiB: the upstream bodies of one request together; each
 * call may bring its share, max_response / ids, at least 4 KiB and at most
 * 1 MiB, so a request never gathers much more than max_response however its
 * upstream answers).
 * Upstream timeout → 504; refused, reset, DNS, TLS, an unexpected status or
 * bodies past max_response → 502.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/plugin.h>

typedef struct route {
    char *prefix; /* upstream + path */
    const char *ca_file;
    int timeout_ms, connect_timeout_ms, max_connections;
    long max_ids;
    long long max_response;
    char *ca_copy;
} route;

static weft_rc init(const weft_host *h, weft_init *ctx, void **state)
{
    if (h->http == NULL) {
        h->init->error(ctx, "this weft has no outbound HTTP client (the http group)");
        return WEFT_ERROR;
    }
    const char *upstream = h->init->opt_string(ctx, "upstream", NULL);
    const char *path = h->init->opt_string(ctx, "path", "/coroutine/persons/");
    const char *ca = h->init->opt_string(ctx, "ca_file", NULL);
    route *rt = calloc(1, sizeof(*rt));
    if (rt == NULL)
        return WEFT_ERROR;
    rt->timeout_ms = (int)h->init->opt_int(ctx, "timeout_ms", 2000);
    rt->connect_timeout_ms = (int)h->init->opt_int(ctx, "connect_timeout_ms", 1000);
    rt->max_connections = (int)h->init->opt_int(ctx, "max_connections", 64);
    rt->max_ids = (long)h->init->opt_int(ctx, "max_ids", 100);
    rt->max_response = h->init->opt_int(ctx, "max_response", 4 * 1024 * 1024);
    if (upstream == NULL || (strncmp(upstream, "http://", 7) != 0 && strncmp(upstream, "https://", 8) != 0)) {
        h->init->error(ctx, "option upstream must be an http:// or https:// base URL");
        free(rt);
        return WEFT_ERROR;
    }
    if (rt->timeout_ms <= 0 || rt->connect_timeout_ms <= 0 || rt->max_connections <= 0 || rt->max_ids <= 0 ||
        rt->max_response <= 0) {
        h->init->error(ctx, "timeout_ms, connect_timeout_ms, max_connections, max_ids and max_response must be positive");
        free(rt);
        return WEFT_ERROR;
    }
    size_t n = strlen(upstream) + strlen(path) + 1;
    rt->prefix = malloc(n);
    rt->ca_copy = ca != NULL ? strdup(ca) : NULL;
    if (rt->prefix == NULL || (ca != NULL && rt->ca_copy == NULL)) {
        free(rt->prefix);
        free(rt);
        return WEFT_ERROR;
    }
    snprintf(rt->prefix, n, "%s%s", upstream, path);
    rt->ca_file = rt->ca_copy;
    *state = rt;
    return WEFT_OK;
}

static void fini(void *state)
{
    route *rt = state;
    free(rt->prefix);
    free(rt->ca_copy);
    free(rt);
}

/* One call per id, prepared before any is sent. */
typedef struct job {
    size_t n;
    long *ids;
    char **urls;
    weft_http_request *rqs;
    weft_http_response **res;
    size_t left; /* reactive: calls still running */
    const weft_host_http *http; /* for job_free, which may run without a request */
} job;

static void job_free(job *j)
{
    for (size_t i = 0; i < j->n; i++) {
        free(j->urls[i]);
        if (j->res[i] != NULL)
            j->http->response_free(j->res[i]);
    }
    free(j->ids);
    free(j->urls);
    free(j->rqs);
    free(j->res);
    free(j);
}

/* Parses ids=1,2,3 (positive integers) and builds the calls; answers 400 itself. */
static job *prepare(weft_req *req, const route *rt)
{
    const weft_host *h = weft_req_host(req);
    const char *q = h->request->query(req, "ids", NULL);
    if (q == NULL || *q == '\0') {
        h->response->error(req, 400, "ids=1,2,3 is required");
        return NULL;
    }
    size_t n = 1;
    for (const char *p = q; *p; p++)
        n += *p == ',';
    if ((long)n > rt->max_ids) {
        h->response->error(req, 400, "too many ids");
        return NULL;
    }
    job *j = calloc(1, sizeof(*j));
    if (j == NULL || (j->ids = calloc(n, sizeof(long))) == NULL || (j->urls = calloc(n, sizeof(char *))) == NULL ||
        (j->rqs = calloc(n, sizeof(weft_http_request))) == NULL || (j->res = calloc(n, sizeof(void *))) == NULL) {
        if (j != NULL) {
            j->n = 0;
            job_free(j);
        }
        h->response->error(req, 503, "out of memory");
        return NULL;
    }
    j->n = n;
    /* Each call's share of max_response: a client that does not read its
     * answer holds what this request gathered, so that is what is bounded. */
    size_t share = (size_t)rt->max_response / n;
    share = share < 4096 ? 4096 : share > 1024 * 1024 ? 1024 * 1024 : share;
    j->http = h->http;
    const char *p = q;
    for (size_t i = 0; i < n; i++) {
        char *end;
        if (!isdigit((unsigned char)*p) || (j->ids[i] = strtol(p, &end, 10)) <= 0 || (*end != ',' && *end != '\0')) {
            h->response->error(req, 400, "ids must be positive integers separated by commas");
            job_free(j);
            return NULL;
        }
        p = *end == ',' ? end + 1 : end;
        size_t len = strlen(rt->prefix) + 24;
        if ((j->urls[i] = malloc(len)) == NULL) {
            h->response->error(req, 503, "out of memory");
            job_free(j);
            return NULL;
        }
        snprintf(j->urls[i], len, "%s%ld", rt->prefix, j->ids[i]);
        j->rqs[i] = (weft_http_request)WEFT_HTTP_REQUEST_INIT;
        j->rqs[i].url = j->urls[i];
        j->rqs[i].timeout_ms = rt->timeout_ms;
        j->rqs[i].connect_timeout_ms = rt->connect_timeout_ms;
        j->rqs[i].max_connections = rt->max_connections;
        j->rqs[i].ca_file = rt->ca_file;
        j->rqs[i].max_body = share;
    }
    return j;
}

/* The JSON array, or the first failure as 504 / 502. */
static void answer(weft_req *req, job *j, long long max_response)
{
    const weft_host *h = weft_req_host(req);
    long long total = 0;
    for (size_t i = 0; i < j->n; i++) {
        const weft_http_response *r = j->res[i];
        if (r == NULL) {
            h->response->error(req, 503, "out of memory");
            return;
        }
        if (r->error == WEFT_HTTP_TIMEOUT || r->error == WEFT_HTTP_CONNECT_TIMEOUT) {
            h->log->msg(req, WEFT_LOG_WARN, "upstream call for id %ld: %s", j->ids[i], r->error_text);
            h->response->error(req, 504, "upstream timed out");
            return;
        }
        if (r->error != WEFT_HTTP_OK || (r->status != 200 && r->status != 404)) {
            h->log->msg(req, WEFT_LOG_WARN, "upstream call for id %ld: error %d (%s), status %d", j->ids[i], r->error,
                      r->error_text, r->status);
            h->response->error(req, 502, "upstream failed");
            return;
        }
        total += (long long)r->body_len;
    }
    if (total > max_response) {
        h->log->msg(req, WEFT_LOG_WARN, "upstream bodies of %lld bytes together, more than max_response", total);
        h->response->error(req, 502, "upstream answers larger than max_response");
        return;
    }
    h->response->status(req, 200);
    h->response->header(req, "content-type", "application/json");
    h->response->write(req, "[", 1);
    for (size_t i = 0; i < j->n; i++) {
        if (i > 0)
            h->response->write(req, ",", 1);
        if (j->res[i]->status == 404)
            h->response->write(req, "null", 4);
        else
            h->response->write(req, j->res[i]->body, j->res[i]->body_len);
    }
    h->response->write(req, "]\n", 2);
}

static weft_rc handle(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    job *j = prepare(req, state);
    if (j == NULL)
        return WEFT_OK;
    /* Every call in flight at once, on a worker as in a coroutine. */
    if (h->http->fetch_all(req, j->n, j->rqs, j->res) != WEFT_OK)
        h->response->error(req, 503, "cannot call the upstream");
    else
        answer(req, j, ((route *)state)->max_response);
    job_free(j);
    return WEFT_OK;
}

typedef struct slot {
    job *j;
    size_t i;
    long long max_response;
} slot;

static void on_answer(weft_req *req, void *arg, int rc, weft_http_response *res)
{
    const weft_host *h = weft_req_host(req);
    (void)rc; /* res->error says it all */
    slot *s = arg;
    job *j = s->j;
    long long max_response = s->max_response;
    j->res[s->i] = res;
    free(s);
    if (--j->left > 0)
        return;
    answer(req, j, max_response);
    job_free(j);
    h->response->done(req, WEFT_OK);
}

static weft_rc handle_async(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    job *j = prepare(req, state);
    if (j == NULL)
        return WEFT_OK;
    /* One extra count while starting: a call that fails at once calls back
     * before fetch returns. */
    j->left = j->n + 1;
    for (size_t i = 0; i < j->n; i++) {
        slot *s = malloc(sizeof(*s));
        if (s == NULL) {
            j->res[i] = NULL;
            j->left--;
            continue;
        }
        *s = (slot){j, i, ((route *)state)->max_response};
        h->http->fetch(req, &j->rqs[i], NULL, on_answer, s);
    }
    if (--j->left > 0)
        return WEFT_AGAIN;
    answer(req, j, ((route *)state)->max_response);
    job_free(j);
    return WEFT_OK;
}

static const weft_plugin descriptor = {
    WEFT_PLUGIN_HEADER,
    .name = "aggregate",
    .version = "1.0.0",
    .description = "calls an HTTP upstream for several ids at once and answers the JSON array",
    .init = init,
    .fini = fini,
    .handle = handle,
    .handle_async = handle_async,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &descriptor; }
