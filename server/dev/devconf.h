/* The config `weft dev` serves: fixed settings; the routes travel as fragments beside each build. */
#ifndef WEFT_DEV_DEVCONF_H
#define WEFT_DEV_DEVCONF_H

#include "dev/project.h"

/**
 * Writes d->conf (by rename, and only when its text changed, so the
 * server's config watcher reloads only for a real change) from the user's
 * d->root/weft.dev.conf or defaults, with plugin_dirs = d->plugins (where
 * every good build lies with its NAME.routes). Returns 0, or -1 (logged).
 */
int weft_dev_write_config(const weft_dev_dirs *d);

#endif
