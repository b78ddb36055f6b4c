/* Socket activation: systemd binds the listeners (weft.socket) and keeps
 * them open across restarts, so a connection that arrives while one weft
 * process stops and the next starts waits in the listen backlog instead of
 * being refused. weft adopts each inherited socket for the configured
 * address it is bound to, and binds everything else itself, exactly as
 * without systemd: the config stays the one description of what is served. */
#include "core/inherited.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "base/log.h"

typedef struct {
    int fd; /* -1 once claimed */
    char *name;
} inherited_fd;

static inherited_fd *inh;
static int n_inh, taken;

int weft_inherited_take(void)
{
    if (!taken) {
        taken = 1;
        char **names = NULL;
        int n = sd_listen_fds_with_names(1, &names);
        if (n < 0)
            weft_log_warn("socket activation: cannot take the sockets systemd passed (LISTEN_FDS): %s; binding "
                          "every address itself",
                          strerror(-n));
        if (n > 0 && (inh = calloc((size_t)n, sizeof(*inh))) == NULL)
            weft_fatal("out of memory");
        for (int i = 0; i < n; i++) {
            inh[i].fd = SD_LISTEN_FDS_START + i;
            inh[i].name = names != NULL && names[i] != NULL ? names[i] : strdup("unknown");
        }
        n_inh = n > 0 ? n : 0;
        free(names); /* the strings now belong to inh */
    }
    int left = 0;
    for (int i = 0; i < n_inh; i++)
        left += inh[i].fd >= 0;
    return left;
}

/* Is fd a listening TCP socket bound to exactly host:port (any port for 0)? */
static int bound_to(int fd, const char *host, uint16_t port)
{
    if (sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1) <= 0)
        return 0;
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        struct in_addr want;
        return inet_pton(AF_INET, host, &want) == 1 && a->sin_addr.s_addr == want.s_addr &&
               (port == 0 || ntohs(a->sin_port) == port);
    }
    if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        struct in6_addr want;
        return inet_pton(AF_INET6, host, &want) == 1 && memcmp(&a->sin6_addr, &want, sizeof(want)) == 0 &&
               (port == 0 || ntohs(a->sin6_port) == port);
    }
    return 0;
}

int weft_inherited_claim(const char *host, uint16_t port, const char **name)
{
    for (int i = 0; i < n_inh; i++) {
        /* Port 0 ("any") takes what the previous process was given for it,
         * in its order; systemd's sockets are always for a port. */
        if (port == 0 && strcmp(inh[i].name, WEFT_HANDOVER_FD_NAME) != 0)
            continue;
        if (inh[i].fd >= 0 && bound_to(inh[i].fd, host, port)) {
            int fd = inh[i].fd;
            inh[i].fd = -1;
            if (name != NULL)
                *name = inh[i].name;
            return fd;
        }
    }
    return -1;
}

/* "0.0.0.0:8080", "[::]:8080", or the family when it is no TCP socket. */
static void describe(int fd, char *out, size_t size)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char addr[INET6_ADDRSTRLEN] = "?";
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
        snprintf(out, size, "fd %d (%s)", fd, strerror(errno));
    } else if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, addr, sizeof(addr));
        snprintf(out, size, "%s:%u", addr, ntohs(a->sin_port));
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, addr, sizeof(addr));
        snprintf(out, size, "[%s]:%u", addr, ntohs(a->sin6_port));
    } else {
        snprintf(out, size, "fd %d (address family %d, not TCP)", fd, ss.ss_family);
    }
}

void weft_inherited_release(const char *config_path)
{
    for (int i = 0; i < n_inh; i++) {
        if (inh[i].fd >= 0) {
            char what[INET6_ADDRSTRLEN + 64];
            describe(inh[i].fd, what, sizeof(what));
            if (strcmp(inh[i].name, WEFT_HANDOVER_FD_NAME) == 0) {
                /* Every socket of a listen address is adopted (core/listener.c), however many loops
                 * the previous process ran: this address is no longer listened on. */
                weft_log_info("hand-over: %s is a socket of the previous process for an address this config does "
                              "not listen on; closed (connections still queued on it are reset)",
                              what);
                close(inh[i].fd);
                inh[i].fd = -1;
                continue;
            }
            weft_log_warn("socket activation: systemd passed a socket for %s (%s) but no listen address in %s is "
                          "that address: its connections are never answered; make the socket unit's ListenStream= "
                          "and the config's listen agree (systemctl edit weft.socket)",
                          what, inh[i].name, config_path);
            close(inh[i].fd);
            inh[i].fd = -1;
        }
    }
}
