/*
 * The register switch under coro.c (server-internal, not installed): which
 * CPUs have one, and the frame a coroutine that has not run yet starts from.
 * Apart from coro.c so that tests/switch/ drives the switch and this frame
 * alone, natively and cross-compiled under qemu-user, without the pools,
 * sanitizer annotations and signal handlers.
 */
#ifndef WEFT_CORO_SWITCH_H
#define WEFT_CORO_SWITCH_H

#include <stdint.h>

/* WEFT_CORO_UCONTEXT forces the portable path (swapcontext) so it can be tested. */
#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(WEFT_CORO_UCONTEXT)
#define WEFT_CORO_SWITCH 1

/**
 * Saves what the CPU's calling convention makes callee-saved (and the
 * floating-point control) on the current stack, stores the stack pointer in
 * *save_sp, then restores the same set from the frame at load_sp -- one this
 * function saved, or one weft__coro_frame built -- and continues where that
 * frame was saved (coro_switch_x86_64.S, coro_switch_aarch64.S).
 */
void weft__coro_switch(void **save_sp, void *load_sp);

/**
 * Builds below top (16-byte aligned) the frame whose first switch-to enters
 * entry(), which must never return, with an empty call chain (backtraces
 * end there) and the calling thread's floating-point control settings, as a
 * new thread would start. Returns the stack pointer to pass as load_sp.
 */
static inline void *weft__coro_frame(void *top, void (*entry)(void));

#if defined(__x86_64__)
/* The frame of coro_switch_x86_64.S. The top is 16-byte aligned, so entry
 * starts with rsp % 16 == 8, exactly as after a call. */
static inline void *weft__coro_frame(void *top, void (*entry)(void))
{
    uint64_t *t = top;
    uint32_t mxcsr;
    uint16_t fpucw;
    __asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(fpucw));
    t[-1] = 0; /* entry's return address: ends backtraces */
    t[-2] = (uint64_t)(uintptr_t)entry;
    for (int i = 3; i <= 8; i++)
        t[-i] = 0; /* rbp (0 ends frame-pointer chains), rbx, r12-r15 */
    /* The creator's FP control, minus stale exception flags. */
    t[-9] = (mxcsr & ~UINT32_C(0x3f)) | (uint64_t)fpucw << 32;
    return &t[-9];
}
#else
/* The frame of coro_switch_aarch64.S, in 8-byte slots from the saved sp:
 * d8-d15, x19-x28, x29, x30, FPCR, the address to continue at. */
#define WEFT__CORO_FRAME_SLOTS 22

static inline void *weft__coro_frame(void *top, void (*entry)(void))
{
    uint64_t *f = (uint64_t *)top - WEFT__CORO_FRAME_SLOTS;
    uint64_t fpcr, pc = (uint64_t)(uintptr_t)entry;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    for (int i = 0; i < 20; i++)
        f[i] = 0; /* callee-saved registers; x29 = 0 ends frame-pointer chains, x30 = 0 backtraces */
    f[20] = fpcr; /* control only: the exception flags live in FPSR */
#if defined(__ARM_FEATURE_PAC_DEFAULT)
    /* Signed as the switch signs a saved address (pacia1716: x17 with the
     * modifier x16, the stack pointer once the frame is popped); a NOP on
     * CPUs without pointer authentication, as the switch's check is. */
    register uint64_t x17 __asm__("x17") = pc;
    register uint64_t x16 __asm__("x16") = (uint64_t)(uintptr_t)top;
    __asm__("hint #8" : "+r"(x17) : "r"(x16));
    pc = x17;
#endif
    f[21] = pc;
    return f;
}
#endif

#endif /* x86-64 or aarch64 */
#endif
