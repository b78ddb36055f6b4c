/*
 * What the unit tests share: a private temporary directory per test (tests
 * run in parallel processes) and assertions on a weft_errors list. The list
 * and the joined text of its messages live in statics that the teardown
 * frees, so a failed assertion (which longjmps out of the test) leaks nothing.
 */
#ifndef WEFT_TEST_UNIT_H
#define WEFT_TEST_UNIT_H

#include "base/errors.h"

extern char wt_tmpdir[256];
extern weft_errors wt_errs;

/** Makes wt_tmpdir, /tmp/weft-unit-<name>-XXXXXX. */
void wt_unit_setup(const char *name);
/** Clears wt_errs and removes wt_tmpdir with everything in it. */
void wt_unit_teardown(void);

/** All messages joined, one per line, for assertion output (valid until the next call). */
const char *wt_errs_text(const weft_errors *e);
/** The first message containing every needle (NULL-terminated list), or NULL. */
const char *wt_errs_find(const weft_errors *e, const char *const *needles);
/** Asserts that one message contains every needle (NULL-terminated list). */
void wt_expect_msg_v(const weft_errors *e, const char *const *needles);
#define wt_expect_msg(e, ...) wt_expect_msg_v((e), (const char *const[]){__VA_ARGS__, NULL})
/** Asserts that no message contains `needle`. */
void wt_expect_no_msg(const weft_errors *e, const char *needle);

/** Copies a file byte for byte. */
void wt_copy_file(const char *from, const char *to);

#endif
