/*
 * Stackful coroutines: guard-paged mmap stacks cached per loop thread, the
 * switch (coro_switch.h: coro_switch_x86_64.S, coro_switch_aarch64.S, or
 * ucontext elsewhere), sanitizer fiber annotations and the stack overflow
 * report.
 */
#include "dispatch/coro.h"
#include "base/log.h"
#include "dispatch/coro_switch.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/sigsafe.h"

#if defined(__SANITIZE_ADDRESS__)
#define CORO_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define CORO_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORO_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define CORO_TSAN 1
#endif
#endif

#if CORO_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
/* ASan's redzones make instrumented frames several times larger: a handler
 * that fits its configured stack must still fit in the ASan build. */
#define CORO_STACK_FACTOR 4
#else
#define CORO_STACK_FACTOR 1
#endif
#if CORO_TSAN
#include <sanitizer/tsan_interface.h>
#endif

/* A CPU without a register switch (coro_switch.h), or WEFT_CORO_UCONTEXT. */
#if !defined(WEFT_CORO_SWITCH)
#define CORO_UCONTEXT 1
#include <ucontext.h>
#endif

/* The overflow handler runs here; 64 KiB leaves room for AVX-512 signal
 * frames and an instrumented handler. */
#define ALTSTACK_SIZE (64 * 1024)

enum coro_state { CORO_NEW, CORO_RUNNING, CORO_SUSPENDED, CORO_FINISHED };

struct weft_coro {
#if CORO_UCONTEXT
    ucontext_t ctx, caller_ctx;
#else
    void *sp;        /* valid while the coroutine is not running */
    void *caller_sp; /* valid while it is */
#endif
    weft_coro_pool *pool;
    weft_coro *next_cached;
    char *map; /* guard page, then the stack */
    weft_coro_fn fn;
    void *arg;
    enum coro_state state;
#if CORO_ASAN
    void *fake_stack;         /* this coroutine's, while it is switched out */
    const void *caller_stack; /* the loop's stack, learnt on each switch in */
    size_t caller_stack_size;
#endif
#if CORO_TSAN
    void *tsan_fiber, *tsan_caller;
#endif
    char label[WEFT_CORO_LABEL_MAX + 1];
};

struct weft_coro_pool {
    size_t page;
    size_t stack_size; /* as configured (page-rounded): what the overflow report names */
    size_t usable;     /* mapped above the guard page */
    size_t min_cached, ncached, live, mapped;
    /* Finished stacks are kept while live + cached stays within the recent
     * high-water mark of live coroutines: a steady 5,000 in flight reuses
     * stacks instead of mapping, guarding and unmapping one per request
     * (which cost coroutines twice reactive's CPU at 10,000 connections:
     * mmap, mprotect, munmap and TLB shootdowns), and a burst that is over
     * gives its memory back through weft_coro_pool_trim. */
    size_t peak;   /* most live since the last trim */
    size_t recent; /* decaying high-water mark, updated by each trim */
    weft_coro *cache;
};

static __thread weft_coro *current;

static __attribute__((noreturn)) void misuse(const char *what)
{
    /* Each of these would corrupt a stack silently, so unlike assert() the
     * check survives NDEBUG. */
    weft_say(WEFT_LOG_ERROR, "FATAL: %s", what); /* with its journal priority */
    abort();
}

static char *stack_lo(const weft_coro *co) { return co->map + co->pool->page; }
static size_t map_size(const weft_coro_pool *pool) { return pool->page + pool->usable; }

static void sanitizer_arrived(weft_coro *co)
{
#if CORO_ASAN
    __sanitizer_finish_switch_fiber(co->fake_stack, &co->caller_stack, &co->caller_stack_size);
#else
    (void)co;
#endif
}

#if CORO_UCONTEXT
static void ctx_to_coro(weft_coro *co) { swapcontext(&co->caller_ctx, &co->ctx); }
static void ctx_to_caller(weft_coro *co) { swapcontext(&co->ctx, &co->caller_ctx); }
#else
static void ctx_to_coro(weft_coro *co) { weft__coro_switch(&co->caller_sp, co->sp); }
static void ctx_to_caller(weft_coro *co) { weft__coro_switch(&co->sp, co->caller_sp); }
#endif

