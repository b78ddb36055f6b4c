/*
 * The outcome of the latest reload, for `weft reload` (and so for the
 * unit's ExecReload): the server writes it next to its pid file after every
 * reload attempt; the command signals, waits for the count to move, and
 * prints the server's own reasons on stderr with exit status 1 when the
 * reload was refused — so `systemctl reload` fails with the FILE:LINE
 * reason in the journal at priority err, even for what only the running
 * server can find (a plugin's init, a restart-only setting).
 */
#ifndef WEFT_OUTCOME_H
#define WEFT_OUTCOME_H

#include <stddef.h>

typedef struct weft_outcome {
    unsigned long attempts; /* reloads tried since the server started */
    int ok;                 /* the last one serves */
    char message[2048];     /* its reasons, one per line, or "generation N serving (...)" */
} weft_outcome;

/** PIDFILE.reload */
void weft_outcome_path(const char *pid_file, char *out, size_t size);
/** Writes the reload status (reload/reload.h) there (write, then rename; 0600). Control thread. */
void weft_outcome_write(const char *pid_file);
/** Reads it; -1 when there is none (no reload yet, or an older server). */
int weft_outcome_read(const char *pid_file, weft_outcome *out);

#endif
