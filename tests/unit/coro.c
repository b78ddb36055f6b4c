/*
 * Tests for server/coro.c. Nothing asserts from inside a coroutine: a failing
 * cr_assert longjmps back to the test's own stack. Coroutines record what they
 * saw and the loop side asserts.
 */
#include "dispatch/coro.h"

#include <criterion/criterion.h>
#include <fenv.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define STACK (64 * 1024)

static void thread_setup(void) { cr_assert_eq(weft_coro_thread_init(), 0); }
static void thread_teardown(void) { weft_coro_thread_cleanup(); }

/* Runs until the coroutine finishes; returns how many resumes that took. */
static int run_to_end(weft_coro *co)
{
    int n = 1;
    while (weft_coro_resume(co) == 0)
        n++;
    return n;
}

/* ---- basics ---- */

struct basic_probe {
    weft_coro *seen_current;
    int steps;
};

static void basic_fn(void *arg)
{
    struct basic_probe *p = arg;
    p->seen_current = weft_coro_current();
    p->steps = 1;
    weft_coro_yield();
    p->steps = 2;
}

Test(coro, resume_reports_yield_then_finish)
{
    weft_coro_pool *pool = weft_coro_pool_new(STACK, 4);
    struct basic_probe p = {0};
    weft_coro *co = weft_coro_new(pool, basic_fn, &p, "/test/basic");
    cr_assert_not_null(co);
    cr_assert_eq(p.steps, 0, "weft_coro_new must not start the coroutine");
    cr_assert_null(weft_coro_current());
    cr_assert_eq(weft_coro_resume(co), 0);
    cr_assert_eq(p.steps, 1);
    cr_assert_eq(p.seen_current, co);
    cr_assert_null(weft_coro_current());
    cr_assert_eq(weft_coro_resume(co), 1);
    cr_assert_eq(p.steps, 2);
    weft_coro_free(co);
    weft_coro_pool_free(pool);
}

/* ---- ordering ---- */

#define PINGS 10000
static int ping_log[2 * (PINGS + 1)];
static int ping_len;

static void ping_fn(void *arg)
{
    int who = (int)(intptr_t)arg;
    for (int i = 0; i <= PINGS; i++) {
        ping_log[ping_len++] = who * 1000000 + i;
        if (i < PINGS)
            weft_coro_yield();
    }
}

Test(coro, ping_pong_order)
{
    weft_coro_pool *pool = weft_coro_pool_new(STACK, 4);
    weft_coro *a = weft_coro_new(pool, ping_fn, (void *)(intptr_t)1, "/a");
    weft_coro *b = weft_coro_new(pool, ping_fn, (void *)(intptr_t)2, "/b");
    int done_a = 0, done_b = 0;
    for (int round = 0; round <= PINGS; round++) {
        done_a = weft_coro_resume(a);
        done_b = weft_coro_resume(b);
        cr_assert_eq(done_a, round == PINGS);
        cr_assert_eq(done_b, round == PINGS);
    }
    cr_assert_eq(ping_len, 2 * (PINGS + 1));
    for (int i = 0; i <= PINGS; i++) {
        cr_assert_eq(ping_log[2 * i], 1000000 + i, "entry %d", 2 * i);
        cr_assert_eq(ping_log[2 * i + 1], 2000000 + i, "entry %d", 2 * i + 1);
    }
    weft_coro_free(a);
    weft_coro_free(b);
    weft_coro_pool_free(pool);
}

#define WORKERS 200
struct worker {
    weft_coro *co;
    int yields, count, wrong_current, finish_rank;
};
static int finished_so_far;

static void worker_fn(void *arg)
{
    struct worker *w = arg;
    int local = 0; /* lives on this coroutine's stack only */
    for (int i = 0; i < w->yields; i++) {
        local++;
        weft_coro_yield();
        if (weft_coro_current() != w->co)
            w->wrong_current++;
    }
    w->count = local;
    w->finish_rank = finished_so_far++;
}

