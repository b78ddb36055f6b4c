/*
 * A library weft links at run time rather than at build time (libpq,
 * libcurl: see db/pq.h and base/curl.h for why), opened and its symbols
 * resolved with the one message an operator needs when it is missing: the
 * SONAME and the Debian package that ships it.
 */
#ifndef WEFT_BASE_DYNLIB_H
#define WEFT_BASE_DYNLIB_H

#include <stddef.h>

/**
 * dlopen(soname, RTLD_NOW | RTLD_LOCAL): LOCAL so that the library's
 * symbols serve weft's table only and never bind a plugin by accident.
 * NULL with "cannot load SONAME (Debian package PACKAGE): dlerror" in why.
 */
void *weft_dynlib_open(const char *soname, const char *package, char *why, size_t why_size);

/**
 * `name` in `h`, or NULL with "SONAME has no NAME<hint>" in why (hint may be
 * "" or, e.g., " (libpq 14 or newer is needed)").
 */
void *weft_dynlib_sym(void *h, const char *soname, const char *name, const char *hint, char *why, size_t why_size);

/** dlclose: after a failed resolve, so a half-filled table keeps nothing open. */
void weft_dynlib_close(void *h);

#endif