static void switch_out(weft_coro *co, int finished)
{
#if CORO_ASAN
    /* NULL on the last switch lets ASan drop the coroutine's fake stack. */
    __sanitizer_start_switch_fiber(finished ? NULL : &co->fake_stack, co->caller_stack, co->caller_stack_size);
#endif
#if CORO_TSAN
    __tsan_switch_to_fiber(co->tsan_caller, 0);
#endif
    (void)finished;
    ctx_to_caller(co);
    sanitizer_arrived(co);
}

/* First code on a new stack. The switch "returns" here, so the coroutine is
 * found through the thread-local rather than an argument register. */
static __attribute__((noreturn)) void coro_entry(void)
{
    weft_coro *co = current;
    sanitizer_arrived(co);
    co->fn(co->arg);
    co->state = CORO_FINISHED;
    switch_out(co, 1);
    misuse("finished coroutine was resumed");
}

#if CORO_UCONTEXT
static int ctx_init(weft_coro *co)
{
    /* getcontext also captures the floating-point environment the new
     * coroutine starts with. */
    if (getcontext(&co->ctx) != 0)
        return -1;
    co->ctx.uc_stack.ss_sp = stack_lo(co);
    co->ctx.uc_stack.ss_size = co->pool->usable;
    co->ctx.uc_link = NULL; /* coro_entry never returns */
    makecontext(&co->ctx, coro_entry, 0);
    return 0;
}
#else
static int ctx_init(weft_coro *co)
{
    /* A frame as weft__coro_switch leaves it, so the first switch "returns"
     * into coro_entry. The top is page-aligned. */
    co->sp = weft__coro_frame(stack_lo(co) + co->pool->usable, coro_entry);
    return 0;
}
#endif

static void coro_unmap(weft_coro *co)
{
    weft_coro_pool *pool = co->pool;
#if CORO_ASAN
    /* Frames that never returned (coro_entry's) leave poisoned redzones; the
     * next user of this memory, reused stack or not, must not inherit them. */
    __asan_unpoison_memory_region(stack_lo(co), pool->usable);
#endif
    munmap(co->map, map_size(pool));
    pool->mapped -= map_size(pool);
    free(co);
}

static weft_coro *coro_map(weft_coro_pool *pool)
{
    weft_coro *co = malloc(sizeof(*co));
    if (co == NULL)
        return NULL;
    void *map = mmap(NULL, map_size(pool), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (map == MAP_FAILED) {
        free(co);
        return NULL;
    }
    if (mprotect(map, pool->page, PROT_NONE) != 0) {
        int err = errno;
        munmap(map, map_size(pool));
        free(co);
        errno = err;
        return NULL;
    }
    co->map = map;
    co->pool = pool;
    pool->mapped += map_size(pool);
    return co;
}

weft_coro_pool *weft_coro_pool_new(size_t stack_size, size_t min_cached)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t pg = page > 0 ? (size_t)page : 4096;
    if (stack_size == 0 || stack_size > SIZE_MAX / CORO_STACK_FACTOR - 2 * pg) {
        errno = EINVAL;
        return NULL;
    }
    weft_coro_pool *pool = calloc(1, sizeof(*pool));
    if (pool == NULL)
        return NULL;
    pool->page = pg;
    pool->stack_size = (stack_size + pg - 1) / pg * pg;
    pool->usable = pool->stack_size * CORO_STACK_FACTOR;
    pool->min_cached = min_cached;
    return pool;
}

void weft_coro_pool_free(weft_coro_pool *pool)
{
    if (pool == NULL)
        return;
    if (pool->live != 0)
        misuse("coroutine pool freed with live coroutines");
    while (pool->cache != NULL) {
        weft_coro *co = pool->cache;
        pool->cache = co->next_cached;
        coro_unmap(co);
    }
    free(pool);
}

weft_coro *weft_coro_new(weft_coro_pool *pool, weft_coro_fn fn, void *arg, const char *label)
{
    weft_coro *co = pool->cache;
    if (co != NULL) {
        pool->cache = co->next_cached;
        pool->ncached--;
    } else if ((co = coro_map(pool)) == NULL) {
        return NULL;
    }
    co->fn = fn;
    co->arg = arg;
    co->state = CORO_NEW;
    if (label == NULL)
        label = "(unnamed)";
    size_t n = strnlen(label, WEFT_CORO_LABEL_MAX);
    memcpy(co->label, label, n);
    co->label[n] = '\0';
    if (ctx_init(co) != 0) {
        coro_unmap(co);
        return NULL;
    }
#if CORO_ASAN
    co->fake_stack = NULL;
#endif
#if CORO_TSAN
    co->tsan_fiber = __tsan_create_fiber(0);
#endif
    if (++pool->live > pool->peak)
        pool->peak = pool->live;
    return co;
}