Test(coro, many_interleaved)
{
    static struct worker w[WORKERS];
    weft_coro_pool *pool = weft_coro_pool_new(STACK, 8);
    for (int i = 0; i < WORKERS; i++) {
        w[i].yields = i % 17;
        w[i].co = weft_coro_new(pool, worker_fn, &w[i], "/worker");
        cr_assert_not_null(w[i].co);
    }
    cr_assert_eq(weft_coro_pool_live(pool), WORKERS);
    /* Round-robin: worker i finishes in round yields(i), so finish order is
     * by yield count, then by index. */
    int running = WORKERS;
    while (running > 0)
        for (int i = 0; i < WORKERS; i++)
            if (w[i].co != NULL && weft_coro_resume(w[i].co)) {
                weft_coro_free(w[i].co);
                w[i].co = NULL;
                running--;
            }
    int rank = 0;
    for (int y = 0; y < 17; y++)
        for (int i = y; i < WORKERS; i += 17) {
            cr_assert_eq(w[i].count, w[i].yields, "worker %d", i);
            cr_assert_eq(w[i].wrong_current, 0, "worker %d", i);
            cr_assert_eq(w[i].finish_rank, rank++, "worker %d", i);
        }
    cr_assert_eq(weft_coro_pool_live(pool), 0);
    weft_coro_pool_free(pool);
}

/* ---- registers and locals ---- */

/* Enough live values across each pause that gcc keeps several of them in
 * callee-saved registers and spills the rest to the stack. */
static __attribute__((noinline)) uint64_t mix(uint64_t seed, void (*pause)(void))
{
    uint64_t a = seed, b = seed * 3 + 1, c = seed ^ 0x5555, d = seed + 7, e = ~seed, f = seed << 3, g = 11, h = 13;
    for (int i = 0; i < 100; i++) {
        a = a * 6364136223846793005u + 1442695040888963407u;
        b += a >> 7;
        c ^= b * 31;
        d += c ^ a;
        e -= d >> 3;
        f += e * 5;
        g ^= f + i;
        h += g * a;
        pause();
    }
    return a ^ b ^ c ^ d ^ e ^ f ^ g ^ h;
}

static void no_pause(void) {}
static weft_coro *mix_partner;
static void resume_partner(void) { weft_coro_resume(mix_partner); }

static void mix_fn(void *arg) { *(uint64_t *)arg = mix(*(uint64_t *)arg, weft_coro_yield); }

Test(coro, registers_and_locals_survive_switches)
{
    weft_coro_pool *pool = weft_coro_pool_new(STACK, 4);
    uint64_t in_coro = 42;
    mix_partner = weft_coro_new(pool, mix_fn, &in_coro, "/mix");
    /* Both sides run the same computation, each pausing into the other. */
    uint64_t on_loop = mix(4242, resume_partner);
    cr_assert_eq(weft_coro_resume(mix_partner), 1);
    cr_assert_eq(in_coro, mix(42, no_pause));
    cr_assert_eq(on_loop, mix(4242, no_pause));
    weft_coro_free(mix_partner);
    weft_coro_pool_free(pool);
}

static uintptr_t aligned_local_addr;
static char formatted[64];

static __attribute__((noinline)) void align_probe(void)
{
    _Alignas(16) volatile char probe[16];
    probe[0] = 1;
    aligned_local_addr = (uintptr_t)probe;
    /* Varargs with doubles: the callee saves xmm registers with movaps,
     * which faults on a misaligned stack. */
    snprintf(formatted, sizeof(formatted), "%.2f %.2f", 1.25, 2.5);
}

static void align_fn(void *arg)
{
    (void)arg;
    align_probe();
    weft_coro_yield();
    align_probe();
}

