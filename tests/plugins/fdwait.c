/*
 * Fixture for fd_wait / fd_wait_async: each request waits on a socketpair
 * that the route's own "timer thread" writes to (or drains) later, the way a
 * non-blocking client library waits for its server.
 *
 *   ?ms=N        the thread writes "ping" after N ms (default 20); -1: never
 *   ?mode=write  fill the socket first, the thread drains it after N ms
 *   ?gate=1      wait on the route's shared gate pipe instead
 *   ?release=1   write the gate: every gate waiter wakes
 *   ?timeout=N   the wait's timeout (default 5000 ms)
 *
 * Answers "read ping", "writable", "gate open", or 504 "timeout".
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <weft/plugin.h>

typedef struct job {
    struct job *next;
    struct timespec due;
    int fd;
    int drain; /* 0: write "ping"; 1: read everything; then close this duplicate */
} job;

typedef struct route {
    const weft_host_log *log; /* for the route's thread, which has no request */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *jobs;
    int stop;
    int gate[2];
} route;

static int due(const struct timespec *now, const struct timespec *t)
{
    return now->tv_sec > t->tv_sec || (now->tv_sec == t->tv_sec && now->tv_nsec >= t->tv_nsec);
}

static void run_job(const route *rt, job *j)
{
    if (j->drain) {
        char buf[65536];
        /* The peer is blocking: read until the writer's backlog is gone. */
        int fl = fcntl(j->fd, F_GETFL);
        fcntl(j->fd, F_SETFL, fl | O_NONBLOCK);
        while (read(j->fd, buf, sizeof(buf)) > 0)
            ;
    } else if (write(j->fd, "ping", 4) != 4) {
        rt->log->msg(NULL, WEFT_LOG_ERROR, "fdwait: write: %s", strerror(errno));
    }
    close(j->fd);
    free(j);
}

static void *timer_thread(void *arg)
{
    route *rt = arg;
    pthread_mutex_lock(&rt->mu);
    while (!rt->stop || rt->jobs != NULL) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        job **pp = &rt->jobs, *first = NULL;
        while (*pp != NULL) {
            if (due(&now, &(*pp)->due) || rt->stop) {
                job *j = *pp;
                *pp = j->next;
                j->next = first;
                first = j;
                continue;
            }
            pp = &(*pp)->next;
        }
        if (first != NULL) {
            pthread_mutex_unlock(&rt->mu);
            while (first != NULL) {
                job *j = first;
                first = j->next;
                run_job(rt, j);
            }
            pthread_mutex_lock(&rt->mu);
            continue;
        }
        struct timespec next = {now.tv_sec + 1, now.tv_nsec};
        for (job *j = rt->jobs; j != NULL; j = j->next)
            if (due(&next, &j->due))
                next = j->due;
        pthread_cond_timedwait(&rt->cv, &rt->mu, &next);
    }
    pthread_mutex_unlock(&rt->mu);
    return NULL;
}

static void schedule(route *rt, int fd, long ms, int drain)
{
    job *j = calloc(1, sizeof(*j));
    if (j == NULL) {
        close(fd);
        return;
    }
    clock_gettime(CLOCK_REALTIME, &j->due);
    j->due.tv_sec += ms / 1000;
    j->due.tv_nsec += (ms % 1000) * 1000000L;
    if (j->due.tv_nsec >= 1000000000L) {
        j->due.tv_sec++;
        j->due.tv_nsec -= 1000000000L;
    }
    j->fd = fd;
    j->drain = drain;
    pthread_mutex_lock(&rt->mu);
    j->next = rt->jobs;
    rt->jobs = j;
    pthread_cond_signal(&rt->cv);
    pthread_mutex_unlock(&rt->mu);
}

static weft_rc init(const weft_host *h, weft_init *ctx, void **state)
{
    if (h->fd == NULL) {
        h->init->error(ctx, "this host has no fd group");
        return WEFT_ERROR;
    }
    route *rt = calloc(1, sizeof(*rt));
    if (rt == NULL)
        return WEFT_ERROR;
    rt->log = h->log;
    pthread_mutex_init(&rt->mu, NULL);
    pthread_cond_init(&rt->cv, NULL);
    if (pipe2(rt->gate, O_CLOEXEC) != 0 || pthread_create(&rt->thread, NULL, timer_thread, rt) != 0) {
        free(rt);
        return WEFT_ERROR;
    }
    *state = rt;
    return WEFT_OK;
}

