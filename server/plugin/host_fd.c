/* The `fd` group: dispatch/fdwait.c's wait, one call with an optional callback. */
#include "dispatch/fdwait.h"
#include "plugin/host.h"

static weft_rc fd_wait(weft_req *r, int fd, unsigned events, int timeout_ms, unsigned *revents, weft_fd_callback cb,
                       void *arg)
{
    if (cb == NULL)
        return (weft_rc)weft_fdwait_fd_wait(r, fd, events, timeout_ms, revents);
    weft_fdwait_fd_wait_async(r, fd, events, timeout_ms, cb, arg);
    return WEFT_AGAIN;
}

const weft_host_fd weft_host_fd_group = {
    .struct_size = sizeof(weft_host_fd),
    .version = WEFT_HOST_FD_VERSION,
    .wait = fd_wait,
};