Test(coro, stack_is_16_byte_aligned)
{
    weft_coro_pool *pool = weft_coro_pool_new(STACK, 4);
    weft_coro *co = weft_coro_new(pool, align_fn, NULL, "/align");
    cr_assert_eq(weft_coro_resume(co), 0);
    cr_assert_eq(aligned_local_addr % 16, 0);
    cr_assert_str_eq(formatted, "1.25 2.50");
    aligned_local_addr = 1;
    cr_assert_eq(weft_coro_resume(co), 1);
    cr_assert_eq(aligned_local_addr % 16, 0);
    weft_coro_free(co);
    weft_coro_pool_free(pool);
}

/* ---- floating-point control state ---- */

#if defined(__x86_64__)
static unsigned get_mxcsr(void)
{
    unsigned v;
    __asm__ volatile("stmxcsr %0" : "=m"(v));
    return v & ~0x3fu; /* control bits only; the low six are sticky flags */
}
static void set_mxcsr(unsigned v) { __asm__ volatile("ldmxcsr %0" : : "m"(v)); }
static unsigned short get_x87cw(void)
{
    unsigned short v;
    __asm__ volatile("fnstcw %0" : "=m"(v));
    return v;
}
static void set_x87cw(unsigned short v) { __asm__ volatile("fldcw %0" : : "m"(v)); }
#define MXCSR_FTZ_DAZ 0x8040u
#define X87_PC_MASK 0x0300u /* precision control: 00 = 24-bit */
#endif

#define FP_ROUNDS 5
struct fp_probe {
    int initial_round, round[FP_ROUNDS];
    double third[FP_ROUNDS];
    unsigned mxcsr[FP_ROUNDS];
    unsigned short x87cw[FP_ROUNDS];
    unsigned want_mxcsr;
    unsigned short want_x87cw;
};
static volatile double one = 1.0, three = 3.0;

static void fp_fn(void *arg)
{
    struct fp_probe *p = arg;
    p->initial_round = fegetround();
    fesetround(FE_UPWARD);
#if defined(__x86_64__)
    set_mxcsr(get_mxcsr() | MXCSR_FTZ_DAZ);
    set_x87cw((unsigned short)(get_x87cw() & ~X87_PC_MASK));
    p->want_mxcsr = get_mxcsr();
    p->want_x87cw = get_x87cw();
#endif
    for (int i = 0; i < FP_ROUNDS; i++) {
        weft_coro_yield();
        p->round[i] = fegetround();
        p->third[i] = one / three;
#if defined(__x86_64__)
        p->mxcsr[i] = get_mxcsr();
        p->x87cw[i] = get_x87cw();
#endif
    }
}

Test(coro, fp_control_is_per_coroutine)
{
    weft_coro_pool *pool = weft_coro_pool_new(STACK, 4);
    struct fp_probe p = {0};
    /* A new coroutine starts with its creator's modes, like a new thread. */
    cr_assert_eq(fesetround(FE_TOWARDZERO), 0);
    weft_coro *co = weft_coro_new(pool, fp_fn, &p, "/fp");
    cr_assert_eq(fesetround(FE_TONEAREST), 0);
#if defined(__x86_64__)
    const unsigned loop_mxcsr = get_mxcsr();
    const unsigned short loop_x87cw = get_x87cw();
#endif
    cr_assert_eq(weft_coro_resume(co), 0);
    cr_assert_eq(p.initial_round, FE_TOWARDZERO);
    cr_assert_eq(fegetround(), FE_TONEAREST, "the coroutine's rounding mode leaked into the loop");
#if defined(__x86_64__)
    cr_assert_eq(get_mxcsr(), loop_mxcsr, "the coroutine's MXCSR leaked into the loop");
    cr_assert_eq(get_x87cw(), loop_x87cw, "the coroutine's x87 control word leaked into the loop");
#endif
    /* Now the loop changes its own mode between resumes. */
    cr_assert_eq(fesetround(FE_DOWNWARD), 0);
    double loop_third = 0;
    for (int i = 0; i < FP_ROUNDS; i++) {
        weft_coro_resume(co);
        cr_assert_eq(fegetround(), FE_DOWNWARD, "round %d", i);
        loop_third = one / three;
    }
    for (int i = 0; i < FP_ROUNDS; i++) {
        cr_assert_eq(p.round[i], FE_UPWARD, "round %d", i);
        cr_assert_gt(p.third[i], loop_third, "round %d: MXCSR rounding not upward in the coroutine", i);
#if defined(__x86_64__)
        cr_assert_eq(p.mxcsr[i], p.want_mxcsr, "round %d", i);
        cr_assert_eq(p.x87cw[i], p.want_x87cw, "round %d", i);
#endif
    }
    weft_coro_free(co);
    weft_coro_pool_free(pool);
}

