/*
 * The coroutine switch on its own: the register contract of
 * weft__coro_switch and the frame weft__coro_frame builds (coro_switch.h),
 * then weft_coro_* (coro.c) on top of them. Plain C with no test framework,
 * so that it cross-compiles (-static) for a CPU the machine is not and runs
 * under qemu-user: the suite builds it natively and for aarch64 (see
 * tests/switch/CMakeLists.txt). The probes of the switch alone are in
 * switch_probes.c. Ends with "N passed, N failed, N skipped"; exit status 1
 * if anything failed.
 */
#include "dispatch/coro.h"
#include "dispatch/coro_switch.h"

#include <fenv.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "switch_probes.h"

#ifndef WEFT_CORO_SWITCH
#error "tests/switch needs a CPU with a register switch (coro_switch.h)"
#endif

static int passed, failed, skipped;

void wt_check(int ok, const char *test, const char *fmt, ...)
{
    if (ok)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL %s: ", test);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    wt_failed_now = 1;
}

int wt_failed_now;
const char *wt_skipped_now;

static void run(const char *name, void (*fn)(void))
{
    wt_failed_now = 0;
    wt_skipped_now = NULL;
    fn();
    if (wt_failed_now) {
        failed++;
        printf("FAIL %s\n", name);
    } else if (wt_skipped_now != NULL) {
        skipped++;
        printf("skip %s: %s\n", name, wt_skipped_now);
    } else {
        passed++;
        printf("ok   %s\n", name);
    }
}

/* ---- weft_coro_* (coro.c) ---- */

struct life {
    int steps;
    weft_coro *seen;
};

static void life_fn(void *arg)
{
    struct life *l = arg;
    l->seen = weft_coro_current();
    l->steps = 1;
    weft_coro_yield();
    l->steps = 2;
    weft_coro_yield();
    l->steps = 3;
}

static void test_start_yield_finish(void)
{
    const char *t = "start_yield_finish";
    weft_coro_pool *pool = weft_coro_pool_new(64 * 1024, 1);
    struct life l = {0};
    weft_coro *co = weft_coro_new(pool, life_fn, &l, "/switch/life");
    wt_check(co != NULL && l.steps == 0, t, "created and not started (steps %d)", l.steps);
    wt_check(weft_coro_resume(co) == 0 && l.steps == 1 && l.seen == co, t, "first resume yields");
    wt_check(weft_coro_current() == NULL, t, "back on the loop's stack");
    wt_check(weft_coro_resume(co) == 0 && l.steps == 2, t, "second resume yields");
    wt_check(weft_coro_resume(co) == 1 && l.steps == 3, t, "third resume finishes");
    weft_coro_free(co);
    /* The stack is reused: a second coroutine starts from a fresh frame. */
    l = (struct life){0};
    co = weft_coro_new(pool, life_fn, &l, "/switch/life2");
    int n = 1;
    while (weft_coro_resume(co) == 0)
        n++;
    wt_check(n == 3 && l.steps == 3, t, "reused stack: %d resumes, steps %d", n, l.steps);
    weft_coro_free(co);
    weft_coro_pool_free(pool);
}

#define PINGS 100000
static long ping_log[2];
static int ping_order_errors;

static void ping_fn(void *arg)
{
    int who = (int)(intptr_t)arg;
    for (long i = 0; i < PINGS; i++) {
        /* Each side runs once per round, the first one first. */
        if (ping_log[who] != i || (who == 1 && ping_log[0] != i + 1))
            ping_order_errors++;
        ping_log[who] = i + 1;
        weft_coro_yield();
    }
}

static void test_ping_pong(void)
{
    weft_coro_pool *pool = weft_coro_pool_new(64 * 1024, 2);
    weft_coro *a = weft_coro_new(pool, ping_fn, (void *)(intptr_t)0, "/a");
    weft_coro *b = weft_coro_new(pool, ping_fn, (void *)(intptr_t)1, "/b");
    int done_a = 0, done_b = 0, rounds = 0;
    while (!done_a || !done_b) {
        done_a = weft_coro_resume(a);
        done_b = weft_coro_resume(b);
        rounds++;
    }
    wt_check(rounds == PINGS + 1, "ping_pong", "%d rounds", rounds);
    wt_check(ping_order_errors == 0, "ping_pong", "%d out-of-order steps", ping_order_errors);
    weft_coro_free(a);
    weft_coro_free(b);
    weft_coro_pool_free(pool);
}