static void fini(void *state)
{
    route *rt = state;
    pthread_mutex_lock(&rt->mu);
    rt->stop = 1;
    pthread_cond_signal(&rt->cv);
    pthread_mutex_unlock(&rt->mu);
    pthread_join(rt->thread, NULL);
    close(rt->gate[0]);
    close(rt->gate[1]);
    pthread_mutex_destroy(&rt->mu);
    pthread_cond_destroy(&rt->cv);
    free(rt);
}

static long qint(weft_req *req, const char *name, long def)
{
    const weft_host *h = weft_req_host(req);
    const char *v = h->request->query(req, name, NULL);
    return v != NULL ? atol(v) : def;
}

/* What one request waits on; the answer once the wait is over. */
typedef struct wait {
    int fd;   /* the end we wait on; -1 for the gate (not ours to close) */
    int peer; /* the other end, kept open until the answer */
    int mode_write;
    int gate;
} wait;

/* Sets up the wait; returns the descriptor and events, or answers at once (-1). */
static int prepare(weft_req *req, route *rt, wait *w, unsigned *events)
{
    const weft_host *h = weft_req_host(req);
    *w = (wait){.fd = -1, .peer = -1};
    if (qint(req, "release", 0)) {
        if (write(rt->gate[1], "x", 1) != 1)
            return h->response->error(req, 500, "gate"), -1;
        h->response->writef(req, "released\n");
        return -1;
    }
    if (qint(req, "gate", 0)) {
        w->gate = 1;
        *events = WEFT_FD_READ;
        return rt->gate[0];
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        h->response->error(req, 503, "socketpair failed");
        return -1;
    }
    long ms = qint(req, "ms", 20);
    const char *mode = h->request->query(req, "mode", NULL);
    w->mode_write = mode != NULL && strcmp(mode, "write") == 0;
    w->fd = sv[0];
    if (w->mode_write) {
        int sz = 4096;
        setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
        fcntl(sv[0], F_SETFL, O_NONBLOCK);
        char junk[4096] = {0};
        while (write(sv[0], junk, sizeof(junk)) > 0)
            ;
        *events = WEFT_FD_WRITE;
    } else {
        *events = WEFT_FD_READ;
    }
    /* The peer stays open until the answer (closing it would make our end
     * ready); the thread works on a duplicate of it. */
    w->peer = sv[1];
    if (ms >= 0) {
        int dupfd = fcntl(sv[1], F_DUPFD_CLOEXEC, 0);
        if (dupfd >= 0)
            schedule(rt, dupfd, ms, w->mode_write);
    }
    return sv[0];
}

static void answer(weft_req *req, wait *w, int rc, unsigned revents)
{
    const weft_host *h = weft_req_host(req);
    if (rc == WEFT_TIMEOUT) {
        h->response->error(req, 504, "timeout");
    } else if (rc != WEFT_OK) {
        h->response->error(req, 500, "fd_wait failed");
    } else if (w->gate) {
        h->response->writef(req, "gate open\n");
    } else if (w->mode_write) {
        h->response->writef(req, (revents & WEFT_FD_WRITE) ? "writable\n" : "not writable\n");
    } else {
        char buf[8] = {0};
        ssize_t n = read(w->fd, buf, sizeof(buf) - 1);
        h->response->writef(req, "read %s\n", n > 0 ? buf : "nothing");
    }
    if (w->fd >= 0)
        close(w->fd);
    if (w->peer >= 0)
        close(w->peer);
}

static weft_rc handle(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    wait w;
    unsigned events = 0, revents = 0;
    int fd = prepare(req, state, &w, &events);
    if (fd < 0)
        return WEFT_OK;
    int rc = h->fd->wait(req, fd, events, (int)qint(req, "timeout", 5000), &revents, NULL, NULL);
    answer(req, &w, rc, revents);
    return WEFT_OK;
}

static void on_ready(weft_req *req, void *arg, int rc, unsigned revents)
{
    const weft_host *h = weft_req_host(req);
    answer(req, arg, rc, revents);
    free(arg);
    h->response->done(req, WEFT_OK);
}

static weft_rc handle_async(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    wait *w = malloc(sizeof(*w));
    unsigned events = 0;
    if (w == NULL)
        return WEFT_ERROR;
    int fd = prepare(req, state, w, &events);
    if (fd < 0) {
        free(w);
        return WEFT_OK;
    }
    h->fd->wait(req, fd, events, (int)qint(req, "timeout", 5000), NULL, on_ready, w);
    return WEFT_AGAIN;
}

static const weft_plugin descriptor = {
    WEFT_PLUGIN_HEADER,
    .name = "fdwait",
    .version = "1.0.0",
    .init = init,
    .fini = fini,
    .handle = handle,
    .handle_async = handle_async,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &descriptor; }
