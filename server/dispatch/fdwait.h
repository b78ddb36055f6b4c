/*
 * Waiting on a plugin's own file descriptor, in every execution context: a
 * pool worker blocks in poll(); a coroutine suspends while the loop watches
 * the descriptor; a reactive handler gets a callback. This is what lets a
 * plugin drive any non-blocking client library (hiredis, libcurl multi, a
 * protocol of its own) without pinning a loop thread.
 */
#ifndef WEFT_FDWAIT_H
#define WEFT_FDWAIT_H

#include <weft/plugin.h>

int weft_fdwait_fd_wait(weft_req *r, int fd, unsigned events, int timeout_ms, unsigned *revents);
void weft_fdwait_fd_wait_async(weft_req *r, int fd, unsigned events, int timeout_ms, weft_fd_callback cb, void *arg);

#endif
