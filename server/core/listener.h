/* Listening sockets: one per (address, loop thread), balanced by SO_REUSEPORT. */
#ifndef WEFT_LISTENER_H
#define WEFT_LISTENER_H

#include "config/config.h"

/** A listening socket handed over beyond this process's loops (the previous process ran more). */
typedef struct weft_listen_extra {
    int fd;
    size_t listener; /* the config's listen[] index */
} weft_listen_extra;

/**
 * Binds every configured address once per loop thread. fds[t * n_listen + i]
 * is thread t's socket for address i. `PORT` in the environment replaces the
 * first address's port (the Knative/Kubernetes convention). An address with
 * port 0 gets an ephemeral port, shared by all threads. An address systemd
 * passed a socket for (socket activation, core/inherited.h) is not bound but
 * adopted: every thread accepts on that one socket. The sockets a previous
 * weft handed over (one per loop of its own) are adopted in their order;
 * those beyond this process's loops come back in *extra (address by
 * address, in the order received; *n_extra of them, owned by the caller):
 * each has connections queued that closing it would reset, so a loop
 * accepts on it too. Returns 0, or -1 after logging which address failed
 * and why.
 */
int weft_listeners_bind(weft_config *cfg, int n_threads, int **fds_out, weft_listen_extra **extra,
                        size_t *n_extra);
/**
 * The hand-over's new process, once it is the main one: where it adopted
 * more sockets of an address's SO_REUSEPORT group than it runs loops, the
 * group gets a socket filter that hands every new connection to one of the
 * loops' own sockets (the first n_threads of the group, the order they
 * were bound in), so the others only drain what is queued on them; where
 * it did not, a filter a predecessor put there is removed and the kernel's
 * hash spreads them over all. Plain setsockopt (classic BPF), no privilege.
 */
void weft_listeners_steer(void);
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