/* Floating-point work in a coroutine, interrupted by switches, gives the
 * answers the same work gives on the loop's stack; each side keeps its own
 * rounding mode. */
struct fpwork {
    double sum;
    int round_seen_wrong;
};

static double fp_step(int i) { return sqrt((double)i) * sin((double)i / 7.0) / (1.0 + (double)i); }

static void fp_fn(void *arg)
{
    struct fpwork *w = arg;
    fesetround(FE_UPWARD);
    volatile double third = 1.0;
    third /= 3.0;
    for (int i = 0; i < 2000; i++) {
        w->sum += fp_step(i);
        weft_coro_yield();
        if (fegetround() != FE_UPWARD)
            w->round_seen_wrong++;
    }
    volatile double again = 1.0;
    again /= 3.0;
    if (again != third)
        w->round_seen_wrong++;
}

static void test_fp_math(void)
{
    const char *t = "fp_math_in_a_coroutine";
    weft_coro_pool *pool = weft_coro_pool_new(64 * 1024, 1);
    struct fpwork w = {0};
    weft_coro *co = weft_coro_new(pool, fp_fn, &w, "/switch/fp");
    fesetround(FE_TONEAREST);
    double expect = 0, ignore = 0;
    int wrong_here = 0;
    int i = 0;
    while (weft_coro_resume(co) == 0) {
        if (fegetround() != FE_TONEAREST)
            wrong_here++;
        ignore += fp_step(i++) * 0.5; /* the loop's own FP work between switches */
    }
    wt_check(fesetround(FE_UPWARD) == 0, t, "fesetround");
    for (int k = 0; k < 2000; k++)
        expect += fp_step(k);
    fesetround(FE_TONEAREST);
    wt_check(w.sum == expect, t, "coroutine sum %.17g, expected %.17g", w.sum, expect);
    wt_check(w.round_seen_wrong == 0, t, "coroutine lost FE_UPWARD %d times", w.round_seen_wrong);
    wt_check(wrong_here == 0, t, "loop lost FE_TONEAREST %d times (%g)", wrong_here, ignore);
    weft_coro_free(co);
    weft_coro_pool_free(pool);
}

/* Deep recursion on a coroutine stack, switched out at the bottom. */
struct deep {
    int depth;
    uint64_t sum;
};

static uint64_t recurse(int n, volatile uint8_t *prev)
{
    volatile uint8_t frame[96];
    for (size_t i = 0; i < sizeof(frame); i++)
        frame[i] = (uint8_t)(n + i);
    if (prev != NULL && prev[5] != (uint8_t)(n + 1 + 5))
        return 0; /* the caller's frame was overwritten */
    uint64_t below = 1;
    if (n > 0)
        below = recurse(n - 1, frame);
    else
        weft_coro_yield();
    return below == 0 ? 0 : below + frame[n % sizeof(frame)];
}

static void deep_fn(void *arg)
{
    struct deep *d = arg;
    d->sum = recurse(d->depth, NULL);
}

static void test_deep_recursion(void)
{
    const char *t = "deep_recursion";
    /* About 160 bytes a level: 6000 levels use ~1 MiB of a 2 MiB stack. */
    weft_coro_pool *pool = weft_coro_pool_new(2 * 1024 * 1024, 1);
    struct deep d = {.depth = 6000};
    weft_coro *co = weft_coro_new(pool, deep_fn, &d, "/switch/deep");
    wt_check(weft_coro_resume(co) == 0, t, "yields at the bottom");
    /* The loop's own stack work while the coroutine is parked deep down. */
    volatile uint8_t mine[4096];
    memset((void *)mine, 0xa5, sizeof(mine));
    wt_check(weft_coro_resume(co) == 1, t, "finishes after unwinding");
    uint64_t expect = 1;
    for (int n = 0; n <= d.depth; n++)
        expect += (uint8_t)(n + n % 96);
    wt_check(d.sum == expect, t, "sum %llu, expected %llu", (unsigned long long)d.sum, (unsigned long long)expect);
    weft_coro_free(co);
    weft_coro_pool_free(pool);
}

int main(void)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"registers_preserved", wt_test_registers},
        {"new_frame", wt_test_new_frame},
        {"pac_ret", wt_test_pac},
        {"bti", wt_test_bti},
        {"start_yield_finish", test_start_yield_finish},
        {"ping_pong_100000", test_ping_pong},
        {"fp_math_in_a_coroutine", test_fp_math},
        {"deep_recursion", test_deep_recursion},
    };
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
        run(tests[i].name, tests[i].fn);
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed == 0 ? 0 : 1;
}
