/*
 * Fixture: a reactive handler that calls done() while a wait it started is
 * still on its way -- the plugin bug the host must survive (dispatch/await.h):
 * the wait is stopped, its callback never runs, a lock it was queued for
 * goes to the next waiter.
 *
 *   ?leave=sleep   sleep 100 ms with a callback, then done() at once
 *   ?leave=lock    queue for the route's lock (held by ?hold), then done()
 *   ?leave=fd      wait for a socketpair nobody writes, then done()
 *   ?leave=body    read the body's first part, then wait for the next one
 *                  and done() at once
 *   ?hold=MS       take the route's lock, answer "held", keep it MS ms
 *                  (a sleep with a callback), then unlock
 *   ?lock=1        take the route's lock, answer "locked", unlock
 *   ?count=1       after a 300 ms sleep of its own (later than any
 *                  abandoned one), answer "callbacks N": how many
 *                  abandoned callbacks ran (0 unless the host is wrong)
 *
 * Every other answer is "left". Under `pool` or `coroutine` (handle):
 *
 *   ?misuse=sleep|lock|query   the callback form from a blocking-style
 *                  handler: refused, answered "rc N" (N what the callback got)
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <weft/plugin.h>

typedef struct route {
    const weft_host_sync *sync; /* fini gets no host */
    weft_mutex *mu;
    atomic_int stray; /* callbacks of abandoned waits that ran */
    int sv[2];        /* nobody ever writes sv[1] */
} route;

static weft_rc init(const weft_host *h, weft_init *ctx, void **state)
{
    (void)ctx;
    route *rt = calloc(1, sizeof(*rt));
    if (rt == NULL || (rt->mu = h->sync->mutex_new()) == NULL ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, rt->sv) != 0) {
        free(rt);
        return WEFT_ERROR;
    }
    rt->sync = h->sync;
    *state = rt;
    return WEFT_OK;
}

static void fini(void *state)
{
    route *rt = state;
    close(rt->sv[0]);
    close(rt->sv[1]);
    rt->sync->mutex_free(rt->mu);
    free(rt);
}

static route *the_route; /* for callbacks, which get no state */

static void stray(weft_req *req, void *arg, int rc)
{
    (void)req, (void)arg, (void)rc;
    atomic_fetch_add(&the_route->stray, 1);
}

static void stray_fd(weft_req *req, void *arg, int rc, unsigned revents)
{
    (void)revents;
    stray(req, arg, rc);
}

static void stray_body(weft_req *req, void *arg, int rc, const void *data, size_t len)
{
    (void)data, (void)len;
    stray(req, arg, rc);
}

static void first_part(weft_req *req, void *arg, int rc, const void *data, size_t len)
{
    (void)arg, (void)data, (void)len;
    const weft_host *h = weft_req_host(req);
    if (rc != WEFT_OK) {
        h->response->done(req, rc);
        return;
    }
    h->request->body_read(req, NULL, NULL, stray_body, NULL);
    h->response->writef(req, "left\n");
    h->response->done(req, WEFT_OK);
}

static void unlock_after(weft_req *req, void *arg, int rc)
{
    (void)rc;
    const weft_host *h = weft_req_host(req);
    h->sync->unlock(req, ((route *)arg)->mu);
    h->response->done(req, WEFT_OK);
}

static void held(weft_req *req, void *arg, int rc)
{
    const weft_host *h = weft_req_host(req);
    if (rc != WEFT_OK) {
        h->response->done(req, rc);
        return;
    }
    route *rt = arg;
    const char *ms = h->request->query(req, "hold", NULL);
    h->response->writef(req, "held\n");
    h->sync->sleep(req, (uint32_t)atoi(ms), unlock_after, rt);
}

static void locked(weft_req *req, void *arg, int rc)
{
    const weft_host *h = weft_req_host(req);
    if (rc == WEFT_OK) {
        h->sync->unlock(req, ((route *)arg)->mu);
        h->response->writef(req, "locked\n");
    }
    h->response->done(req, rc);
}

static void counted(weft_req *req, void *arg, int rc)
{
    const weft_host *h = weft_req_host(req);
    h->response->writef(req, "callbacks %d\n", atomic_load(&((route *)arg)->stray));
    h->response->done(req, rc);
}

static weft_rc handle_async(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    route *rt = state;
    the_route = rt;
    const char *leave = h->request->query(req, "leave", NULL);
    if (h->request->query(req, "hold", NULL) != NULL)
        return h->sync->lock(req, rt->mu, held, rt);
    if (h->request->query(req, "lock", NULL) != NULL)
        return h->sync->lock(req, rt->mu, locked, rt);
    if (h->request->query(req, "count", NULL) != NULL)
        return h->sync->sleep(req, 300, counted, rt);
    if (leave == NULL)
        return h->response->error(req, 400, "leave, hold, lock or count");
    if (strcmp(leave, "sleep") == 0)
        h->sync->sleep(req, 100, stray, NULL);
    else if (strcmp(leave, "lock") == 0)
        h->sync->lock(req, rt->mu, stray, NULL);
    else if (strcmp(leave, "fd") == 0)
        h->fd->wait(req, rt->sv[0], WEFT_FD_READ, 60000, NULL, stray_fd, NULL);
    else if (strcmp(leave, "body") == 0)
        return h->request->body_read(req, NULL, NULL, first_part, NULL);
    else
        return h->response->error(req, 400, "leave: sleep, lock, fd or body");
    h->response->writef(req, "left\n");
    h->response->done(req, WEFT_OK);
    return WEFT_AGAIN;
}

static void record_rc(weft_req *req, void *arg, int rc)
{
    (void)req;
    *(int *)arg = rc;
}

static void record_db_rc(weft_req *req, void *arg, int rc, weft_result *res)
{
    weft_req_host(req)->db->result_free(res);
    record_rc(req, arg, rc);
}

static weft_rc handle(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    route *rt = state;
    const char *misuse = h->request->query(req, "misuse", NULL);
    int got = 1; /* no WEFT_* value */
    if (misuse != NULL && strcmp(misuse, "sleep") == 0)
        h->sync->sleep(req, 10, record_rc, &got);
    else if (misuse != NULL && strcmp(misuse, "lock") == 0)
        h->sync->lock(req, rt->mu, record_rc, &got);
    else if (misuse != NULL && strcmp(misuse, "query") == 0)
        h->db->query(req, "SELECT 1", 0, NULL, NULL, record_db_rc, &got);
    else
        return h->response->error(req, 400, "misuse: sleep, lock or query");
    /* Refused means the callback ran before the call returned. */
    h->response->writef(req, "rc %d\n", got);
    return WEFT_OK;
}

static const weft_plugin descriptor = {
    WEFT_PLUGIN_HEADER,
    .name = "leaver",
    .version = "1.0.0",
    .init = init,
    .fini = fini,
    .handle = handle,
    .handle_async = handle_async,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &descriptor; }
