#include "ops/crash.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/log.h"
#include "base/sigsafe.h"
#include "config/config.h"
#include "dispatch/coro.h"
#include "dispatch/dispatch.h"
#include "plugin/module.h"
#include "plugin/quarantine.h"
#include "reload/generation.h"

#define MAX_FRAMES 64

static volatile sig_atomic_t reporting;
static char crash_log[1400]; /* set once a record is written */
/* Set by weft_crash_stuck_loop before it signals the stuck thread. */
static _Atomic unsigned long long stuck_loop_ms;
static atomic_int stuck_loop = -1;
static const void *host_base; /* where weft's own image (h2o linked in) is mapped */

static void copy(char *dst, size_t size, const char *src)
{
    char *end = weft_ss_append_n(dst, dst + size - 1, src, size - 1);
    *end = '\0';
}

/* ---- whose code it was ---- */

static const void *image_of(const void *addr)
{
    Dl_info i;
    return addr != NULL && dladdr(addr, &i) != 0 ? i.dli_fbase : NULL;
}

weft_blame weft_crash_blame(const void *const *addrs, int n, int complete, const void *plugin_base, int anywhere)
{
    if (host_base == NULL)
        host_base = image_of((const void *)weft_crash_blame);
    int host_seen = 0;
    for (int i = 0; i < n; i++) {
        const void *image = image_of(addrs[i]);
        if (image != NULL && image == plugin_base)
            return WEFT_BLAME_PLUGIN;
        if (image != NULL && image == host_base) {
            if (!anywhere)
                return WEFT_BLAME_HOST;
            host_seen = 1;
        }
    }
    return anywhere && host_seen && complete ? WEFT_BLAME_HOST : WEFT_BLAME_UNKNOWN;
}

/* The interrupted instruction, and the return address a call through a bad
 * pointer (a PC in no image, where no unwinder can start) left behind. */
static const void *fault_pc(const void *uctx)
{
    const ucontext_t *uc = uctx;
#if defined(__x86_64__)
    return uc != NULL ? (const void *)uc->uc_mcontext.gregs[REG_RIP] : NULL;
#elif defined(__aarch64__)
    return uc != NULL ? (const void *)uc->uc_mcontext.pc : NULL;
#else
    (void)uc;
    return NULL;
#endif
}

static const void *fault_return_address(const void *uctx)
{
    const ucontext_t *uc = uctx;
    if (uc == NULL)
        return NULL;
#if defined(__x86_64__)
    void *ra = NULL;
    /* Read by the kernel: a stack pointer as broken as the jump is an
     * EFAULT here, not a second fault inside the report. */
    struct iovec local = {&ra, sizeof(ra)}, remote = {(void *)uc->uc_mcontext.gregs[REG_RSP], sizeof(ra)};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof(ra) ? (const char *)ra - 1 : NULL;
#elif defined(__aarch64__)
    return (const char *)uc->uc_mcontext.regs[30] - 1;
#else
    return NULL;
#endif
}

/*
 * A genuine fault or an abort is the code's that ran it: the innermost frame
 * in the plugin's image or in weft's (C libraries and other objects are
 * skipped: a memcpy or an abort() is its caller's). A stuck loop is the
 * plugin's if any of its frames is on the stack (it called what blocked),
 * the host's only if the whole stack was seen without one. A coroutine
 * stack overflow is the plugin's: the coroutine runs its handler and what
 * that calls. Unknown (no frame of either, a stack that cannot be walked)
 * stays the plugin's, as the running request's: all weft knew before.
 */
enum { FAULT, STUCK, OVERFLOW };
enum { UNDECIDED = -1 };

/* From the interrupted instruction alone (after a jump to no image, with
 * the return address it left): no stack is walked. */
