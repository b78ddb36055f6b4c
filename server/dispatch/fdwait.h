/*
 * Waiting on a plugin's own file descriptor, in every execution context:
 * the request's loop watches the descriptor while a pool worker sleeps, a
 * coroutine is suspended, or a reactive handler waits for its callback
 * (dispatch/await.h); cancelling the request ends the wait. This is what lets a
 * plugin drive any non-blocking client library (hiredis, libcurl multi, a
 * protocol of its own) without pinning a loop thread.
 */
#ifndef WEFT_FDWAIT_H
#define WEFT_FDWAIT_H

#include <weft/plugin.h>

int weft_fdwait_fd_wait(weft_req *r, int fd, unsigned events, int timeout_ms, unsigned *revents);
void weft_fdwait_fd_wait_async(weft_req *r, int fd, unsigned events, int timeout_ms, weft_fd_callback cb, void *arg);

#endif
