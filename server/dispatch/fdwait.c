#include "dispatch/fdwait.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "core/loop.h"
#include "dispatch/await.h"
#include "dispatch/dispatch.h"
#include "request/request.h"
#include "request/route.h"

#define EVENTS_ALL (WEFT_FD_READ | WEFT_FD_WRITE)

/* A hang-up or an error makes the next read and write report it: both are "ready". */
static unsigned from_poll(short pe, unsigned wanted)
{
    unsigned ev = 0;
    if (pe & (POLLIN | POLLHUP | POLLERR))
        ev |= WEFT_FD_READ;
    if (pe & (POLLOUT | POLLHUP | POLLERR))
        ev |= WEFT_FD_WRITE;
    return ev & wanted;
}

/* poll() on one descriptor: WEFT_OK (ready), WEFT_TIMEOUT, or WEFT_ERROR for
 * a descriptor poll cannot watch. Retries EINTR with the time left. */
static int poll_fd(weft_req *r, int fd, unsigned events, int timeout_ms, unsigned *revents)
{
    struct pollfd p = {.fd = fd, .events = (short)(((events & WEFT_FD_READ) ? POLLIN : 0) |
                                                   ((events & WEFT_FD_WRITE) ? POLLOUT : 0))};
    uint64_t deadline = timeout_ms > 0 ? weft_now_ns() + (uint64_t)timeout_ms * 1000000u : 0;
    for (;;) {
        int n = poll(&p, 1, timeout_ms);
        if (n > 0) {
            if (p.revents & POLLNVAL) {
                weft_log_error("%s: fd_wait on %d, which is not an open descriptor", r->route->label, fd);
                return WEFT_ERROR;
            }
            *revents = from_poll(p.revents, events);
            return WEFT_OK;
        }
        if (n == 0)
            return WEFT_TIMEOUT;
        if (errno != EINTR) {
            weft_log_error("%s: fd_wait on %d: poll: %s", r->route->label, fd, strerror(errno));
            return WEFT_ERROR;
        }
        if (timeout_ms > 0) {
            uint64_t now = weft_now_ns();
            timeout_ms = now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
        }
    }
}

/* ---- on the loop: the descriptor watched by the loop's own epoll ---- */

typedef struct loop_wait {
    weft_await aw;
    int fd;
    unsigned events;
    int timeout_ms;
    h2o_socket_t *sock;
    weft_timer timer;
    unsigned revents;
    /* reactive */
    weft_fd_callback cb;
    void *arg;
} loop_wait;

static void parked(weft_loop *L, int delta)
{
    atomic_fetch_add_explicit(&L->stats->fd_waits, delta, memory_order_relaxed);
}

static void unpark(loop_wait *w)
{
    weft_loop *L = w->aw.r->loop;
    weft_timers_cancel(L->timers, &w->timer);
    /* Closes only our dup: the plugin's descriptor and its open file stay. */
    h2o_socket_close(w->sock);
    w->sock = NULL;
    parked(L, -1);
}

/* Readiness or the timeout, whichever came first (loop thread). */
static void wait_over(loop_wait *w, int rc, unsigned revents)
{
    unpark(w);
    w->revents = revents;
    weft_await_done(&w->aw, rc);
}

/* One of the asked-for events fired; when both were asked for, say whether
 * the other holds too, as poll would. With DONT_READ h2o reads nothing, so
 * an error on the descriptor shows as readiness (`err` adds nothing). */
static void ready(h2o_socket_t *sock, unsigned fired, int other_pending, unsigned other)
{
    unsigned ev = fired;
    if (other_pending) {
        struct pollfd p = {.fd = h2o_socket_get_fd(sock), .events = other == WEFT_FD_READ ? POLLIN : POLLOUT};
        if (poll(&p, 1, 0) == 1)
            ev |= from_poll(p.revents, other);
    }
    wait_over(sock->data, WEFT_OK, ev);
}

static void on_readable(h2o_socket_t *sock, const char *err)
{
    (void)err;
    ready(sock, WEFT_FD_READ, h2o_socket_is_writing(sock), WEFT_FD_WRITE);
}

static void on_writable(h2o_socket_t *sock, const char *err)
{
    (void)err;
    ready(sock, WEFT_FD_WRITE, h2o_socket_is_reading(sock), WEFT_FD_READ);
}

static void on_timeout(weft_timer *t)
{
    wait_over(H2O_STRUCT_FROM_MEMBER(loop_wait, timer, t), WEFT_TIMEOUT, 0);
}

/* The request was withdrawn: the wait ends now, the descriptor stays the plugin's. */
static void cancel_wait(weft_await *a)
{
    loop_wait *w = H2O_STRUCT_FROM_MEMBER(loop_wait, aw, a);
    unpark(w);
    weft_await_done(a, WEFT_CANCELLED);
}

