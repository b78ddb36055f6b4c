/*
 * weft__coro_switch and weft__coro_frame alone, on a stack of this file's.
 * Every register the ABI makes callee-saved survives a switch: regs.S sets
 * them just before it and reads them just after, while the other side sets
 * them all to other values. A new frame starts aligned, with an empty call
 * chain and its creator's floating-point control. On aarch64 built with
 * branch protection, the landing pad and the signed return address work.
 */
#include "dispatch/coro_switch.h"
#include "switch_probes.h"

#include <fcntl.h>
#include <fenv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <unwind.h>

#define STACK_BYTES (256 * 1024)
#define ROUNDS 2000

static char stack[STACK_BYTES] __attribute__((aligned(4096)));
static void *const stack_top = stack + STACK_BYTES;
static void *main_sp, *co_sp;

/* ---- registers ---- */

#if defined(__aarch64__)
#define WT_NREGS 20
#define FP_SLOT 19
static const char *const reg_names[WT_NREGS] = {"x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
    "x28", "x29", "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15", "FPCR"};

static void fill_fp(uint64_t *in, int v)
{
    /* RMode (bits 22-23), FZ (24), DN (25): what a handler may change. */
    in[FP_SLOT] = (uint64_t)(v & 3) << 22 | (uint64_t)((v >> 2) & 1) << 24 | (uint64_t)((v >> 3) & 1) << 25;
}
#else
#define WT_NREGS 8
#define FP_SLOT 6
static const char *const reg_names[WT_NREGS] = {"rbx", "rbp", "r12", "r13", "r14", "r15", "MXCSR", "x87 CW"};

static void fill_fp(uint64_t *in, int v)
{
    /* MXCSR: exceptions masked, rounding (bits 13-14), FTZ and DAZ; x87:
     * rounding (bits 10-11) and precision (8-9). */
    static const uint64_t precision[3] = {0x300, 0x200, 0x000};
    in[FP_SLOT] = 0x1f80 | (uint64_t)(v & 3) << 13 | (((v >> 2) & 1) ? 0x8040 : 0);
    in[FP_SLOT + 1] = 0x7f | precision[(v >> 2) % 3] | (uint64_t)(v & 3) << 10;
}
#endif

static void fill(uint64_t *in, int side, int round)
{
    for (int k = 0; k < FP_SLOT; k++)
        in[k] = (UINT64_C(0x5157000000000000) * (uint64_t)(side + 1)) ^ ((uint64_t)round * UINT64_C(0x9e3779b97f4a7c15)) ^
                ((uint64_t)k << 40) ^ (uint64_t)k;
    /* Sides differ in rounding mode every round. */
    fill_fp(in, round + side);
}

static int first_mismatch(const uint64_t *in, const uint64_t *out)
{
    for (int k = 0; k < WT_NREGS; k++)
        if (in[k] != out[k])
            return k;
    return -1;
}

static uint64_t co_in[WT_NREGS], co_out[WT_NREGS];
static int co_round, co_errors, co_first_bad = -1, co_bad_round;

static void regs_entry(void)
{
    for (;;) {
        fill(co_in, 1, co_round);
        wt_regs_switch(&co_sp, main_sp, co_in, co_out);
        int bad = first_mismatch(co_in, co_out);
        if (bad >= 0 && co_errors++ == 0) {
            co_first_bad = bad;
            co_bad_round = co_round;
        }
    }
}

void wt_test_registers(void)
{
    const char *t = "registers_preserved";
    uint64_t in[WT_NREGS], out[WT_NREGS];
    co_sp = weft__coro_frame(stack_top, regs_entry);
    for (int r = 0; r < ROUNDS; r++) {
        co_round = r;
        fill(in, 0, r);
        wt_regs_switch(&main_sp, co_sp, in, out);
        int bad = first_mismatch(in, out);
        if (bad >= 0) {
            wt_check(0, t, "round %d: the loop side's %s came back %#llx, was %#llx", r, reg_names[bad],
                (unsigned long long)out[bad], (unsigned long long)in[bad]);
            return;
        }
    }
    wt_check(co_errors == 0, t, "%d rounds: the coroutine side's %s changed (first in round %d)", co_errors,
        co_first_bad >= 0 ? reg_names[co_first_bad] : "?", co_bad_round);
}

/* ---- a new frame ---- */

static void *nf_ret = (void *)1;
static int nf_round = -1, nf_misaligned = -1, nf_frames = -1, nf_unwind_end;

static _Unwind_Reason_Code count_frame(struct _Unwind_Context *ctx, void *arg)
{
    int *n = arg;
    return ++*n < 64 ? _URC_NO_REASON : _URC_NORMAL_STOP;
}

__attribute__((noinline)) static void nf_probe(void)
{
    /* The ABI's 16-byte alignment: frame records sit at multiples of 16. */
    nf_misaligned = ((uintptr_t)__builtin_frame_address(0) & 15) != 0;
    int n = 0;
    nf_unwind_end = _Unwind_Backtrace(count_frame, &n) == _URC_END_OF_STACK;
    nf_frames = n;
}

static void nf_entry(void)
{
    nf_ret = __builtin_extract_return_addr(__builtin_return_address(0));
    nf_round = fegetround();
    nf_probe();
    for (;;)
        weft__coro_switch(&co_sp, main_sp);
}

