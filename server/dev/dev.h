/*
 * `weft dev [DIR]`: the plugin author's loop. Every plugin project under DIR
 * (a directory NAME holding NAME.c and route.conf, as `weft new-plugin`
 * writes) is compiled with the machine's compiler and the SDK's flags, and
 * the server runs on a generated dev config whose plugin directory receives
 * each good build by rename — so the reload machinery swaps it in. Sources
 * are watched; a save rebuilds. A failed build is printed in the terminal
 * and served as an HTML 500 page (compiler output with file:line) by every
 * route of that plugin until the next good build; the previous good version
 * stays loaded. A Dev UI lives on the admin listener at /dev.
 */
#ifndef WEFT_DEV_H
#define WEFT_DEV_H

#include "base/h2o_glue.h"

/**
 * Finds the projects under `dir`, builds them, writes the dev config and
 * switches dev mode on. Returns 0 and the config's path in conf_out.
 */
int weft_dev_prepare(const char *dir, char *conf_out, size_t size);
/**
 * Shows `text` (the crash line and backtrace; taken over) on project
 * `name`'s routes instead of serving them, until its next good build.
 */
void weft_dev_mark_crashed(const char *name, char *text);
/**
 * Runs serve(ctx) in a child process and restarts it whenever it dies by a
 * fatal signal (a plugin crashed it); SIGTERM/SIGINT are passed on. Returns
 * the child's exit status once it exits by itself. Call single-threaded.
 */
int weft_dev_supervise(int (*serve)(void *ctx), void *ctx);
/** Starts the source watcher thread (after the server's generation exists). */
void weft_dev_start_watching(void);

/** Dev mode only: answers `req` with the build-error page if its path belongs to a plugin whose last build failed. */
int weft_dev_intercept(h2o_req_t *req);
/** Dev mode only: the admin listener's /dev pages. Returns 1 if handled. */
int weft_dev_admin(h2o_req_t *req);
/** True in dev mode. */
int weft_dev_active(void);

#endif
