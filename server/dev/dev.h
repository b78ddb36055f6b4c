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
 *
 * The parts: project.c (projects and builds), devconf.c (the generated
 * config), dev.c (the command and its builder thread), tests.c and keys.c
 * (continuous testing and its keys), database.c (the private PostgreSQL),
 * logtap.c (the log tail), pages.c and assets.c (HTTP).
 */
#ifndef WEFT_DEV_H
#define WEFT_DEV_H

#include "base/h2o_glue.h"
#include "reload/generation.h"

/**
 * `weft dev [DIR]` (argv[1] is "dev"). `serve` is the command's server: it
 * loads the config at the path it is given, shows the generation to
 * `loaded`, and serves it until SIGTERM or SIGINT, returning the exit code
 * -- dev mode sits below the process layer and is handed its server rather
 * than calling it. The dev server runs under a supervisor (supervise.c)
 * that restarts it when plugin code crashes it. Returns the exit code.
 */
int weft_dev_main(int argc, char **argv, int (*serve)(const char *config, void (*loaded)(const weft_generation *gen)));

/** Dev mode only: answers `req` with the build-error page if its path belongs to a plugin whose last build failed. */
int weft_dev_intercept(h2o_req_t *req);
/** Dev mode only: the admin listener's /dev pages. Returns 1 if handled. */
int weft_dev_admin(h2o_req_t *req);
/** The Dev UI page /dev for `g` (malloc'd, *len its length; NULL without memory). Exposed for tests/unit/dev/pages.c. */
char *weft_dev_page_html(const weft_generation *g, size_t *len);
/** True in dev mode. */
int weft_dev_active(void);

#endif
