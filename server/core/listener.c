#include "core/listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "core/inherited.h"

static int make_addr(const weft_listen_cfg *l, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, l->host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        *len = sizeof(*v4);
        return AF_INET;
    }
    if (inet_pton(AF_INET6, l->host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        *len = sizeof(*v6);
        return AF_INET6;
    }
    return -1;
}

static int bind_one(const weft_listen_cfg *l, uint16_t port, int reuseport)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int family = make_addr(l, port, &ss, &len);
    if (family < 0) {
        errno = EINVAL;
        return -1;
    }
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    /* Each loop thread accepts on its own socket; the kernel spreads
     * connections evenly, which one shared socket does not. */
    if (reuseport)
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on));
    /* "[::]:8080" next to "0.0.0.0:8080" must not collide on the v4 half. */
    if (family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static uint16_t bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    return ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                         : ((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* As an accepted socket needs them: accepted sockets inherit both, and
 * systemd sets neither unless told to. */
static void prepare_inherited(int s)
{
    int on = 1;
    fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
    fcntl(s, F_SETFD, FD_CLOEXEC);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

/* Two descriptors of one socket (a dup) share one accept queue. */
static int same_socket(int a, int b)
{
    struct stat x, y;
    return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* What weft_listeners_bind found; the steering (weft_listeners_steer) needs
 * it once the process is the main one. */
static weft_listen_extra *extras;
static size_t n_extras, cap_extras;
static struct steer {
    int fd;      /* loop 0's socket of the address: any member names the group */
    int loops;   /* the group's first `loops` sockets are the loops' own */
    int surplus; /* sockets of the group beyond them, drained by the loops */
} *steers;
static size_t n_steers;

/* The previous process ran more loops: the rest of its sockets for this
 * address. Each is a member of the same SO_REUSEPORT group with connections
 * of its own queued, which closing it would reset (the kernel does not move
 * them unless net.ipv4.tcp_migrate_req is set), so a loop takes each on as
 * well. A duplicate of a socket already taken is closed: it queues nothing
 * of its own. */
static int take_surplus(weft_config *cfg, size_t i, int n_threads, const int *fds)
{
    const weft_listen_cfg *l = &cfg->listen[i];
    size_t before = n_extras;
    int d;
    while ((d = weft_inherited_claim(l->host, l->port, NULL)) >= 0) {
        int dup = 0;
        for (int t = 0; t < n_threads && !dup; t++)
            dup = same_socket(d, fds[i * (size_t)n_threads + (size_t)t]);
        for (size_t k = before; k < n_extras && !dup; k++)
            dup = same_socket(d, extras[k].fd);
        if (dup) {
            close(d);
            continue;
        }
        if (n_extras == cap_extras) {
            size_t cap = cap_extras ? cap_extras * 2 : 8;
            weft_listen_extra *grown = realloc(extras, cap * sizeof(*grown));
            if (grown == NULL) {
                close(d);
                weft_log_error("%s:%d: listen[%zu]: out of memory adopting the sockets handed over", cfg->path,
                               l->line, i);
                return -1;
            }
            extras = grown;
            cap_extras = cap;
        }
        prepare_inherited(d);
        extras[n_extras++] = (weft_listen_extra){.fd = d, .listener = i};
    }
    steers[i].surplus = (int)(n_extras - before);
    if (n_extras > before)
        weft_log_info("listen[%zu]: %s port %u: %zu more socket(s) of the previous process's loops are accepted on "
                      "by this one's %d, so that nothing queued on them is reset",
                      i, l->host, l->port, n_extras - before, n_threads);
    return 0;
}

/* A socket systemd bound for this address (weft.socket), or the previous
 * weft process handed over (process/handover.h), instead of a bind: thread
 * t gets fds[t * stride]: the t-th such socket when several were passed
 * (the previous process's own SO_REUSEPORT group, one per loop), else a
 * duplicate of the first (the loops share its one accept queue: systemd
 * bound it without SO_REUSEPORT and as another user); any passed beyond
 * the threads go to *extras. Returns 1 if adopted, 0 if there is none, -1
 * on error. */
static int adopt_inherited(weft_config *cfg, size_t i, int n_threads, int *fds)
{
    weft_listen_cfg *l = &cfg->listen[i];
    const char *name = NULL;
    int fd = weft_inherited_claim(l->host, l->port, &name);
    if (fd < 0)
        return 0;
    fds[i * (size_t)n_threads] = fd;
    /* An ephemeral port keeps the one the previous process was given. */
    if (l->port == 0)
        l->port = bound_port(fd);
    for (int t = 1; t < n_threads; t++) {
        int d = weft_inherited_claim(l->host, l->port, NULL);
        if (d < 0)
            d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (d < 0) {
            weft_log_error("%s:%d: listen[%zu]: cannot duplicate the socket passed for %s port %u: %s", cfg->path,
                           l->line, i, l->host, l->port, strerror(errno));
            for (int k = 0; k < t; k++)
                close(fds[i * (size_t)n_threads + (size_t)k]);
            return -1;
        }
        fds[i * (size_t)n_threads + (size_t)t] = d;
    }
    for (int t = 0; t < n_threads; t++)
        prepare_inherited(fds[i * (size_t)n_threads + (size_t)t]);
    int handed = strcmp(name, WEFT_HANDOVER_FD_NAME) == 0;
    if (handed)
        weft_log_info("listen[%zu]: %s port %u is the socket pid %d handed over: nothing was closed or rebound", i,
                      l->host, l->port, (int)getppid());
    else
        weft_log_info("listen[%zu]: %s port %u is the socket systemd passed (%s): restarts refuse no connection", i,
                      l->host, l->port, name);
    steers[i] = (struct steer){.fd = handed ? fd : -1, .loops = n_threads};
    if (handed && take_surplus(cfg, i, n_threads, fds) != 0) {
        for (int k = 0; k < n_threads; k++)
            close(fds[i * (size_t)n_threads + (size_t)k]);
        return -1;
    }
    return 1;
}

/* A connection's SYN picks the group's socket at index A, A = random % loops
 * (an index the group does not have falls back to the kernel's hash). */
static int steer_group(int fd, int loops)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_RANDOM)),
        BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, (uint32_t)loops),
        BPF_STMT(BPF_RET | BPF_A, 0),
    };
    struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};
    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog));
}