/* ---- one pool per loop thread ---- */

#define LOOP_THREADS 4
static void count_fn(void *arg)
{
    for (int i = 0; i < 100; i++) {
        ++*(int *)arg;
        weft_coro_yield();
    }
}

static void *loop_thread(void *arg)
{
    int *total = arg, counters[50] = {0};
    weft_coro *co[50];
    if (weft_coro_thread_init() != 0)
        return NULL;
    weft_coro_pool *pool = weft_coro_pool_new(STACK, 8);
    for (int i = 0; i < 50; i++)
        co[i] = weft_coro_new(pool, count_fn, &counters[i], "/thread");
    for (int round = 0; round <= 100; round++)
        for (int i = 0; i < 50; i++)
            if (weft_coro_resume(co[i]) != (round == 100))
                return NULL;
    for (int i = 0; i < 50; i++) {
        weft_coro_free(co[i]);
        *total += counters[i];
    }
    weft_coro_pool_free(pool);
    weft_coro_thread_cleanup();
    return total;
}

Test(coro, pools_on_separate_threads)
{
    pthread_t t[LOOP_THREADS];
    int totals[LOOP_THREADS] = {0};
    for (int i = 0; i < LOOP_THREADS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, loop_thread, &totals[i]), 0);
    for (int i = 0; i < LOOP_THREADS; i++) {
        void *ret;
        pthread_join(t[i], &ret);
        cr_assert_eq(ret, &totals[i], "thread %d", i);
        cr_assert_eq(totals[i], 50 * 100, "thread %d", i);
    }
}

/* ---- pool ---- */

static void finish_fn(void *arg) { (void)arg; }

Test(coro, pool_reuses_stacks)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    weft_coro_pool *pool = weft_coro_pool_new(10000, 2);
    cr_assert_eq(weft_coro_pool_stack_size(pool), (10000 + page - 1) / page * page);
    cr_assert_eq(weft_coro_pool_mapped_bytes(pool), 0);

    weft_coro *co = weft_coro_new(pool, finish_fn, NULL, "/reuse");
    size_t one_stack = weft_coro_pool_mapped_bytes(pool);
    cr_assert_geq(one_stack, weft_coro_pool_stack_size(pool) + page);
    cr_assert_eq(run_to_end(co), 1);
    weft_coro_free(co);
    for (int i = 0; i < 1000; i++) {
        co = weft_coro_new(pool, finish_fn, NULL, "/reuse");
        cr_assert_eq(run_to_end(co), 1);
        weft_coro_free(co);
        cr_assert_eq(weft_coro_pool_mapped_bytes(pool), one_stack, "iteration %d", i);
    }

    weft_coro *many[5];
    for (int i = 0; i < 5; i++)
        many[i] = weft_coro_new(pool, finish_fn, NULL, "/reuse");
    cr_assert_eq(weft_coro_pool_live(pool), 5);
    cr_assert_eq(weft_coro_pool_mapped_bytes(pool), 5 * one_stack);
    for (int i = 0; i < 5; i++)
        weft_coro_free(many[i]); /* never started: allowed */
    cr_assert_eq(weft_coro_pool_live(pool), 0);
    cr_assert_eq(weft_coro_pool_mapped_bytes(pool), 5 * one_stack, "the recent peak of 5 stays mapped");
    for (int i = 0; i < 100; i++)
        weft_coro_pool_trim(pool, 100);
    cr_assert_eq(weft_coro_pool_mapped_bytes(pool), 2 * one_stack, "trimmed down to min_cached");
    weft_coro_pool_free(pool);
}

