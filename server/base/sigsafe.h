/*
 * Building text inside a signal handler: no stdio, no malloc, no locale --
 * only copies into a caller's buffer, so reports written while the process
 * dies cannot deadlock or fault on a corrupted heap.
 */
#ifndef WEFT_SIGSAFE_H
#define WEFT_SIGSAFE_H

#include <stddef.h>
#include <stdint.h>

/** Appends `s` (NULL: nothing) at p, never past end; returns the new end of text. */
char *weft_ss_append(char *p, char *end, const char *s);
/** Appends at most `n` bytes of `s`, with control characters written as '?'. */
char *weft_ss_append_n(char *p, char *end, const char *s, size_t n);
/** Appends `v` in decimal. */
char *weft_ss_append_u64(char *p, char *end, uint64_t v);
/** "SEGV" for SIGSEGV..., or NULL for signals it does not know. */
const char *weft_ss_signal_name(int sig);

#endif
