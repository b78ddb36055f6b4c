/*
 * Per-loop timers with arbitrary durations. h2o 2.2.5 only has fixed-duration
 * FIFO timeout lists, so a request-chosen delay ("sleep 137 ms") needs its
 * own mechanism: a binary min-heap of deadlines driven by one timerfd that the
 * loop polls like any socket. Loop thread only.
 */
#ifndef WEFT_TIMER_H
#define WEFT_TIMER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct st_h2o_evloop_t;
typedef struct weft_timers weft_timers;

typedef struct weft_timer {
    uint64_t deadline_ns;
    void (*cb)(struct weft_timer *t);
    size_t heap_index; /* position in the heap + 1; 0 when not scheduled */
} weft_timer;

/** CLOCK_MONOTONIC in nanoseconds. */
uint64_t weft_now_ns(void);

/** pthread_cond_init for timed waits on CLOCK_MONOTONIC (a wall-clock step must not stretch them). */
void weft_cond_init_monotonic(pthread_cond_t *cv);
/** CLOCK_MONOTONIC `ms` from now, as pthread_cond_timedwait wants it with such a condition variable. */
struct timespec weft_monotonic_after(uint64_t ms);

weft_timers *weft_timers_new(struct st_h2o_evloop_t *loop);
/** Closes the timerfd; pending timers are dropped without running. */
void weft_timers_free(weft_timers *ts);
/** Schedules `t` (which must not be scheduled) to call `cb` after `delay_ms`; -1 without memory. */
int weft_timers_add(weft_timers *ts, weft_timer *t, uint64_t delay_ms, void (*cb)(weft_timer *t));
/** Unschedules `t` if it is scheduled. */
void weft_timers_cancel(weft_timers *ts, weft_timer *t);
size_t weft_timers_pending(const weft_timers *ts);

#endif
