/*
 * ns per coroutine switch: weft_coro_resume + weft_coro_yield round trips / 2,
 * against the same ping-pong done with swapcontext.
 *
 *   gcc -std=gnu11 -O2 -Iserver -Iserver/include server/dispatch/coro.c \
 *       server/base/log.c server/base/sigsafe.c server/base/logline.c \
 *       server/dispatch/coro_switch_$(uname -m).S bench/coro_switch.c -lm \
 *       -o /tmp/coro_switch && /tmp/coro_switch [iterations]
 *
 * (x86_64 or aarch64; on another CPU leave the .S out: coro.c then switches
 * with swapcontext.) Under an emulator the numbers mean nothing.
 */
#include "dispatch/coro.h"

#include <fenv.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <ucontext.h>

static volatile int stop;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void weft_pingpong(void *arg)
{
    /* A rounding mode unlike the loop's makes every switch load MXCSR and
     * the x87 control word: the switch's slow path. */
    if (arg != NULL)
        fesetround(FE_UPWARD);
    while (!stop)
        weft_coro_yield();
}

static double bench_weft(long n, int differing_fp)
{
    weft_coro_pool *pool = weft_coro_pool_new(64 * 1024, 1);
    weft_coro *co = weft_coro_new(pool, weft_pingpong, differing_fp ? pool : NULL, "/bench");
    stop = 0;
    for (long i = 0; i < n / 10; i++) /* warm caches and branch predictors */
        weft_coro_resume(co);
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        weft_coro_resume(co);
    double t1 = now_ns();
    stop = 1;
    weft_coro_resume(co);
    weft_coro_free(co);
    weft_coro_pool_free(pool);
    return (t1 - t0) / (2.0 * (double)n);
}

static ucontext_t loop_ctx, coro_ctx;

static void uc_pingpong(void)
{
    for (;;)
        swapcontext(&coro_ctx, &loop_ctx);
}

static double bench_swapcontext(long n)
{
    static char stack[64 * 1024] __attribute__((aligned(16)));
    getcontext(&coro_ctx);
    coro_ctx.uc_stack.ss_sp = stack;
    coro_ctx.uc_stack.ss_size = sizeof(stack);
    coro_ctx.uc_link = NULL;
    makecontext(&coro_ctx, uc_pingpong, 0);
    for (long i = 0; i < n / 10; i++)
        swapcontext(&loop_ctx, &coro_ctx);
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        swapcontext(&loop_ctx, &coro_ctx);
    double t1 = now_ns();
    return (t1 - t0) / (2.0 * (double)n);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10000000;
    if (n <= 0) {
        fprintf(stderr, "usage: %s [iterations]\n", argv[0]);
        return 2;
    }
    printf("weft switch, same FP control:       %6.2f ns/switch\n", bench_weft(n, 0));
    printf("weft switch, different FP control:  %6.2f ns/switch\n", bench_weft(n, 1));
    printf("swapcontext:                        %6.2f ns/switch\n", bench_swapcontext(n / 10));
    return 0;
}
