/*
 * Building text inside a signal handler: no stdio, no malloc, no locale --
 * only copies into a caller's buffer, so reports written while the process
 * dies cannot deadlock or fault on a corrupted heap.
 */
#ifndef WEFT_SIGSAFE_H
#define WEFT_SIGSAFE_H

#include <stddef.h>
#include <stdint.h>

#include "base/logline.h"

/** Appends `s` (NULL: nothing) at p, never past end; returns the new end of text. */
char *weft_ss_append(char *p, char *end, const char *s);
/** Appends at most `n` bytes of `s`, with control characters written as '?'. */
char *weft_ss_append_n(char *p, char *end, const char *s, size_t n);
/** Appends `v` in decimal. */
char *weft_ss_append_u64(char *p, char *end, uint64_t v);
/** Appends `v` in lower-case hex, without 0x. */
char *weft_ss_append_hex(char *p, char *end, uint64_t v);
/** "SEGV" for SIGSEGV..., or NULL for signals it does not know. */
const char *weft_ss_signal_name(int sig);

/** Where a dying process writes its last report: standard error, unless a
 * log tap stands between (dev mode reads stderr through a pipe in a thread
 * that dies with the process -- a report written there is lost). */
int weft_ss_report_fd(void);
/** Sets that descriptor (-1: standard error again). */
void weft_ss_set_report_fd(int fd);

/** Standard error is the journal (set at install, read in the handler: no getenv there). */
void weft_ss_set_journal(int on);
/** "<2>" (critical) when the report goes to the journal, else "": journald's priority prefix. */
const char *weft_ss_report_prefix(void);

/** log.format = "json" (set by weft_log_set_json, read in the handler). */
void weft_ss_set_json(int on);
int weft_ss_json(void);
/**
 * One line of a dying process's report on weft_ss_report_fd(), after the
 * journal prefix: `text` and a newline, or under log.format = "json" a JSON
 * line at level error with `fields` (base/logline.h), whatever the bytes.
 */
void weft_ss_report_line(const char *text, size_t n, const weft_jl_field *fields, size_t n_fields);

#endif
