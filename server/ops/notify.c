#include "ops/notify.h"

#include <stdarg.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>

#include "base/log.h"
#include "core/loop.h"
#include "base/timer.h"

void weft_notify_ready(const char *fmt, ...)
{
    char status[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(status, sizeof(status), fmt, ap);
    va_end(ap);
    sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void weft_notify_reloading(const char *why)
{
    sd_notifyf(0, "RELOADING=1\nSTATUS=reloading (%s)", why);
}

void weft_notify_stopping(void) { sd_notify(0, "STOPPING=1\nSTATUS=draining in-flight requests"); }

int weft_notify_watchdog(void)
{
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
        return -1;
    /* A loop wakes at least once a second even when idle (see loop_main),
     * so a heartbeat older than half the watchdog period means it is stuck. */
    uint64_t now = weft_now_ns(), limit = usec * 1000u / 2;
    for (int i = 0; i < weft_loop_count(); i++) {
        uint64_t beat = atomic_load_explicit(&weft_loop_at(i)->heartbeat_ns, memory_order_relaxed);
        if (now - beat > limit) {
            weft_log_error("event loop %d has not turned for %llu ms: withholding the watchdog ping", i,
                           (unsigned long long)((now - beat) / 1000000u));
            return (int)(usec / 4000u);
        }
    }
    sd_notify(0, "WATCHDOG=1");
    return (int)(usec / 4000u);
}
