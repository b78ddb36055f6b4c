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
/** Asks for a run of project i's tests (again, if one is under way: it runs once more after). */
void weft_dev_tests_request(int i);
/** Stops the thread, killing a run under way. */
void weft_dev_tests_stop(void);
/** True if the project has tests to run. */
int weft_dev_has_tests(const weft_dev_project *p);

#endif
