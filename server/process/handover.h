/*
 * Binary upgrade without a gap (nginx's USR2, done for the operator): on
 * SIGUSR2 the serving process starts the weft binary now on disk with the
 * same arguments and hands it every listening socket (as socket activation
 * would: LISTEN_FDS). The new process serves on the same sockets at once,
 * then says so on a private socket pair; the old one tells systemd the new
 * MAINPID, falls silent towards systemd, and drains as on SIGTERM. A new
 * process that fails to start or to become ready in time changes nothing:
 * the old one keeps serving and says why. `weft upgrade` sends the signal
 * and waits for that verdict (PIDFILE.upgrade).
 */
#ifndef WEFT_HANDOVER_H
#define WEFT_HANDOVER_H

#include <stddef.h>

/** At the top of main(): remembers the binary's path and the arguments the
 * next process is started with, and, in a process started by a hand-over,
 * claims the passed sockets (LISTEN_PID) and holds its systemd
 * notifications until it is the main process. */
void weft_handover_init(int argc, char **argv);
/** Started by a hand-over, and not yet the main process. */
int weft_handover_is_child(void);
/** The new process, ready to serve: tells the old one and waits (bounded)
 * until it is the main process. 0 then; -1 if the old one is gone or said
 * no (this process should stop). */
int weft_handover_child_ready(void);

/** The old process: the listening sockets to pass (not owned). */
void weft_handover_set_listeners(const int *fds, size_t n);
/** The old process, on SIGUSR2: starts the new one. Returns the socket to
 * poll for its answer, or -1 (logged, outcome written) if it cannot. */
int weft_handover_start(const char *pid_file);
/** The old process, the socket readable or `timed_out`: 1 if the new
 * process took over (MAINPID sent, notifications now silent), 0 if it
 * failed (it is reaped and the outcome written), -1 if still waiting. */
int weft_handover_step(const char *pid_file, int timed_out);
/** Milliseconds left before a started hand-over is given up, or -1. */
int weft_handover_timeout_ms(void);
/** Writes PIDFILE.upgrade for a fresh server: attempts 0, so `weft upgrade`
 * knows this process takes SIGUSR2. */
void weft_handover_outcome_init(const char *pid_file);

/** PIDFILE.upgrade, the outcome file. */
void weft_handover_outcome_path(const char *pid_file, char *out, size_t size);

/** `weft upgrade`: signals the server of pid_file and waits for its verdict.
 * Exit status: 0 handed over, 1 refused or no verdict, 3 nothing to hand over
 * from: no pid in pid_file, or a server that predates hand-overs (restart
 * it instead). */
int weft_handover_request(const char *pid_file);

#endif
