/*
 * Drop-in files never take a start down: a .conf in routes.d, a NAME.routes
 * or the NAME.so it routes to that would not load is left out, with its
 * errors as the reason (cfg->refused), and everything else serves. Only the
 * main config's own errors fail a start or `weft -t`. A reload leaves out
 * only the files the serving generation already left out: a newly broken
 * drop-in refuses the reload, so the routes it had keep serving.
 */
#ifndef WEFT_DROPINS_H
#define WEFT_DROPINS_H

#include "base/errors.h"
#include "config/config.h"
#include "reload/generation.h"

/** Checks a loaded config before it is built (a reload's restart-only settings); non-zero refuses. */
typedef int weft_config_vet(const weft_config *cfg, weft_errors *errs, void *ctx);

/**
 * Loads `path` (or `text`, when not NULL) and builds its generation,
 * leaving out the drop-in files that fail, each retried without them.
 * `serving` NULL: any drop-in may be left out (a start, -t); else only those
 * serving->refused names. On failure returns NULL with the reasons in `errs`.
 */
weft_generation *weft_dropins_build(const char *path, const char *text, const weft_config *serving,
                                    unsigned long id, int check_only, weft_config_vet *vet, void *vet_ctx,
                                    weft_errors *errs);

/**
 * Which drop-in files caused errs->msgs[from..]: 0 and *out NULL when any of
 * them is the main config's (or nobody's); else the files with their reasons.
 */
size_t weft_dropins_blame(const weft_config *cfg, const weft_errors *errs, size_t from, weft_refusal **out);

#endif
