/*
 * Stackful coroutines for request handlers (server-internal, not installed).
 *
 * Each event-loop thread owns one pool; a coroutine is created, resumed and
 * freed on that thread only. Only the loop's own stack may resume a
 * coroutine (no nesting), so yield always returns to the loop.
 */
#ifndef WEFT_CORO_H
#define WEFT_CORO_H

#include <signal.h>
#include <stddef.h>

typedef struct weft_coro weft_coro;
typedef struct weft_coro_pool weft_coro_pool; /* one per event-loop thread; NOT thread-safe */
typedef void (*weft_coro_fn)(void *arg);

/** Longest label kept for the overflow report; longer ones are truncated. */
#define WEFT_CORO_LABEL_MAX 127

/**
 * Creates a pool. stack_size is the usable stack per coroutine, rounded up to
 * whole pages; one PROT_NONE guard page sits below each stack. Under
 * AddressSanitizer 4x that is mapped (instrumented frames are larger), but
 * weft_coro_pool_stack_size() still reports the requested size.
 * Finished stacks are kept for reuse instead of being unmapped: always up to
 * min_cached of them, and beyond that as long as live + cached stays within
 * the recent high-water mark of live coroutines (see weft_coro_pool_trim).
 * Returns NULL (errno set) on failure or if stack_size is 0.
 */
weft_coro_pool *weft_coro_pool_new(size_t stack_size, size_t min_cached);

/**
 * Called periodically (the loop's 100 ms tick): lowers the high-water mark
 * by about an eighth unless live coroutines reached it again since the last
 * call, and unmaps up to max_unmap cached stacks beyond it (never below
 * min_cached). Returns how many it unmapped.
 */
size_t weft_coro_pool_trim(weft_coro_pool *pool, size_t max_unmap);

/** Unmaps the cached stacks. Every coroutine must have been freed first. */
void weft_coro_pool_free(weft_coro_pool *pool);

/**
 * Creates a coroutine that will run fn(arg) on its own stack; it does not
 * start until weft_coro_resume(). label (e.g. the route "/coroutine/cpu") is
 * copied, truncated to WEFT_CORO_LABEL_MAX bytes, and named in the stack
 * overflow report; NULL is allowed. The coroutine starts with the
 * floating-point control settings of the calling thread (x86-64: MXCSR, its
 * exception flags cleared, and the x87 control word; aarch64: FPCR), as a
 * new thread would. Returns NULL (errno set) on failure.
 */
weft_coro *weft_coro_new(weft_coro_pool *pool, weft_coro_fn fn, void *arg, const char *label);

/**
 * Runs co from the thread's normal stack until it yields (returns 0) or fn
 * returns (returns 1). Calling it from inside a coroutine, or on a finished
 * coroutine, aborts the process (the check stays on under NDEBUG).
 */
int weft_coro_resume(weft_coro *co);

/** From inside a coroutine: switches back to the loop that resumed it. */
void weft_coro_yield(void);

/** The coroutine running on this thread, or NULL on the normal stack. */
weft_coro *weft_coro_current(void);

/**
 * Gives a finished (resume returned 1) or never-started coroutine back to its
 * pool. A suspended coroutine cannot be freed: whatever its frames hold would
 * leak, so resume it until it finishes (e.g. with a cancel flag it checks).
 */
void weft_coro_free(weft_coro *co);

/** The usable stack size requested for this pool, rounded up to pages. */
size_t weft_coro_pool_stack_size(const weft_coro_pool *pool);

/** Coroutines created and not yet freed. */
size_t weft_coro_pool_live(const weft_coro_pool *pool);

/** Bytes of stack mappings (guard pages included) held for live and cached coroutines. */
size_t weft_coro_pool_mapped_bytes(const weft_coro_pool *pool);

/**
 * Prepares the calling thread for stack overflow reports: installs an
 * alternate signal stack for it and, once per process, a SIGSEGV/SIGBUS
 * handler. A fault in the guard page of the thread's running coroutine prints
 *   weft: FATAL: coroutine stack overflow in route <label> (stack size <N>
 *   bytes); raise coroutine.stack_size in the config
 * to stderr, calls the fault hook (what = "stack overflow") and kills the
 * process with the signal's default action (so a core dump is still written). Other faults go to the handler that was
 * installed before (e.g. ASan's report) or, if none, to the default action.
 * Without this call an overflow still kills the thread's process, silently.
 * Call once per event-loop thread; repeated calls are harmless.
 * Returns 0, or -1 with errno set.
 */
int weft_coro_thread_init(void);

/**
 * Installs the process-wide fatal-signal handler (SIGSEGV, SIGBUS, SIGILL,
 * SIGFPE, SIGABRT) without an alternate stack for the calling thread;
 * weft_coro_thread_init() does this too. Returns 0, or -1 with errno set.
 */
int weft_coro_signals_init(void);

/**
 * A fatal signal calls `hook` (in async-signal context, on the thread's
 * alternate stack if it has one) before the previous handler or the default
 * action ends the process: the place for a crash report. `uctx` is the
 * interrupted context (a ucontext_t: where the fault was). `what` is NULL,
 * or "stack overflow" for a fault on a coroutine's guard page (after the
 * overflow line above). NULL removes it.
 */
void weft_coro_set_fault_hook(void (*hook)(int sig, const siginfo_t *info, const void *uctx, const char *what));

/** Removes and frees this thread's alternate signal stack (restoring any previous one). */
void weft_coro_thread_cleanup(void);

#endif