/* A steady load reuses its stacks; once it is over they go back, a bounded number per trim. */
Test(coro, pool_keeps_the_recent_peak_and_trims_the_rest)
{
    enum { PEAK = 300, FLOOR = 4 };
    static weft_coro *co[PEAK];
    weft_coro_pool *pool = weft_coro_pool_new(10000, FLOOR);
    for (int i = 0; i < PEAK; i++)
        co[i] = weft_coro_new(pool, finish_fn, NULL, "/peak");
    size_t one_stack = weft_coro_pool_mapped_bytes(pool) / PEAK;
    weft_coro_pool_trim(pool, 1000); /* the tick sees the peak */

    /* Waves of the same size: not one stack mapped or unmapped. */
    for (int wave = 0; wave < 20; wave++) {
        for (int i = 0; i < PEAK; i++)
            weft_coro_free(co[i]);
        cr_assert_eq(weft_coro_pool_mapped_bytes(pool), PEAK * one_stack, "wave %d: the stacks stay", wave);
        cr_assert_eq(weft_coro_pool_trim(pool, 1000), 0, "wave %d: a trim between waves keeps them", wave);
        for (int i = 0; i < PEAK; i++)
            co[i] = weft_coro_new(pool, finish_fn, NULL, "/peak");
        cr_assert_eq(weft_coro_pool_mapped_bytes(pool), PEAK * one_stack, "wave %d: all reused", wave);
        weft_coro_pool_trim(pool, 1000);
    }

    /* Half stay live: the cache shrinks towards what the peak allows and
     * each trim unmaps at most what it is given. */
    for (int i = PEAK / 2; i < PEAK; i++)
        weft_coro_free(co[i]);
    size_t before = weft_coro_pool_mapped_bytes(pool), trims = 0, n;
    while ((n = weft_coro_pool_trim(pool, 7)) > 0 || trims < 5) {
        cr_assert_leq(n, 7);
        trims++;
        cr_assert_lt(trims, 1000, "trimming never ends");
    }
    cr_assert_lt(weft_coro_pool_mapped_bytes(pool), before);
    cr_assert_eq(weft_coro_pool_mapped_bytes(pool), (PEAK / 2 + FLOOR) * one_stack,
                 "the live ones and min_cached stay: %zu stacks", weft_coro_pool_mapped_bytes(pool) / one_stack);
    for (int i = 0; i < PEAK / 2; i++)
        weft_coro_free(co[i]);
    for (int i = 0; i < 100; i++)
        weft_coro_pool_trim(pool, 1000);
    cr_assert_eq(weft_coro_pool_mapped_bytes(pool), FLOOR * one_stack);
    cr_assert_eq(weft_coro_pool_live(pool), 0);
    weft_coro_pool_free(pool);
}

/* ---- overflow report ---- */

static volatile unsigned depth_limit = UINT32_MAX;

static __attribute__((noinline)) unsigned recurse(unsigned n)
{
    volatile char frame[512];
    frame[0] = (char)n;
    if (n == depth_limit)
        return 0;
    return recurse(n + 1) + (unsigned)frame[0];
}

static void overflow_fn(void *arg) { *(unsigned *)arg = recurse(0); }

static void fault_fn(void *arg)
{
    /* A fault inside a coroutine but outside its guard page. */
    *(volatile char *)arg = 1;
}

