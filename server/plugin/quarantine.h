/*
 * Crash records and quarantine. When plugin code kills the process, the
 * fatal-signal report writes a small record naming the plugin build (name +
 * SHA-256 of the .so) into weft's state directory. At the next start (and at
 * every later generation build) a record whose build is still the one on
 * disk quarantines that plugin: its routes answer 503 and the rest serves,
 * so a crash loop under systemd's Restart= is one crash long. Removing the
 * record (`weft quarantine clear`) or installing another build lifts it.
 */
#ifndef WEFT_QUARANTINE_H
#define WEFT_QUARANTINE_H

#include <stddef.h>
#include <time.h>

#include "config/config.h"

/** What a crash record holds (every field NUL-terminated, possibly empty). */
typedef struct weft_quarantine {
    char plugin[128];
    char version[64];
    char sha256[65];
    char signal[16];
    char route[256];
    char dispatch[16];
    char request[512]; /* "GET /x?y" */
    time_t since;      /* when it crashed */
} weft_quarantine;

/**
 * Chooses the state directory for `cfg`: its state_dir, else
 * $STATE_DIRECTORY (systemd's StateDirectory=, first entry), else the pid
 * file's directory; "" when none (no records are written or read).
 * Returns the choice, which stays valid until the next call.
 */
const char *weft_quarantine_configure(const weft_config *cfg);

/** Same choice, into `out`, without changing what the crash report uses. */
void weft_quarantine_dir_for(const weft_config *cfg, char *out, size_t size);

/**
 * Writes the crash record for `q` into the configured state directory.
 * Async-signal-safe (open, write, rename only): called from the fatal-signal
 * handler. Writes the record's path (or "") into `path`. Returns 0 or -1.
 */
int weft_crash_record_write(const weft_quarantine *q, char *path, size_t size);

/**
 * 1 if plugin `name` built as `sha256` is quarantined (its record is
 * copied into `out`), else 0. A record for another build of the plugin is
 * obsolete: it is removed and that is logged.
 */
int weft_quarantine_check(const char *name, const char *sha256, weft_quarantine *out);

/**
 * Removes the crash records in `dir` of plugin `name` (NULL: all); calls
 * `said` with each removed record. Returns how many, or -1 on error.
 */
int weft_quarantine_clear(const char *dir, const char *name, void (*said)(const weft_quarantine *q));

/** "plugin crashy 3.1.4 crashed with SIGSEGV in route /x (pool) on GET /x" */
void weft_quarantine_describe(const weft_quarantine *q, char *out, size_t size);

#endif
