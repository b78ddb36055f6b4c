/*
 * The crash line: when plugin code (or anything else) kills the process
 * with a fatal signal, one line names the signal, the route, the plugin
 * build, the dispatch policy and the request being handled, followed by a
 * raw backtrace -- and a crash record is written so the next start
 * quarantines that plugin build (plugin/quarantine.h).
 */
#ifndef WEFT_CRASH_H
#define WEFT_CRASH_H

/**
 * Installs the report on the fatal-signal handler shared with the
 * coroutine overflow report (dispatch/coro.h). Once, early in main().
 */
void weft_crash_report_install(void);

#endif
