/*
 * The package manager's hold on plugin hot swaps (PIDFILE.hold). While a
 * package upgrade unpacks new plugin files, swapping them into the running
 * process builds a generation nobody asked for, with plugins made for the
 * binary that is about to replace it; the postinst's `weft upgrade` starts
 * that binary with them anyway. debian/weft.preinst creates the file,
 * debian/weft.postinst removes it once the new process serves (or the old
 * one kept serving). Control thread only.
 */
#ifndef WEFT_PROCESS_HOLD_H
#define WEFT_PROCESS_HOLD_H

/* A hold older than this is a leftover of an upgrade that never finished:
 * ignored, with a warning, so that a crashed dpkg cannot stop hot swaps for good. */
#define WEFT_HOLD_MAX_S 600

/**
 * 1 while PIDFILE.hold exists and is younger than WEFT_HOLD_MAX_S: plugin
 * and fragment changes wait. Logs the start and the end of a hold, and a
 * stale one, once each. 0 without a pid_file.
 */
int weft_hold_active(const char *pid_file);

#endif
