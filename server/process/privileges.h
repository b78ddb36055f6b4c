/* Dropping root after the listeners are bound (config `user`). */
#ifndef WEFT_PRIVILEGES_H
#define WEFT_PRIVILEGES_H

#include "config/config.h"

/**
 * When running as root and `user` is set, switches every thread to that
 * user and its groups (and hands it the private plugin-copy directory).
 * Returns 0, or -1 after logging why. Not root: a no-op with a note.
 */
int weft_privileges_drop(const weft_config *cfg);

#endif
