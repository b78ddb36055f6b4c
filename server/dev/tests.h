/*
 * Continuous testing in `weft dev`: after each good build of a project that
 * has tests (a tests/ directory and a Makefile, as `weft new-plugin` writes),
 * `make test` runs in the background on a thread of its own, bounded in
 * time, against the weft running dev mode; the serving server is never
 * touched and a failing test never holds back a reload. The outcome goes to
 * the terminal (one line, plus the failures) and to the Dev UI.
 */
#ifndef WEFT_DEV_TESTS_H
#define WEFT_DEV_TESTS_H

#include "dev/project.h"

/** Starts the test thread. */
void weft_dev_tests_start(const weft_dev_dirs *d);
/**
 * Asks for a run of project i's tests if it has any (again, if one is under
 * way: it runs once more after); while testing is paused, it waits.
 */
void weft_dev_tests_request(int i);
/** The same for every project (the terminal's r key). */
void weft_dev_tests_request_all(void);
/** Pauses or resumes testing (p); returns 1 if now paused. */
int weft_dev_tests_toggle_pause(void);
/** Switches between the failures and the whole output of each run on the terminal (o); returns 1 if now whole. */
int weft_dev_tests_toggle_output(void);
/** Stops the thread, killing a run under way. */
void weft_dev_tests_stop(void);
/** True if the project has tests to run. */
int weft_dev_has_tests(const weft_dev_project *p);

/**
 * A run's output read: Criterion's closing lines ("Synthesis: Tested: ...",
 * one per test binary, added up) into `summary` ("2 passed, 0 failed of 2", or "did not run (see the
 * output)" without one), and its lines about failures into *failures
 * (malloc'd, NULL without memory). Exposed for tests/unit/dev/tests.c.
 */
void weft_dev_tests_summarize(const char *out, char *summary, size_t size, char **failures);

#endif