/* Runs fn in a child with stderr captured into out; returns the wait status. */
static int run_child(void (*fn)(const char *), const char *label, char *out, size_t size)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        fn(label);
        _exit(0);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t n;
    while (len + 1 < size && (n = read(fds[0], out + len, size - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = '\0';
    close(fds[0]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return status;
}

static void child_overflow(const char *label)
{
    weft_coro_pool *pool = weft_coro_pool_new(STACK, 0);
    unsigned result = 0;
    weft_coro_resume(weft_coro_new(pool, overflow_fn, &result, label));
}

static void child_fault_elsewhere(const char *label)
{
    weft_coro_pool *pool = weft_coro_pool_new(STACK, 0);
    void *no_access = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    weft_coro_resume(weft_coro_new(pool, fault_fn, no_access, label));
}

Test(coro, overflow_names_route, .init = thread_setup, .fini = thread_teardown, .timeout = 30)
{
    char out[4096];
    int status = run_child(child_overflow, "/test/overflow", out, sizeof(out));
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "status %#x, stderr: %s", status, out);
    /* A substring: ASan's swapcontext interceptor (ucontext fallback) warns on stderr first. */
    cr_assert_not_null(strstr(out, "weft: FATAL: coroutine stack overflow in route /test/overflow (stack size 65536 "
                                   "bytes); raise coroutine.stack_size in the config\n"),
                       "stderr: %s", out);
}

Test(coro, overflow_label_is_truncated, .init = thread_setup, .fini = thread_teardown, .timeout = 30)
{
    char label[200], want[WEFT_CORO_LABEL_MAX + 32], out[4096];
    memset(label, 'x', sizeof(label) - 1);
    label[sizeof(label) - 1] = '\0';
    run_child(child_overflow, label, out, sizeof(out));
    snprintf(want, sizeof(want), "route %.*s (stack size", WEFT_CORO_LABEL_MAX, label);
    cr_assert_not_null(strstr(out, want), "stderr: %s", out);
}

/* ---- longjmp inside a coroutine ---- */

static jmp_buf unwind_to;
static volatile int do_jump = 1;

static __attribute__((noinline)) int dive(int n)
{
    volatile char frame[64];
    frame[0] = (char)n;
    if (n == 0) {
        if (do_jump)
            longjmp(unwind_to, 1);
        return 0;
    }
    return dive(n - 1) + frame[0];
}

static void longjmp_fn(void *arg)
{
    if (setjmp(unwind_to) == 0)
        dive(10);
    else
        *(int *)arg = 1;
}

static void child_longjmp(const char *label)
{
    weft_coro_pool *pool = weft_coro_pool_new(STACK, 0);
    int landed = 0;
    weft_coro *co = weft_coro_new(pool, longjmp_fn, &landed, label);
    if (weft_coro_resume(co) != 1 || landed != 1)
        _exit(2);
    weft_coro_free(co);
    weft_coro_pool_free(pool);
}

/* Plugins may use libraries that longjmp. ASan unpoisons the stack before a
 * noreturn call and, unless told about the fiber switch, warns that it cannot
 * ("ignoring requested __asan_handle_no_return") and may report falsely. */
Test(coro, longjmp_within_a_coroutine, .timeout = 30)
{
    char out[4096];
    int status = run_child(child_longjmp, "/test/longjmp", out, sizeof(out));
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x, stderr: %s", status, out);
    cr_assert_null(strstr(out, "__asan_handle_no_return"), "stderr: %s", out);
}

Test(coro, other_faults_are_not_reported_as_overflow, .init = thread_setup, .fini = thread_teardown, .timeout = 30)
{
    char out[4096];
    int status = run_child(child_fault_elsewhere, "/test/fault", out, sizeof(out));
    cr_assert_null(strstr(out, "stack overflow"), "stderr: %s", out);
#if defined(__SANITIZE_ADDRESS__)
    /* The fault is handed on to ASan's own report, which exits non-zero. */
    cr_assert(!WIFEXITED(status) || WEXITSTATUS(status) != 0, "status %#x", status);
#else
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "status %#x, stderr: %s", status, out);
#endif
}