int weft_coro_resume(weft_coro *co)
{
    if (current != NULL)
        misuse("weft_coro_resume called from inside a coroutine");
    if (co->state == CORO_FINISHED)
        misuse("weft_coro_resume called on a finished coroutine");
    current = co;
    co->state = CORO_RUNNING;
#if CORO_ASAN
    void *loop_fake_stack = NULL;
    __sanitizer_start_switch_fiber(&loop_fake_stack, stack_lo(co), co->pool->usable);
#endif
#if CORO_TSAN
    co->tsan_caller = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(co->tsan_fiber, 0);
#endif
    ctx_to_coro(co);
#if CORO_ASAN
    __sanitizer_finish_switch_fiber(loop_fake_stack, NULL, NULL);
#endif
    current = NULL;
    return co->state == CORO_FINISHED;
}

void weft_coro_yield(void)
{
    weft_coro *co = current;
    if (co == NULL)
        misuse("weft_coro_yield called outside a coroutine");
    co->state = CORO_SUSPENDED;
    switch_out(co, 0);
}

weft_coro *weft_coro_current(void) { return current; }

void weft_coro_free(weft_coro *co)
{
    if (co == NULL)
        return;
    if (co->state == CORO_RUNNING || co->state == CORO_SUSPENDED)
        misuse("weft_coro_free called on a running or suspended coroutine");
    weft_coro_pool *pool = co->pool;
    pool->live--;
#if CORO_TSAN
    __tsan_destroy_fiber(co->tsan_fiber);
#endif
    size_t high = pool->recent > pool->peak ? pool->recent : pool->peak;
    if (pool->ncached < pool->min_cached || pool->live + pool->ncached < high) {
#if CORO_ASAN
        __asan_unpoison_memory_region(stack_lo(co), pool->usable);
#endif
        co->next_cached = pool->cache;
        pool->cache = co;
        pool->ncached++;
    } else {
        coro_unmap(co);
    }
}

size_t weft_coro_pool_trim(weft_coro_pool *pool, size_t max_unmap)
{
    /* About an eighth less per call: at the loop's 100 ms tick a burst's
     * high-water mark falls to nothing within ~3 s of the burst ending. */
    size_t high = pool->recent > 0 ? pool->recent - pool->recent / 8 - 1 : 0;
    if (pool->peak > high)
        high = pool->peak;
    pool->recent = high;
    pool->peak = pool->live;
    size_t keep = high > pool->live ? high - pool->live : 0;
    if (keep < pool->min_cached)
        keep = pool->min_cached;
    size_t n = 0;
    while (pool->ncached > keep && n < max_unmap) {
        weft_coro *co = pool->cache;
        pool->cache = co->next_cached;
        pool->ncached--;
        coro_unmap(co);
        n++;
    }
    return n;
}

size_t weft_coro_pool_stack_size(const weft_coro_pool *pool) { return pool->stack_size; }
size_t weft_coro_pool_live(const weft_coro_pool *pool) { return pool->live; }
size_t weft_coro_pool_mapped_bytes(const weft_coro_pool *pool) { return pool->mapped; }

/* ---- stack overflow report ---- */

/* Every signal that means "this code is broken"; the previous handler of each
 * (a sanitizer's, or the default) finishes the job after the report. */
static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define N_FATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))
static struct sigaction prev_action[N_FATAL];
static void (*fault_hook)(int sig, const siginfo_t *info, const void *uctx, const char *what);
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;
static int handlers_errno;
static __thread char *altstack_map; /* guard page + ALTSTACK_SIZE */
static __thread stack_t prev_altstack;

static void restore_default(int sig)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
}

