/* Listening sockets: one per (address, loop thread), balanced by SO_REUSEPORT. */
#ifndef WEFT_LISTENER_H
#define WEFT_LISTENER_H

#include "config/config.h"

/**
 * Binds every configured address once per loop thread. fds[t * n_listen + i]
 * is thread t's socket for address i. `PORT` in the environment replaces the
 * first address's port (the Knative/Kubernetes convention). An address with
 * port 0 gets an ephemeral port, shared by all threads. An address systemd
 * passed a socket for (socket activation, core/inherited.h) is not bound but
 * adopted: every thread accepts on that one socket. Returns 0, or -1 after
 * logging which address failed and why.
 */
int weft_listeners_bind(weft_config *cfg, int n_threads, int **fds_out);
void weft_listeners_close(int *fds, size_t count);
/**
 * Binds the admin address (one socket, served by loop 0), or adopts the
 * socket systemd passed for it. On failure logs
 * and returns -1; a failure on the unconfigured default address is only a
 * warning, so several instances on one machine still start.
 */
int weft_listeners_bind_admin(weft_config *cfg, int *fd_out);
/** Logs "listening on http://ADDR:PORT/" for each address (with the bound port). */
void weft_listeners_announce(const weft_config *cfg, const int *fds);

#endif
