#include "base/timer.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "base/h2o_glue.h"
#include "base/log.h"

struct weft_timers {
    h2o_socket_t *sock;
    int fd;
    weft_timer **heap;
    size_t len, cap;
    uint64_t armed_ns; /* deadline the timerfd is set to; 0 = disarmed */
};

uint64_t weft_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct timespec weft_monotonic_after(uint64_t ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += (time_t)(ms / 1000);
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

void weft_cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
}

static void place(weft_timers *ts, size_t i, weft_timer *t)
{
    ts->heap[i] = t;
    t->heap_index = i + 1;
}

static void sift_up(weft_timers *ts, size_t i)
{
    weft_timer *t = ts->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (ts->heap[parent]->deadline_ns <= t->deadline_ns)
            break;
        place(ts, i, ts->heap[parent]);
        i = parent;
    }
    place(ts, i, t);
}

static void sift_down(weft_timers *ts, size_t i)
{
    weft_timer *t = ts->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= ts->len)
            break;
        if (c + 1 < ts->len && ts->heap[c + 1]->deadline_ns < ts->heap[c]->deadline_ns)
            c++;
        if (ts->heap[c]->deadline_ns >= t->deadline_ns)
            break;
        place(ts, i, ts->heap[c]);
        i = c;
    }
    place(ts, i, t);
}

static void remove_at(weft_timers *ts, size_t i)
{
    weft_timer *gone = ts->heap[i];
    gone->heap_index = 0;
    weft_timer *last = ts->heap[--ts->len];
    if (i == ts->len)
        return;
    place(ts, i, last);
    if (i > 0 && ts->heap[(i - 1) / 2]->deadline_ns > last->deadline_ns)
        sift_up(ts, i);
    else
        sift_down(ts, i);
}

/* Only touch the timerfd when the earliest deadline changes: with many
 * same-length sleeps, new timers land behind the head and cost no syscall. */
static void rearm(weft_timers *ts)
{
    uint64_t want = ts->len ? ts->heap[0]->deadline_ns : 0;
    if (want == ts->armed_ns)
        return;
    struct itimerspec its = {0};
    its.it_value.tv_sec = (time_t)(want / 1000000000u);
    its.it_value.tv_nsec = (long)(want % 1000000000u);
    if (timerfd_settime(ts->fd, TFD_TIMER_ABSTIME, &its, NULL) != 0)
        weft_fatal("timerfd_settime: %s", strerror(errno));
    ts->armed_ns = want;
}

static void on_ready(h2o_socket_t *sock, const char *err)
{
    weft_timers *ts = sock->data;
    uint64_t expirations;
    /* Level-triggered epoll: the read clears readiness, or the loop spins. */
    ssize_t r = read(ts->fd, &expirations, sizeof(expirations));
    (void)r;
    ts->armed_ns = 0;
    uint64_t now = weft_now_ns();
    while (ts->len > 0 && ts->heap[0]->deadline_ns <= now) {
        weft_timer *t = ts->heap[0];
        remove_at(ts, 0);
        t->cb(t); /* may add timers; the heap is consistent here */
    }
    rearm(ts);
}

weft_timers *weft_timers_new(struct st_h2o_evloop_t *loop)
{
    weft_timers *ts = calloc(1, sizeof(*ts));
    if (ts == NULL)
        return NULL;
    ts->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (ts->fd < 0) {
        free(ts);
        return NULL;
    }
    ts->sock = h2o_evloop_socket_create(loop, ts->fd, H2O_SOCKET_FLAG_DONT_READ);
    ts->sock->data = ts;
    h2o_socket_read_start(ts->sock, on_ready);
    return ts;
}

void weft_timers_free(weft_timers *ts)
{
    if (ts == NULL)
        return;
    for (size_t i = 0; i < ts->len; i++)
        ts->heap[i]->heap_index = 0;
    h2o_socket_close(ts->sock); /* closes ts->fd */
    free(ts->heap);
    free(ts);
}

int weft_timers_add(weft_timers *ts, weft_timer *t, uint64_t delay_ms, void (*cb)(weft_timer *t))
{
    if (ts->len == ts->cap) {
        size_t cap = ts->cap ? ts->cap * 2 : 64;
        weft_timer **h = realloc(ts->heap, cap * sizeof(*h));
        if (h == NULL)
            return -1;
        ts->heap = h;
        ts->cap = cap;
    }
    t->deadline_ns = weft_now_ns() + delay_ms * 1000000u;
    t->cb = cb;
    place(ts, ts->len++, t);
    sift_up(ts, ts->len - 1);
    rearm(ts);
    return 0;
}

void weft_timers_cancel(weft_timers *ts, weft_timer *t)
{
    if (t->heap_index == 0)
        return;
    remove_at(ts, t->heap_index - 1);
    rearm(ts);
}

size_t weft_timers_pending(const weft_timers *ts) { return ts->len; }
