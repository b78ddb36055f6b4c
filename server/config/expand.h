/*
 * The environment in the config: `${VAR}` and `${VAR:-default}` in every
 * string setting (main file, @include'd files and route fragments), as a
 * shell expands them: the default when VAR is unset or empty. `$${` is a
 * literal `${`. An unset VAR without a default is an error with FILE:LINE,
 * never a silent empty string.
 */
#ifndef WEFT_CONFIG_EXPAND_H
#define WEFT_CONFIG_EXPAND_H

#include <libconfig.h>

#include "base/errors.h"

/** Expands every string under `root` in place; returns the number of errors added (`file`: for settings without one). */
int weft_config_expand(config_setting_t *root, const char *file, weft_errors *errs);
/** One string: malloc'd result, or NULL with `why`. */
char *weft_config_expand_string(const char *in, char *why, size_t size);

#endif
