/*
 * `weft dev`'s keys, when stdin is a terminal (as Quarkus's dev mode has
 * them): r re-runs every project's tests, p pauses or resumes continuous
 * testing, o switches the terminal between the failures and the whole
 * output of each test run, h lists them. The terminal is put in
 * non-canonical mode without echo (Ctrl-C still stops) and restored at exit.
 */
#ifndef WEFT_DEV_KEYS_H
#define WEFT_DEV_KEYS_H

/** Starts reading keys if stdin is a terminal. */
void weft_dev_keys_start(void);
/** Stops, and gives the terminal its settings back. */
void weft_dev_keys_stop(void);

#endif
