/*
 * systemd integration (Type=notify): READY, RELOADING, STOPPING, STATUS, and
 * a watchdog that is fed only while every event loop is turning, so a wedged
 * loop gets the service restarted. Without NOTIFY_SOCKET all of it is a no-op.
 */
#ifndef WEFT_NOTIFY_H
#define WEFT_NOTIFY_H

#include <weft/plugin.h>

void weft_notify_ready(const char *fmt, ...) WEFT_PRINTF(1, 2);
void weft_notify_reloading(const char *why);
void weft_notify_stopping(void);
/**
 * Feeds the watchdog if every loop made progress recently. Returns the
 * longest the caller may wait before calling again (ms), or -1 when no
 * watchdog is configured.
 */
int weft_notify_watchdog(void);
/** While on, nothing reaches systemd (the hand-over, process/handover.h). */
void weft_notify_hold(int on);
/** Tells systemd that pid is the service's main process now. */
void weft_notify_mainpid(int pid);

#endif