static int blame_at_pc(const void *uctx, const void *plugin_base, int anywhere)
{
    const void *pc = fault_pc(uctx), *addrs[2] = {pc, NULL};
    if (pc == NULL)
        return WEFT_BLAME_UNKNOWN;
    int n = 1;
    if (image_of(pc) == NULL)
        addrs[n++] = fault_return_address(uctx);
    weft_blame b = weft_crash_blame(addrs, n, 0, plugin_base, anywhere);
    return b == WEFT_BLAME_PLUGIN || (b == WEFT_BLAME_HOST && !anywhere) ? (int)b : UNDECIDED;
}

/* From the callers too. backtrace() from here gives this handler's frames,
 * the kernel's signal frame, then the interrupted code from the PC on (then
 * return addresses). */
static weft_blame blame_walk(const void *uctx, const void *plugin_base, int anywhere)
{
    const void *pc = fault_pc(uctx), *addrs[MAX_FRAMES];
    void *frames[MAX_FRAMES];
    int got = backtrace(frames, MAX_FRAMES), i = 0, n = 0;
    while (i < got && frames[i] != pc)
        i++;
    if (i == got)
        return WEFT_BLAME_UNKNOWN;
    addrs[n++] = pc;
    for (i++; i < got; i++)
        addrs[n++] = (const char *)frames[i] - 1; /* inside the call, not past it */
    return weft_crash_blame(addrs, n, got < MAX_FRAMES, plugin_base, anywhere);
}

/* ---- the report ---- */

static void fill_record(weft_quarantine *q, const weft_req *r, const weft_module *m, const char *signal)
{
    const weft_route *rt = r->route;
    *q = (weft_quarantine){.since = time(NULL)};
    copy(q->plugin, sizeof(q->plugin), m->name);
    copy(q->version, sizeof(q->version), m->desc.version != NULL ? m->desc.version : "?");
    copy(q->sha256, sizeof(q->sha256), m->sha256);
    copy(q->signal, sizeof(q->signal), signal);
    copy(q->route, sizeof(q->route), rt->cfg->path);
    copy(q->dispatch, sizeof(q->dispatch), weft_dispatch_name(rt->cfg->dispatch));
    char *rq = weft_ss_append_n(q->request, q->request + sizeof(q->request) - 1, r->method, 32);
    rq = weft_ss_append(rq, q->request + sizeof(q->request) - 1, " ");
    rq = weft_ss_append_n(rq, q->request + sizeof(q->request) - 1, r->path, 400);
    if (r->query != NULL) {
        rq = weft_ss_append(rq, q->request + sizeof(q->request) - 1, "?");
        rq = weft_ss_append_n(rq, q->request + sizeof(q->request) - 1, r->query, 200);
    }
    *rq = '\0';
}

/* " in route R (plugin ...) handling REQ": what was running. */
static char *describe(char *p, char *end, const weft_quarantine *q)
{
    p = weft_ss_append(p, end, " in route ");
    p = weft_ss_append(p, end, q->route);
    p = weft_ss_append(p, end, " (plugin ");
    p = weft_ss_append(p, end, q->plugin);
    p = weft_ss_append(p, end, " ");
    p = weft_ss_append(p, end, q->version);
    p = weft_ss_append(p, end, ", sha256 ");
    p = weft_ss_append_n(p, end, q->sha256, 12);
    p = weft_ss_append(p, end, ", dispatch=");
    p = weft_ss_append(p, end, q->dispatch);
    p = weft_ss_append(p, end, ") handling ");
    return weft_ss_append(p, end, q->request);
}

/* Whether the crash is held against the plugin (its record written) or
 * not, said on the line. */
