/*
 * The crash line: when plugin code (or anything else) kills the process
 * with a fatal signal, one line names the signal, the route, the plugin
 * build, the dispatch policy and the request being handled, followed by a
 * raw backtrace -- and a crash record is written so the next start
 * quarantines that plugin build (plugin/quarantine.h).
 */
#ifndef WEFT_CRASH_H
#define WEFT_CRASH_H

#include <pthread.h>

/**
 * Installs the report on the fatal-signal handler shared with the
 * coroutine overflow report (dispatch/coro.h). Once, early in main().
 */
void weft_crash_report_install(void);

/**
 * A loop thread has not turned for `stuck_ms`: makes it abort (SIGABRT to
 * that thread alone), so that the crash line and record name the route and
 * plugin running there -- what systemd's watchdog, signalling the process,
 * cannot do. The line says why. Once per process; later calls do nothing.
 */
void weft_crash_stuck_loop(pthread_t thread, int loop, unsigned long long stuck_ms);

#endif
