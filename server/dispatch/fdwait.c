#include "dispatch/fdwait.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "core/loop.h"
#include "dispatch/coro.h"
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

/* ---- on a loop: the descriptor watched by the loop's own epoll ---- */

typedef struct loop_wait {
    weft_req *r;
    h2o_socket_t *sock;
    weft_timer timer;
    unsigned revents;
    int rc;
    /* reactive */
    weft_fd_callback cb;
    void *arg;
} loop_wait;

static void parked(weft_loop *L, int delta)
{
    atomic_fetch_add_explicit(&L->stats->fd_waits, delta, memory_order_relaxed);
}

static void deliver_callback(void *ctx)
{
    loop_wait w = *(loop_wait *)ctx;
    free(ctx);
    w.cb(w.r, w.arg, w.rc, w.revents);
}

/* Readiness or the timeout, whichever came first (loop thread). */
static void wait_over(loop_wait *w, int rc, unsigned revents)
{
    weft_req *r = w->r;
    weft_timers_cancel(r->loop->timers, &w->timer);
    /* Closes only our dup: the plugin's descriptor and its open file stay. */
    h2o_socket_close(w->sock);
    w->sock = NULL;
    w->rc = rc;
    w->revents = revents;
    parked(r->loop, -1);
    if (w->cb != NULL)
        weft_dispatch_run(r, deliver_callback, w);
    else
        weft_dispatch_resume(r);
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

/* Parks `w` on the loop: WEFT_OK when it is watched, an error otherwise. */
static int park(loop_wait *w, int fd, unsigned events, int timeout_ms)
{
    weft_req *r = w->r;
    /* h2o closes the descriptor it wraps, and the plugin keeps its own. */
    int dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dupfd < 0) {
        weft_log_error("%s: fd_wait: cannot duplicate descriptor %d: %s", r->route->label, fd, strerror(errno));
        return errno == EBADF ? WEFT_ERROR : WEFT_UNAVAILABLE;
    }
    if (timeout_ms >= 0 && weft_timers_add(r->loop->timers, &w->timer, (uint64_t)timeout_ms, on_timeout) != 0) {
        close(dupfd);
        return WEFT_UNAVAILABLE;
    }
    w->sock = h2o_evloop_socket_create(r->loop->evloop, dupfd, H2O_SOCKET_FLAG_DONT_READ);
    w->sock->data = w;
    if (events & WEFT_FD_READ)
        h2o_socket_read_start(w->sock, on_readable);
    if (events & WEFT_FD_WRITE)
        h2o_socket_notify_write(w->sock, on_writable);
    parked(r->loop, 1);
    return WEFT_OK;
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
    if (quick(r, fd, events, timeout_ms, &rc, revents))
        return rc;
    switch (r->exec) {
    case WEFT_EXEC_WORKER:
        parked(r->loop, 1);
        rc = poll_fd(r, fd, events, timeout_ms < 0 ? -1 : timeout_ms, revents);
        parked(r->loop, -1);
        return rc;
    case WEFT_EXEC_COROUTINE: {
        /* `w` lives on the coroutine's stack, which stays put while it sleeps. */
        loop_wait w = {.r = r};
        if ((rc = park(&w, fd, events, timeout_ms)) != WEFT_OK)
            return rc;
        weft_coro_yield();
        *revents = w.revents;
        return w.rc;
    }
    case WEFT_EXEC_LOOP:
        break;
    }
    /* A reactive handler asked to block: honour it, as sleep_ms does; the
     * blocked-loop detector names the route. */
    return poll_fd(r, fd, events, timeout_ms < 0 ? -1 : timeout_ms, revents);
}

void weft_fdwait_fd_wait_async(weft_req *r, int fd, unsigned events, int timeout_ms, weft_fd_callback cb, void *arg)
{
    int rc;
    unsigned revents;
    if (weft_loop_current != r->loop) {
        weft_log_error("%s: fd_wait_async() called off the request's loop thread; use fd_wait()", r->route->label);
        cb(r, arg, WEFT_ERROR, 0);
        return;
    }
    if (quick(r, fd, events, timeout_ms, &rc, &revents)) {
        cb(r, arg, rc, revents);
        return;
    }
    /* Not in the request's arena: a handler that waits in a loop would grow
     * it by one entry per round. */
    loop_wait *w = malloc(sizeof(*w));
    if (w == NULL) {
        cb(r, arg, WEFT_UNAVAILABLE, 0);
        return;
    }
    *w = (loop_wait){.r = r, .cb = cb, .arg = arg};
    if ((rc = park(w, fd, events, timeout_ms)) != WEFT_OK) {
        free(w);
        cb(r, arg, rc, 0);
    }
}