static char *verdict(char *p, char *end, const weft_quarantine *q, const void *uctx, const void *plugin_base, int mode)
{
    char record[1400];
    int recorded = -1, b = mode == OVERFLOW ? WEFT_BLAME_PLUGIN : blame_at_pc(uctx, plugin_base, mode == STUCK);
    if (b == UNDECIDED) {
        /* Walking a stack the crash may have corrupted can fault: the record
         * (the running plugin's, all weft knew before) is written first. */
        recorded = weft_crash_record_write(q, record, sizeof(record)) == 0;
        b = blame_walk(uctx, plugin_base, mode == STUCK);
    }
    if (b == WEFT_BLAME_HOST) {
        if (recorded == 1)
            unlink(record);
        return weft_ss_append(p, end, "; it came from weft's own code (weft or its h2o), not the plugin's: no crash "
                                      "record, the plugin is not quarantined (a weft bug: please report it with the "
                                      "backtrace)");
    }
    if (recorded < 0)
        recorded = weft_crash_record_write(q, record, sizeof(record)) == 0;
    if (!recorded)
        return weft_ss_append(p, end, "; no crash record (no state directory, or it is not writable)");
    size_t rl = strlen(record);
    if (rl > 4 && rl < sizeof(crash_log)) {
        memcpy(crash_log, record, rl - 4);
        memcpy(crash_log + rl - 4, ".log", 5);
    }
    p = weft_ss_append(p, end, "; crash record ");
    p = weft_ss_append(p, end, record);
    p = weft_ss_append(p, end, ": the plugin is quarantined at the next start (weft quarantine clear ");
    p = weft_ss_append(p, end, q->plugin);
    return weft_ss_append(p, end, " lifts it)");
}

/* "FILE(SYMBOL+0xOFF) [0xADDR]", what backtrace_symbols_fd writes, from
 * the same lookup it makes (dladdr: the loader's table, no allocation). */
static size_t frame_text(char *buf, size_t size, int i, void *addr)
{
    char *p = buf, *end = buf + size;
    p = weft_ss_append_u64(weft_ss_append(p, end, "backtrace #"), end, (uint64_t)i);
    p = weft_ss_append(p, end, ": ");
    Dl_info info;
    if (dladdr(addr, &info) != 0 && info.dli_fname != NULL && info.dli_fname[0] != '\0') {
        p = weft_ss_append(weft_ss_append(p, end, info.dli_fname), end, "(");
        uintptr_t base = (uintptr_t)(info.dli_sname != NULL ? info.dli_saddr : info.dli_fbase);
        p = weft_ss_append(p, end, info.dli_sname);
        p = weft_ss_append(p, end, (uintptr_t)addr >= base ? "+0x" : "-0x");
        p = weft_ss_append_hex(p, end, (uintptr_t)addr >= base ? (uintptr_t)addr - base : base - (uintptr_t)addr);
        p = weft_ss_append(p, end, ") ");
    }
    p = weft_ss_append_hex(weft_ss_append(p, end, "[0x"), end, (uintptr_t)addr);
    return (size_t)(weft_ss_append(p, end, "]") - buf);
}

/* One frame a line: in text mode as backtrace_symbols_fd writes them, each
 * after the journal prefix; under log.format = "json" a JSON line each. */
static void report_frames(void *const *frames, int n, const weft_jl_field *fields, size_t nf)
{
    for (int i = 0; i < n; i++) {
        if (weft_ss_json()) {
            char text[1024];
            weft_ss_report_line(text, frame_text(text, sizeof(text), i, frames[i]), fields, nf);
            continue;
        }
        const char *prio = weft_ss_report_prefix();
        ssize_t ignored = write(weft_ss_report_fd(), prio, strlen(prio));
        (void)ignored;
        backtrace_symbols_fd(frames + i, 1, weft_ss_report_fd());
    }
}

/* "weft: FATAL: SIGNAL" with what the coroutine or the watchdog said of it. */
static char *headline(char *p, char *end, int sig, const char *what, int watchdog)
{
    const char *signame = weft_ss_signal_name(sig);
    p = weft_ss_append(p, end, "weft: FATAL: ");
    if (what != NULL) {
        p = weft_ss_append(p, end, what);
        p = weft_ss_append(p, end, " (");
    }
    p = signame != NULL ? weft_ss_append(p, end, signame) : weft_ss_append_u64(weft_ss_append(p, end, "signal "), end, (uint64_t)sig);
    if (what != NULL)
        p = weft_ss_append(p, end, ")");
    if (watchdog) {
        p = weft_ss_append(p, end, " (weft's watchdog: event loop ");
        p = weft_ss_append_u64(p, end, (uint64_t)atomic_load(&stuck_loop));
        p = weft_ss_append(p, end, " had not turned for ");
        p = weft_ss_append_u64(p, end, (uint64_t)atomic_load(&stuck_loop_ms));
        p = weft_ss_append(p, end, " ms)");
    }
    return p;
}

