/*
 * What differs between two configs, for reloads. Restart-only settings live
 * in sockets and threads created at start-up: a reload cannot change them.
 * One check, used by the server's reload and by `weft reload` before it
 * signals, so both say the same thing.
 */
#ifndef WEFT_CONFIG_DIFF_H
#define WEFT_CONFIG_DIFF_H

#include <stddef.h>

#include "config/config.h"

/**
 * Compares the restart-only settings of the serving config `old` with `cur`.
 * Returns 0 when a reload may apply `cur`; otherwise writes the refusal, as
 * the server logs it ("FILE: these settings only change with a restart:
 * ..."), into `msg`, and returns 1.
 */
int weft_config_restart_only(const weft_config *old, const weft_config *cur, char *msg, size_t size);

/**
 * Writes the per-route settings (timeout_ms, max_body, stream_body,
 * max_concurrent, the `auto` group) that differ between `old` and `cur` into
 * `out` as "timeout_ms 100 -> 200, auto.prefer measure -> pool"; returns how
 * many differ. A reload changes them without touching the plugin, so the
 * reload's summary must still name them.
 */
size_t weft_route_settings_diff(const weft_route_cfg *old, const weft_route_cfg *cur, char *out, size_t size);

/** True when two settings (e.g. two routes' options groups) hold the same values; NULLs are equal. */
int weft_setting_equal(const config_setting_t *a, const config_setting_t *b);

#endif
