#include "ops/crash.h"

#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
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
    p = weft_ss_append(p, end, "; backtrace follows\n");
    /* The line and the log file are written before unwinding: backtrace()
     * walks a stack the fault may have corrupted (a coroutine's, often), and
     * a fault inside it ends the process here -- the line naming the plugin
     * must be out by then. */
    /* Under journald every line needs its priority, or the reason lands at
     * info, out of `journalctl -p warning`; the file copy has none. */
    const char *prio = weft_ss_report_prefix();
    ssize_t ignored = write(weft_ss_report_fd(), prio, strlen(prio));
    ignored = write(weft_ss_report_fd(), line, (size_t)(p - line));
    /* The same text next to the record ("crash-NAME.log"): what `weft dev`
     * shows on the plugin's routes after restarting. */
    size_t rl = strlen(crash_log);
    int fd = rl > 4 ? open(crash_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    if (fd >= 0)
        ignored = write(fd, line, (size_t)(p - line));
    void *frames[64];
    int n = backtrace(frames, 64);
    for (int i = 0; i < n; i++) { /* one frame per line, each with the prefix */
        ignored = write(weft_ss_report_fd(), prio, strlen(prio));
        backtrace_symbols_fd(frames + i, 1, weft_ss_report_fd());
    }
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