/* Async-signal context: only write, sigaction and raise; no stdio, no malloc. */
static void on_fault(int sig, siginfo_t *info, void *uctx)
{
    const weft_coro *co = current;
    uintptr_t addr = (uintptr_t)info->si_addr;
    if ((sig == SIGSEGV || sig == SIGBUS) && co != NULL && addr >= (uintptr_t)co->map && addr < (uintptr_t)co->map + co->pool->page) {
        char msg[WEFT_CORO_LABEL_MAX + 192];
        char *p = msg, *end = msg + sizeof(msg);
        p = weft_ss_append(p, end, "weft: FATAL: coroutine stack overflow in route ");
        p = weft_ss_append(p, end, co->label);
        p = weft_ss_append(p, end, " (stack size ");
        p = weft_ss_append_u64(p, end, co->pool->stack_size);
        p = weft_ss_append(p, end, " bytes); raise coroutine.stack_size in the config");
        weft_ss_report_line(msg, (size_t)(p - msg), NULL, 0);
        /* Then the crash record, like any other handler crash: without it
         * nothing was quarantined and a restarted server crashed again on
         * the next such request. Recovering instead (a jump back to the loop,
         * the coroutine discarded) is not safe: the handler may have
         * overflowed inside malloc or holding a lock, a transaction or
         * anything else its frames own, none of which can be given back. */
        void (*hook)(int, const siginfo_t *, const void *, const char *) = fault_hook;
        if (hook != NULL)
            hook(sig, info, uctx, "stack overflow");
        /* Blocked until this handler returns, then fatal; the core still
         * holds the registers of the faulting context. */
        restore_default(sig);
        raise(sig);
        return;
    }
    /* Not ours. Put back whatever handled it before -- a sanitizer's report
     * or the embedding program's handler -- and, for a genuine fault
     * (si_code > 0), return: the instruction faults again and reaches that
     * handler through the kernel, with the real context. Calling it from here
     * instead confuses TSan ("nested bug"). A kill()ed signal must be re-sent. */
    void (*hook)(int, const siginfo_t *, const void *, const char *) = fault_hook;
    if (hook != NULL)
        hook(sig, info, uctx, NULL);
    struct sigaction prev = {.sa_handler = SIG_DFL};
    for (size_t i = 0; i < N_FATAL; i++)
        if (fatal_signals[i] == sig)
            prev = prev_action[i];
    if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_IGN)
        prev.sa_handler = SIG_DFL;
    sigaction(sig, &prev, NULL);
    if (info->si_code <= 0)
        raise(sig);
}

static void install_handlers(void)
{
    struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_ONSTACK};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_FATAL; i++) {
        if (sigaction(fatal_signals[i], &sa, &prev_action[i]) != 0)
            handlers_errno = errno;
#if CORO_TSAN
        /* TSan reports its internal handler as the previous one, and invoking
         * that as a user handler ends in "nested bug"; a plain fault is better. */
        prev_action[i] = (struct sigaction){.sa_handler = SIG_DFL};
#endif
    }
}

void weft_coro_set_fault_hook(void (*hook)(int sig, const siginfo_t *info, const void *uctx, const char *what))
{
    fault_hook = hook;
}

int weft_coro_signals_init(void)
{
    pthread_once(&handlers_once, install_handlers);
    errno = handlers_errno;
    return handlers_errno != 0 ? -1 : 0;
}

int weft_coro_thread_init(void)
{
    /* Touch the thread-local now: its first use must not happen inside the
     * signal handler, where lazy TLS allocation would not be safe. */
    weft_coro *volatile *touch = &current;
    (void)*touch;

    pthread_once(&handlers_once, install_handlers);
    if (handlers_errno != 0) {
        errno = handlers_errno;
        return -1;
    }
    if (altstack_map != NULL)
        return 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    /* A guard page here too: an overflowing handler must not scribble on
     * whatever is mapped below. */
    char *map = mmap(NULL, page + ALTSTACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (map == MAP_FAILED)
        return -1;
    stack_t ss = {.ss_sp = map + page, .ss_size = ALTSTACK_SIZE};
    if (mprotect(map, page, PROT_NONE) != 0 || sigaltstack(&ss, &prev_altstack) != 0) {
        int err = errno;
        munmap(map, page + ALTSTACK_SIZE);
        errno = err;
        return -1;
    }
    altstack_map = map;
    return 0;
}

void weft_coro_thread_cleanup(void)
{
    if (altstack_map == NULL)
        return;
    /* Put back a sanitizer's altstack: its thread-exit code unmaps whatever
     * altstack is installed, and must find its own. */
    stack_t ss = prev_altstack;
    if (ss.ss_flags & SS_DISABLE)
        ss = (stack_t){.ss_flags = SS_DISABLE};
    sigaltstack(&ss, NULL);
    munmap(altstack_map, (size_t)sysconf(_SC_PAGESIZE) + ALTSTACK_SIZE);
    altstack_map = NULL;
}
