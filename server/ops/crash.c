#include "ops/crash.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/sigsafe.h"
#include "config/config.h"
#include "dispatch/coro.h"
#include "dispatch/dispatch.h"
#include "plugin/quarantine.h"
#include "reload/generation.h"

static volatile sig_atomic_t reporting;
static char crash_log[1400]; /* set once a record is written */
/* Set by weft_crash_stuck_loop before it signals the stuck thread. */
static _Atomic unsigned long long stuck_loop_ms;
static atomic_int stuck_loop = -1;

static void copy(char *dst, size_t size, const char *src)
{
    char *end = weft_ss_append_n(dst, dst + size - 1, src, size - 1);
    *end = '\0';
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

/* Async-signal context (dispatch/coro.h): write, open, rename, backtrace
 * (warmed up at install: its first call loads libgcc). Everything read here
 * is owned by the request and its generation, which outlive the handler. */
static void on_fatal(int sig, const siginfo_t *info, const char *what)
{
    if (reporting++)
        return; /* the report itself faulted: let the default action finish */
    const char *signame = weft_ss_signal_name(sig);
    char line[4096], *p = line, *end = line + sizeof(line) - 1;
    p = weft_ss_append(p, end, "weft: FATAL: ");
    if (what != NULL) {
        p = weft_ss_append(p, end, what);
        p = weft_ss_append(p, end, " (");
    }
    p = signame != NULL ? weft_ss_append(p, end, signame) : weft_ss_append_u64(weft_ss_append(p, end, "signal "), end, (uint64_t)sig);
    if (what != NULL)
        p = weft_ss_append(p, end, ")");
    unsigned long long stuck = atomic_load(&stuck_loop_ms);
    if (sig == SIGABRT && stuck != 0 && info != NULL && info->si_code == SI_TKILL && info->si_pid == getpid()) {
        p = weft_ss_append(p, end, " (weft's watchdog: event loop ");
        p = weft_ss_append_u64(p, end, (uint64_t)atomic_load(&stuck_loop));
        p = weft_ss_append(p, end, " had not turned for ");
        p = weft_ss_append_u64(p, end, (uint64_t)stuck);
        p = weft_ss_append(p, end, " ms)");
    }
    const weft_req *r = weft_dispatch_running;
    const weft_route *rt = r != NULL ? r->route : NULL;
    if (rt != NULL && weft_route_module(rt) != NULL) {
        weft_quarantine q = {.since = time(NULL)};
        copy(q.plugin, sizeof(q.plugin), weft_route_module(rt)->name);
        copy(q.version, sizeof(q.version), weft_route_module(rt)->desc.version != NULL ? weft_route_module(rt)->desc.version : "?");
        copy(q.sha256, sizeof(q.sha256), weft_route_module(rt)->sha256);
        copy(q.signal, sizeof(q.signal), what != NULL ? what : signame != NULL ? signame : "a fatal signal");
        copy(q.route, sizeof(q.route), rt->cfg->path);
        copy(q.dispatch, sizeof(q.dispatch), weft_dispatch_name(rt->cfg->dispatch));
        char *rq = weft_ss_append_n(q.request, q.request + sizeof(q.request) - 1, r->method, 32);
        rq = weft_ss_append(rq, q.request + sizeof(q.request) - 1, " ");
        rq = weft_ss_append_n(rq, q.request + sizeof(q.request) - 1, r->path, 400);
        if (r->query != NULL) {
            rq = weft_ss_append(rq, q.request + sizeof(q.request) - 1, "?");
            rq = weft_ss_append_n(rq, q.request + sizeof(q.request) - 1, r->query, 200);
        }
        *rq = '\0';
        char record[1400];
        int recorded = weft_crash_record_write(&q, record, sizeof(record)) == 0;
        size_t rl = strlen(record);
        if (recorded && rl > 4 && rl < sizeof(crash_log)) {
            memcpy(crash_log, record, rl - 4);
            memcpy(crash_log + rl - 4, ".log", 5);
        }
        p = weft_ss_append(p, end, " in route ");
        p = weft_ss_append(p, end, q.route);
        p = weft_ss_append(p, end, " (plugin ");
        p = weft_ss_append(p, end, q.plugin);
        p = weft_ss_append(p, end, " ");
        p = weft_ss_append(p, end, q.version);
        p = weft_ss_append(p, end, ", sha256 ");
        p = weft_ss_append_n(p, end, q.sha256, 12);
        p = weft_ss_append(p, end, ", dispatch=");
        p = weft_ss_append(p, end, q.dispatch);
        p = weft_ss_append(p, end, ") handling ");
        p = weft_ss_append(p, end, q.request);
        if (recorded) {
            p = weft_ss_append(p, end, "; crash record ");
            p = weft_ss_append(p, end, record);
            p = weft_ss_append(p, end, ": the plugin is quarantined at the next start (weft quarantine clear ");
            p = weft_ss_append(p, end, q.plugin);
            p = weft_ss_append(p, end, " lifts it)");
        } else {
            p = weft_ss_append(p, end, "; no crash record (no state directory, or it is not writable)");
        }
    } else {
        p = weft_ss_append(p, end, " with no request running on this thread");
    }
    p = weft_ss_append(p, end, "; backtrace follows");
    /* The line and the log file are written before unwinding: backtrace()
     * walks a stack the fault may have corrupted (a coroutine's, often), and
     * a fault inside it ends the process here -- the line naming the plugin
     * must be out by then. Under journald every line carries its priority,
     * or the reason lands at info, out of `journalctl -p warning`. */
    weft_jl_field fields[2];
    size_t nf = 0;
    if (rt != NULL && weft_route_module(rt) != NULL) {
        fields[nf++] = (weft_jl_field){"route", rt->cfg->path, strlen(rt->cfg->path)};
        fields[nf++] = (weft_jl_field){"plugin", weft_route_module(rt)->name, strlen(weft_route_module(rt)->name)};
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
    void *frames[64];
    int n = backtrace(frames, 64);
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
    weft_ss_set_journal(weft_log_journal());
    weft_coro_signals_init();
    weft_coro_set_fault_hook(on_fatal);
}
