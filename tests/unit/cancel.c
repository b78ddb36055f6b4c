/*
 * Tests for server/request/cancel.c: cancellation of a request whose
 * worker-side mutex and condition variable are set up only when a worker
 * first blocks.
 */
#include "request/cancel.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <time.h>

#include "request/request.h"

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

Test(cancel, a_request_no_worker_blocked_for_cancels_once)
{
    weft_req *r = weft_req_new();
    cr_assert_eq(weft_req_cancelled(r), WEFT_CANCEL_NONE);
    cr_assert_eq(weft_req_cancel(r, WEFT_CANCEL_CLIENT), 1);
    cr_assert_eq(weft_req_cancel(r, WEFT_CANCEL_DEADLINE), 0, "the first reason stays");
    cr_assert_eq(weft_req_cancelled(r), WEFT_CANCEL_CLIENT);
    /* A worker arriving afterwards does not wait. */
    cr_assert_eq(weft_req_worker_block(r, NULL, NULL), WEFT_CANCELLED);
    uint64_t t0 = mono_ms();
    cr_assert_eq(weft_req_worker_sleep(r, 10000), WEFT_CANCELLED);
    cr_assert_lt(mono_ms() - t0, 5000u);
    weft_req_free(r);
}

typedef struct sleeper {
    weft_req *r;
    atomic_int started;
    int rc;
} sleeper;

static void *sleep_long(void *arg)
{
    sleeper *s = arg;
    atomic_store(&s->started, 1);
    s->rc = weft_req_worker_sleep(s->r, 60000);
    return NULL;
}

Test(cancel, a_sleeping_worker_is_woken_whenever_the_cancel_comes, .timeout = 60)
{
    /* Cancel at different moments around the worker's first block (before,
     * during the lazy set-up, while it waits): it must never sleep on. */
    for (int i = 0; i < 200; i++) {
        sleeper s = {.r = weft_req_new()};
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, sleep_long, &s), 0);
        while (i % 2 == 0 && !atomic_load(&s.started))
            ; /* half of the rounds: cancel only once the worker runs */
        weft_req_cancel(s.r, WEFT_CANCEL_CLIENT);
        pthread_join(t, NULL);
        cr_assert_eq(s.rc, WEFT_CANCELLED);
        weft_req_free(s.r);
    }
}

static int woken;
static void wake(void *arg) { *(int *)arg = 1; }

Test(cancel, a_blocked_worker_gets_its_wake_call)
{
    weft_req *r = weft_req_new();
    woken = 0;
    cr_assert_eq(weft_req_worker_block(r, wake, &woken), WEFT_OK);
    weft_req_cancel(r, WEFT_CANCEL_DEADLINE);
    cr_assert_eq(woken, 1);
    weft_req_worker_unblock(r);
    weft_req_free(r);
}