/* Parks the wait on the request's loop (loop thread, whatever the policy). */
static void park(weft_await *a)
{
    loop_wait *w = H2O_STRUCT_FROM_MEMBER(loop_wait, aw, a);
    weft_req *r = a->r;
    /* h2o closes the descriptor it wraps, and the plugin keeps its own. */
    int dupfd = fcntl(w->fd, F_DUPFD_CLOEXEC, 0);
    if (dupfd < 0) {
        weft_log_error("%s: fd_wait: cannot duplicate descriptor %d: %s", r->route->label, w->fd, strerror(errno));
        weft_await_done(a, errno == EBADF ? WEFT_ERROR : WEFT_UNAVAILABLE);
        return;
    }
    if (w->timeout_ms >= 0 &&
        weft_timers_add(r->loop->timers, &w->timer, (uint64_t)w->timeout_ms, on_timeout) != 0) {
        close(dupfd);
        weft_await_done(a, WEFT_UNAVAILABLE);
        return;
    }
    w->sock = h2o_evloop_socket_create(r->loop->evloop, dupfd, H2O_SOCKET_FLAG_DONT_READ);
    w->sock->data = w;
    if (w->events & WEFT_FD_READ)
        h2o_socket_read_start(w->sock, on_readable);
    if (w->events & WEFT_FD_WRITE)
        h2o_socket_notify_write(w->sock, on_writable);
    parked(r->loop, 1);
}

static loop_wait wait_init(weft_req *r, int fd, unsigned events, int timeout_ms)
{
    return (loop_wait){.aw = {.r = r, .start = park, .cancel = cancel_wait},
                       .fd = fd,
                       .events = events,
                       .timeout_ms = timeout_ms};
}

/* ---- the two host calls ---- */

/* Checks the arguments and tries once without waiting: most waits in a
 * client library find the descriptor ready, and a descriptor epoll cannot
 * watch (a regular file) is always ready for poll, so it never reaches the
 * loop. Returns 1 when the answer is already known (rc, *revents set). */
static int quick(weft_req *r, int fd, unsigned events, int timeout_ms, int *rc, unsigned *revents)
{
    *revents = 0;
    if (fd < 0 || events == 0 || (events & ~EVENTS_ALL) != 0) {
        weft_log_error("%s: fd_wait(%d, events %#x): needs a descriptor and WEFT_FD_READ and/or WEFT_FD_WRITE",
                       r->route->label, fd, events);
        *rc = WEFT_ERROR;
        return 1;
    }
    *rc = poll_fd(r, fd, events, 0, revents);
    return *rc != WEFT_TIMEOUT || timeout_ms == 0;
}

int weft_fdwait_fd_wait(weft_req *r, int fd, unsigned events, int timeout_ms, unsigned *revents)
{
    unsigned ev_local;
    int rc;
    if (revents == NULL)
        revents = &ev_local;
    if (weft_req_cancelled(r)) {
        *revents = 0;
        return WEFT_CANCELLED;
    }
    if (quick(r, fd, events, timeout_ms, &rc, revents))
        return rc;
    if (weft_await_refused(r, "fd_wait()", "fd_wait_async()")) {
        *revents = 0;
        return WEFT_ERROR;
    }
    /* A worker too waits on the loop (it sleeps meanwhile): that is where a
     * cancelled request ends the wait. `w` lives on the caller's stack. */
    loop_wait w = wait_init(r, fd, events, timeout_ms);
    rc = weft_await_block(&w.aw);
    *revents = rc == WEFT_OK ? w.revents : 0;
    return rc;
}

static void deliver_callback(void *ctx)
{
    loop_wait *w = ctx;
    w->cb(w->aw.r, w->arg, w->aw.rc, w->aw.rc == WEFT_OK ? w->revents : 0);
}

/* Not in the request's arena: a handler that waits in a loop would grow it
 * by one entry per round. */
static void complete(weft_await *a)
{
    loop_wait w = *H2O_STRUCT_FROM_MEMBER(loop_wait, aw, a);
    free(H2O_STRUCT_FROM_MEMBER(loop_wait, aw, a));
    weft_dispatch_run(w.aw.r, deliver_callback, &w);
}

/* The handler finished first: the wait was stopped, its record is freed unread. */
static void abandon(weft_await *a) { free(H2O_STRUCT_FROM_MEMBER(loop_wait, aw, a)); }

void weft_fdwait_fd_wait_async(weft_req *r, int fd, unsigned events, int timeout_ms, weft_fd_callback cb, void *arg)
{
    int rc;
    unsigned revents;
    if (weft_loop_current != r->loop) {
        weft_log_error("%s: fd_wait_async() called off the request's loop thread; use fd_wait()", r->route->label);
        cb(r, arg, WEFT_ERROR, 0);
        return;
    }
    if (weft_req_cancelled(r)) {
        cb(r, arg, WEFT_CANCELLED, 0);
        return;
    }
    if (quick(r, fd, events, timeout_ms, &rc, &revents)) {
        cb(r, arg, rc, revents);
        return;
    }
    loop_wait *w = malloc(sizeof(*w));
    if (w == NULL) {
        cb(r, arg, WEFT_UNAVAILABLE, 0);
        return;
    }
    *w = wait_init(r, fd, events, timeout_ms);
    w->aw.complete = complete;
    w->aw.abandon = abandon;
    w->cb = cb;
    w->arg = arg;
    weft_await_async(&w->aw);
}