/* Async-signal context (dispatch/coro.h): write, open, rename, unlink,
 * dladdr and backtrace (warmed up at install: its first call loads libgcc).
 * Everything read here is owned by the request and its generation, which
 * outlive the handler. */
static void on_fatal(int sig, const siginfo_t *info, const void *uctx, const char *what)
{
    if (reporting++)
        return; /* the report itself faulted: let the default action finish */
    int watchdog = sig == SIGABRT && atomic_load(&stuck_loop_ms) != 0 && info != NULL && info->si_code == SI_TKILL &&
                   info->si_pid == getpid();
    char line[4096], *end = line + sizeof(line) - 1;
    char *p = headline(line, end, sig, what, watchdog);
    const weft_req *r = weft_dispatch_running;
    const weft_module *m = r != NULL && r->route != NULL ? weft_route_module(r->route) : NULL;
    if (m != NULL) {
        const char *signame = weft_ss_signal_name(sig);
        weft_quarantine q;
        fill_record(&q, r, m, what != NULL ? what : signame != NULL ? signame : "a fatal signal");
        p = describe(p, end, &q);
        p = verdict(p, end, &q, uctx, m->base, what != NULL ? OVERFLOW : watchdog ? STUCK : FAULT);
    } else {
        p = weft_ss_append(p, end, " with no request running on this thread");
    }
    p = weft_ss_append(p, end, "; backtrace follows");
    /* The line and the log file are written before the backtrace is: it
     * walks a stack the fault may have corrupted (a coroutine's, often), and
     * a fault inside it ends the process here -- the line naming the plugin
     * must be out by then. (A verdict that had to walk it wrote the record
     * first.) Under journald every line carries its priority, or the reason
     * lands at info, out of `journalctl -p warning`; each line goes out in
     * one write, so another thread's line cannot split it. */
    weft_jl_field fields[2];
    size_t nf = 0;
    if (m != NULL) {
        fields[nf++] = (weft_jl_field){"route", r->route->cfg->path, strlen(r->route->cfg->path)};
        fields[nf++] = (weft_jl_field){"plugin", m->name, strlen(m->name)};
    }
    weft_ss_report_line(line, (size_t)(p - line), fields, nf);
    /* The same text next to the record ("crash-NAME.log"): what `weft dev`
     * shows on the plugin's routes after restarting. The file copy is text. */
    size_t rl = strlen(crash_log);
    int fd = rl > 4 ? open(crash_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    ssize_t ignored = 0;
    if (fd >= 0) {
        *p++ = '\n';
        ignored = write(fd, line, (size_t)(p - line));
    }
    void *frames[MAX_FRAMES];
    int n = backtrace(frames, MAX_FRAMES);
    report_frames(frames, n, fields, nf);
    if (fd >= 0) {
        backtrace_symbols_fd(frames, n, fd);
        close(fd);
    }
    crash_log[0] = '\0';
    (void)ignored;
}

void weft_crash_stuck_loop(pthread_t thread, int loop, unsigned long long stuck_ms)
{
    unsigned long long none = 0;
    if (!atomic_compare_exchange_strong(&stuck_loop_ms, &none, stuck_ms))
        return;
    atomic_store(&stuck_loop, loop);
    /* That thread's handler knows which request it is running. */
    pthread_kill(thread, SIGABRT);
}

void weft_crash_report_install(void)
{
    void *warm[2];
    (void)backtrace(warm, 2);
    host_base = image_of((const void *)weft_crash_blame);
    weft_ss_set_journal(weft_log_journal());
    weft_coro_signals_init();
    weft_coro_set_fault_hook(on_fatal);
}
