/*
 * The crash line: when plugin code (or anything else) kills the process
 * with a fatal signal, one line names the signal, the route, the plugin
 * build, the dispatch policy and the request being handled, followed by a
 * raw backtrace -- and, when the plugin's code is to blame, a crash record
 * is written so the next start quarantines that plugin build
 * (plugin/quarantine.h). A fault in weft's own code (h2o linked in: an h2o
 * assertion, a crash in a host call) while a plugin's request runs is
 * named as weft's and recorded against no plugin.
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

typedef enum { WEFT_BLAME_UNKNOWN, WEFT_BLAME_PLUGIN, WEFT_BLAME_HOST } weft_blame;
/**
 * Whose code the instruction addresses `addrs` (innermost first: the
 * faulting one, then inside each caller) are. Default: the first address in
 * the plugin's image (mapped at `plugin_base`) or in weft's decides;
 * addresses elsewhere (the C library, other objects) are skipped.
 * `anywhere`: PLUGIN if any is the plugin's, else HOST if any is weft's and
 * `complete` (the list reaches the bottom of the stack). UNKNOWN if neither
 * holds. Async-signal context (dladdr only).
 */
weft_blame weft_crash_blame(const void *const *addrs, int n, int complete, const void *plugin_base, int anywhere);

#endif
