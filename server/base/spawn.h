#ifndef WEFT_BASE_SPAWN_H
#define WEFT_BASE_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

/* Starting a child weft (the plugin probe, the process an upgrade hands its
 * sockets to) the one way: posix_spawn, so a multi-threaded server never
 * forks its address space; the child starts with no signal blocked (the
 * parent's threads block them all) and SIGPIPE back at its default (the
 * parent ignores it); descriptors `from[i]` become `to[i]`, and every other
 * descriptor from `close_from` up is closed in the child. */

/** 0 and *pid set, or an errno value. `from` may repeat a descriptor. */
int weft_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[], const int *from,
               const int *to, size_t n_moves, int close_from);

#endif
