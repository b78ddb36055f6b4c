/*
 * `weft dev` and plugin projects for the plugin author's loop tests
 * (integration/devloop.c, integration/devui.c). Every build uses this source
 * tree's SDK header: pkg-config is pointed at an empty directory, so an
 * installed weft-dev (possibly older) never decides what is being tested.
 */
#ifndef WEFT_TEST_DEVSERVER_H
#define WEFT_TEST_DEVSERVER_H

#include <stddef.h>

#include "harness.h"

/** A private directory, /tmp/weft-devloop-XXXXXX. */
void wt_dev_tmpdir(char *dir, size_t size);
/**
 * The environment of a child: ours, minus anything that would make the test
 * depend on the machine (plugin path, PORT, PostgreSQL, pkg-config, CFLAGS),
 * plus `set` ("NAME=value" adds or replaces). Free the array.
 */
char **wt_dev_env(const char *const *set);
/** "PKG_CONFIG_LIBDIR=<tmp>/no-pkgconfig", an empty directory (static). */
const char *wt_no_pkgconfig_env(const char *tmp);
/** The port of the first "[admin ]listening on http://HOST:PORT/" line in `log`, 0 if none yet. */
int wt_logged_port(const char *log, int admin);
/** `weft dev DIR` as a child, logging into tmp, with no PostgreSQL; waits until it serves. */
void wt_dev_start(wt_server *s, const char *tmp, const char *dir, const char *const *extra_set);
/** `weft new-plugin NAME DIR`, which must succeed. */
void wt_scaffold(const char *name, const char *dir);
/** A scaffolded project in tmp with a weft.dev.conf on ephemeral ports. */
void wt_dev_project(const char *name, const char *tmp);
/** GET that must not fail in transport. */
void wt_get(const wt_server *s, const char *path, wt_resp *r);
/** GET on the admin listener that must answer 200; returns the body (malloc'd). */
char *wt_admin_get(const wt_server *s, const char *path);
/** reloads.ok from the admin /status JSON. */
long wt_reloads_ok(const char *status);
/** Stops a server if it runs; expects (without failing at once) exit status 0. */
void wt_stop_expect_0(wt_server *s, const char *what);

#endif
