/* Listening sockets inherited from systemd (socket activation, weft.socket). */
#ifndef WEFT_INHERITED_H
#define WEFT_INHERITED_H

#include <stdint.h>

/* The FileDescriptorName of sockets a serving weft hands to its successor
 * (process/handover.h), next to socket activation's own names. */
#define WEFT_HANDOVER_FD_NAME "weft-handover"

/**
 * Takes the sockets systemd passed (LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES)
 * the first time it is called, and unsets those variables so that no child
 * process sees them. Returns how many are still unclaimed: 0 when weft was
 * not socket-activated.
 */
int weft_inherited_take(void);
/**
 * The inherited listening TCP socket whose local address is host:port
 * (numeric, as in the config; port 0 matches only sockets a previous weft
 * handed over, the first of that host in their order), handed over to the
 * caller, or -1 when there is none. *name, if not NULL, gets the socket's
 * FileDescriptorName= (valid until weft_inherited_release).
 */
int weft_inherited_claim(const char *host, uint16_t port, const char **name);
/**
 * Warns about every inherited socket no configured address claimed (its
 * connections would wait unanswered) and closes weft's copy of it.
 */
void weft_inherited_release(const char *config_path);

#endif