void weft_listeners_steer(void)
{
    for (size_t i = 0; i < n_steers; i++) {
        const struct steer *st = &steers[i];
        if (st->fd < 0)
            continue;
        if (st->surplus == 0) {
            int none = 0; /* ENOENT when no predecessor left a filter */
            (void)setsockopt(st->fd, SOL_SOCKET, SO_DETACH_REUSEPORT_BPF, &none, sizeof(none));
        } else if (steer_group(st->fd, st->loops) == 0) {
            weft_log_info("listen[%zu]: new connections go to this process's %d loop socket(s) only (a SO_REUSEPORT "
                          "socket filter); the other %d drain what is queued on them",
                          i, st->loops, st->surplus);
        } else {
            weft_log_warn("listen[%zu]: cannot steer new connections to this process's %d loop socket(s) (%s): the "
                          "kernel keeps spreading them over all %d sockets handed over, which the loops all "
                          "accept on (some loops take more)",
                          i, st->loops, strerror(errno), st->loops + st->surplus);
        }
    }
}

static void drop_extras(void)
{
    for (size_t k = 0; k < n_extras; k++)
        close(extras[k].fd);
    free(extras);
    extras = NULL;
    n_extras = cap_extras = 0;
}

int weft_listeners_bind(weft_config *cfg, int n_threads, int **fds_out, weft_listen_extra **extra,
                        size_t *n_extra)
{
    const char *env = getenv("PORT");
    if (env != NULL && *env != '\0') {
        char *end;
        long p = strtol(env, &end, 10);
        if (*end != '\0' || p < 0 || p > 65535) {
            weft_log_error("PORT=%s in the environment is not a port number 0-65535", env);
            return -1;
        }
        cfg->listen[0].port = (uint16_t)p;
    }
    size_t n = cfg->n_listen;
    int *fds = malloc((size_t)n_threads * n * sizeof(int));
    free(steers);
    steers = calloc(n ? n : 1, sizeof(*steers));
    if (fds == NULL || steers == NULL)
        weft_fatal("out of memory");
    n_steers = n;
    for (size_t i = 0; i < n; i++)
        steers[i].fd = -1;
    int activated = weft_inherited_take() > 0;
    for (size_t i = 0; i < n; i++) {
        weft_listen_cfg *l = &cfg->listen[i];
        int adopted = activated ? adopt_inherited(cfg, i, n_threads, fds) : 0;
        if (adopted != 0) {
            if (adopted > 0)
                continue;
            for (size_t k = 0; k < i * (size_t)n_threads; k++)
                close(fds[k]);
            free(fds);
            drop_extras();
            return -1;
        }
        /* SO_REUSEPORT would let a second weft on the same port start and
         * silently take half the connections: probe without it first, so a
         * busy port is an error as with any server. */
        int probe = l->port != 0 ? bind_one(l, l->port, 0) : -2;
        if (probe >= 0)
            close(probe);
        for (int t = 0; t < n_threads; t++) {
            int fd = probe == -1 ? -1 : bind_one(l, l->port, 1);
            if (fd < 0) {
                int e = errno;
                weft_log_error("%s:%d: listen[%zu]: cannot listen on %s port %u: %s%s", cfg->path, l->line, i, l->host,
                               l->port, strerror(e),
                               activated && e == EADDRINUSE
                                   ? " (socket-activated: is it a ListenStream= of the socket unit in another form, "
                                     "e.g. [::] without BindIPv6Only=ipv6-only?)"
                                   : "");
                for (size_t k = 0; k < i * (size_t)n_threads + (size_t)t; k++)
                    close(fds[k]);
                free(fds);
                drop_extras();
                return -1;
            }
            /* An ephemeral port is chosen by the first bind; the other threads join it. */
            if (l->port == 0)
                l->port = bound_port(fd);
            fds[i * (size_t)n_threads + (size_t)t] = fd;
        }
    }
    /* Stored address-major above; hand out thread-major for the loops. */
    int *by_thread = malloc((size_t)n_threads * n * sizeof(int));
    if (by_thread == NULL)
        weft_fatal("out of memory");
    for (size_t i = 0; i < n; i++)
        for (int t = 0; t < n_threads; t++)
            by_thread[(size_t)t * n + i] = fds[i * (size_t)n_threads + (size_t)t];
    free(fds);
    *fds_out = by_thread;
    *extra = extras;
    *n_extra = n_extras;
    extras = NULL; /* the caller's now; steering needs only their count */
    n_extras = cap_extras = 0;
    return 0;
}