void wt_test_new_frame(void)
{
    const char *t = "new_frame";
    wt_check(fesetround(FE_DOWNWARD) == 0, t, "fesetround");
    co_sp = weft__coro_frame(stack_top, nf_entry);
    fesetround(FE_TONEAREST);
    weft__coro_switch(&main_sp, co_sp);
    wt_check(fegetround() == FE_TONEAREST, t, "the loop's rounding mode came back %#x", (unsigned)fegetround());
    wt_check(nf_round == FE_DOWNWARD, t, "entry ran with rounding %#x, not its creator's", (unsigned)nf_round);
    wt_check(nf_ret == NULL, t, "entry's return address %p, not 0", nf_ret);
    wt_check(nf_misaligned == 0, t, "stack not 16-byte aligned in the coroutine");
    /* The probe, the entry, and nothing above: the unwinder stops at the 0. */
    wt_check(nf_unwind_end && nf_frames >= 2 && nf_frames <= 3, t, "unwinding from the coroutine: %d frames, %s",
        nf_frames, nf_unwind_end ? "ended" : "did not end");
}

/* ---- aarch64 branch protection ---- */

/* Runs fn in a child process; returns its wait status, *reached what it
 * stored before the step that should fault. */
static __attribute__((unused)) int in_child(void (*fn)(volatile int *), int *reached)
{
    volatile int *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED)
        return -1;
    *shared = 0;
    pid_t pid = fork();
    if (pid == 0) {
        /* An expected fault leaves no core and, under qemu-user, no
         * "uncaught target signal" line in the test's output. */
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);
        fn(shared);
        _exit(43);
    }
    int status = -1;
    if (pid > 0)
        waitpid(pid, &status, 0);
    *reached = *shared;
    munmap((void *)shared, 4096);
    return status;
}

static __attribute__((unused)) void bp_entry(void)
{
    for (;;)
        weft__coro_switch(&co_sp, main_sp);
}

#if defined(__aarch64__) && defined(__ARM_FEATURE_PAC_DEFAULT) && __ARM_FEATURE_PAC_DEFAULT
static void hijacked(void) { _exit(42); }

static void pac_child(volatile int *reached)
{
    co_sp = weft__coro_frame(stack_top, bp_entry);
    weft__coro_switch(&main_sp, co_sp); /* into the frame signed in C */
    weft__coro_switch(&main_sp, co_sp); /* into a frame the switch saved */
    *reached = 1;
    ((uint64_t *)co_sp)[WEFT__CORO_FRAME_SLOTS - 1] = (uint64_t)(uintptr_t)hijacked; /* an attacker's unsigned address */
    weft__coro_switch(&main_sp, co_sp);
}
#endif

void wt_test_pac(void)
{
#if defined(__aarch64__) && defined(__ARM_FEATURE_PAC_DEFAULT) && __ARM_FEATURE_PAC_DEFAULT
    const char *t = "pac_ret";
    int reached = 0, st = in_child(pac_child, &reached);
    wt_check(reached == 1, t, "the signed frames did not switch (status %#x)", st);
    wt_check(WIFSIGNALED(st), t, "a forged return address in a saved frame was followed (%s %d)",
        WIFEXITED(st) ? "exit" : "status", WIFEXITED(st) ? WEXITSTATUS(st) : st);
#elif defined(__aarch64__)
    wt_skipped_now = "built without pac-ret (-mbranch-protection)";
#else
    wt_skipped_now = "x86-64 has no pointer authentication";
#endif
}

#if defined(__aarch64__) && defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
#define WT_PROT_BTI 0x10 /* <asm/mman.h> on arm64 */

static void bti_child(volatile int *reached)
{
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t page = (uintptr_t)weft__coro_switch & ~(uintptr_t)(pg - 1);
    /* qemu-user goes on running what it translated of a page before the
     * page was guarded (the parent ran the switch): a word of it rewritten
     * with itself makes it translate the page anew. */
    if (mprotect((void *)page, (size_t)pg, PROT_READ | PROT_WRITE | PROT_EXEC) == 0) {
        volatile uint32_t *insn = (volatile uint32_t *)(uintptr_t)weft__coro_switch;
        *insn = *insn;
        __builtin___clear_cache((char *)page, (char *)page + pg);
    }
    if (mprotect((void *)page, (size_t)pg, PROT_READ | PROT_EXEC | WT_PROT_BTI) != 0)
        _exit(77);
    *reached = 1;
    void (*volatile sw)(void **, void *) = weft__coro_switch;
    co_sp = weft__coro_frame(stack_top, bp_entry);
    sw(&main_sp, co_sp); /* an indirect call into a guarded page */
    _exit(0);
}
#endif

void wt_test_bti(void)
{
#if defined(__aarch64__) && defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
    int reached = 0, st = in_child(bti_child, &reached);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
        wt_skipped_now = "mprotect(PROT_BTI) refused: this CPU (or emulator) has no BTI";
        return;
    }
    wt_check(reached == 1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "bti", "an indirect call into the switch on a guarded page: %s %d",
        WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
#elif defined(__aarch64__)
    wt_skipped_now = "built without BTI (-mbranch-protection)";
#else
    wt_skipped_now = "x86-64: the switch takes no part in CET (coro_switch_x86_64.S)";
#endif
}
