#include "ops/notify.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>

#include "base/log.h"
#include "core/loop.h"
#include "base/timer.h"
#include "ops/crash.h"

/* Set while systemd must not hear from this process: a new process until
 * the old one has made it the main one, and the old one after that (its
 * STOPPING=1 would stop the service the new one runs). */
static atomic_int held;

void weft_notify_hold(int on) { atomic_store(&held, on); }

void weft_notify_mainpid(int pid) { sd_notifyf(0, "MAINPID=%d\nSTATUS=handed over to pid %d", pid, pid); }

void weft_notify_ready(const char *fmt, ...)
{
    if (atomic_load(&held))
        return;
    char status[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(status, sizeof(status), fmt, ap);
    va_end(ap);
    sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void weft_notify_reloading(const char *why)
{
    if (atomic_load(&held))
        return;
    sd_notifyf(0, "RELOADING=1\nSTATUS=reloading (%s)", why);
}

void weft_notify_stopping(void)
{
    if (!atomic_load(&held))
        sd_notify(0, "STOPPING=1\nSTATUS=draining in-flight requests");
}

int weft_notify_watchdog(void)
{
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
        return -1;
    /* A loop wakes at least once a second even when idle (see loop_main),
     * so a heartbeat older than half the watchdog period means it is stuck.
     * Pings go on until then, so systemd's kill comes at least 1 1/4
     * periods after the loop stopped; at 3/4 of a period weft aborts that
     * loop's thread itself, whose crash line and record name the route and
     * plugin running there (systemd's SIGABRT, sent to the process, reaches
     * a thread that knows nothing). This check runs every 1/4 period, so
     * the abort comes by one period, before systemd's. */
    uint64_t now = weft_now_ns(), limit = usec * 1000u / 2, kill_after = usec * 1000u / 4 * 3;
    for (int i = 0; i < weft_loop_count(); i++) {
        weft_loop *L = weft_loop_at(i);
        uint64_t beat = atomic_load_explicit(&L->heartbeat_ns, memory_order_relaxed);
        if (beat != 0 && now > beat && now - beat > limit) {
            unsigned long long ms = (unsigned long long)((now - beat) / 1000000u);
            /* Below 3 s an idle loop's 1 s wake-up comes too close to 3/4 of the period. */
            if (now - beat > kill_after && usec >= 3000000u) {
                weft_log_error("event loop %d has not turned for %llu ms (WatchdogSec=%llu s): aborting it before "
                               "systemd's watchdog kills the process, so that the crash is attributed to the "
                               "route running there and its plugin build is quarantined at the restart",
                               i, ms, (unsigned long long)(usec / 1000000u));
                weft_crash_stuck_loop(L->thread, i, ms);
            } else {
                weft_log_error("event loop %d has not turned for %llu ms: withholding the watchdog ping", i, ms);
            }
            return (int)(usec / 4000u);
        }
    }
    if (!atomic_load(&held))
        sd_notify(0, "WATCHDOG=1");
    return (int)(usec / 4000u);
}