int weft_listeners_bind_admin(weft_config *cfg, int *fd_out)
{
    weft_listen_cfg l = {.host = cfg->admin.host, .port = cfg->admin.port};
    const char *name = NULL;
    int fd = weft_inherited_take() > 0 ? weft_inherited_claim(l.host, l.port, &name) : -1;
    if (fd >= 0)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    else
        fd = bind_one(&l, l.port, 0);
    if (fd < 0) {
        if (cfg->admin.is_default)
            weft_log_warn("admin listener: cannot listen on %s port %u: %s; serving without it (set admin.listen)",
                          l.host, l.port, strerror(errno));
        else
            weft_log_error("%s: admin.listen: cannot listen on %s port %u: %s", cfg->path, l.host, l.port,
                           strerror(errno));
        return -1;
    }
    cfg->admin.port = bound_port(fd);
    int v6 = strchr(l.host, ':') != NULL;
    weft_log_info("admin listening on http://%s%s%s:%u/%s%s%s", v6 ? "[" : "", l.host, v6 ? "]" : "", cfg->admin.port,
                  name == NULL ? ""
                  : strcmp(name, WEFT_HANDOVER_FD_NAME) == 0 ? " (the socket the previous process handed over: "
                                                               : " (the socket systemd passed: ",
                  name != NULL ? name : "", name != NULL ? ")" : "");
    *fd_out = fd;
    return 0;
}

void weft_listeners_close(int *fds, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

void weft_listeners_announce(const weft_config *cfg, const int *fds)
{
    (void)fds;
    for (size_t i = 0; i < cfg->n_listen; i++) {
        const weft_listen_cfg *l = &cfg->listen[i];
        int v6 = strchr(l->host, ':') != NULL;
        weft_log_info("listening on %s://%s%s%s:%u/", l->tls != NULL ? "https" : "http", v6 ? "[" : "", l->host,
                      v6 ? "]" : "", l->port);
    }
}
