/* Socket activation (systemd's weft.socket): weft adopts the listening
 * sockets it is passed (LISTEN_FDS, LISTEN_FDNAMES) for the addresses it is
 * configured with, instead of binding them, and never closes the passed
 * socket for good, so a connection made while no weft runs waits in the
 * backlog and is answered by the next one. The test plays systemd: it binds
 * the sockets, keeps them, and hands copies to each weft it starts through a
 * shell that sets LISTEN_PID to its own pid and execs weft. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "rawhttp.h"

/* A listening socket on 127.0.0.1 with an ephemeral port, at fd `at` (high,
 * clear of whatever the test process holds), inherited by children. */
static int listen_at(int at, int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0, "bind: %s", strerror(errno));
    cr_assert_eq(listen(fd, 128), 0);
    socklen_t len = sizeof(a);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    cr_assert_eq(dup2(fd, at), at);
    close(fd);
    return at;
}

/* fds 100, 101, 102 become 3, 4, 5 in weft, named as systemd names them. */
static const char *const activate[] = {
    "bash", "-c",
    "exec 3<&100 4<&101 5<&102 100<&- 101<&- 102<&-; "
    "LISTEN_PID=$$ LISTEN_FDS=3 LISTEN_FDNAMES=web:admin:stray exec \"$@\"",
    "activate", NULL};

static void start_activated(wt_server *s, int web, int adm)
{
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 2;\nlisten = [\"127.0.0.1:%d\"];\nadmin = { listen = \"127.0.0.1:%d\"; };\n" WT_HELLO_ROUTES
             "\n",
             web, adm);
    wt_start_via(s, conf, activate, NULL);
}

static void expect_hello(const wt_server *s)
{
    wt_resp r;
    cr_assert_eq(wt_http(s, "GET", "/hello", NULL, &r), 0);
    cr_assert_eq(r.status, 200, "/hello: %ld %s", r.status, r.body);
    cr_assert(strstr(r.body, "hello") != NULL);
    wt_resp_free(&r);
}

Test(socketact, adopts_the_passed_sockets_and_a_restart_refuses_nothing, .timeout = 90)
{
    int web, adm, stray;
    listen_at(100, &web);
    listen_at(101, &adm);
    listen_at(102, &stray);
    wt_server s = {0};
    start_activated(&s, web, adm);
    cr_assert_eq(s.port, web);
    char *log = wt_wait_log(&s, "the socket systemd passed (web)", 5000);
    free(log);
    log = wt_wait_log(&s, "(the socket systemd passed: admin)", 5000);
    free(log);
    char want[160];
    snprintf(want, sizeof(want), "systemd passed a socket for 127.0.0.1:%d (stray) but no listen address", stray);
    log = wt_wait_log(&s, want, 5000);
    free(log);
    for (int i = 0; i < 20; i++) /* both loops accept on the one socket */
        expect_hello(&s);
    wt_raw_resp ar;
    const char get_status[] = "GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    wt_raw_send(adm, get_status, sizeof(get_status) - 1, &ar, 10000);
    cr_assert_eq(ar.status, 200, "admin /status: %ld", ar.status);
    wt_raw_free(&ar);
    cr_assert_eq(wt_stop(&s), 0);

    /* No weft runs now: the connection is accepted by the kernel into the
     * backlog of the socket "systemd" still holds, not refused. */
    int c = wt_raw_connect(web);
    const char get[] = "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    cr_assert_eq(write(c, get, sizeof(get) - 1), (ssize_t)(sizeof(get) - 1));

    wt_server s2 = {0};
    start_activated(&s2, web, adm);
    char buf[4096];
    size_t got = 0;
    for (;;) {
        struct pollfd p = {.fd = c, .events = POLLIN};
        cr_assert_eq(poll(&p, 1, 10000), 1, "no answer within 10 s to the request sent while no weft ran");
        ssize_t k = read(c, buf + got, sizeof(buf) - 1 - got);
        cr_assert_geq(k, 0, "read: %s", strerror(errno));
        if (k == 0)
            break;
        got += (size_t)k;
        cr_assert_lt(got, sizeof(buf) - 1);
    }
    buf[got] = '\0';
    close(c);
    cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "the waiting request got: %s", buf);
    cr_assert(strstr(buf, "hello") != NULL, "%s", buf);
    expect_hello(&s2);
    wt_finish(&s2);
    close(100);
    close(101);
    close(102);
}

/* The passed sockets are weft's alone: close-on-exec once taken, so the
 * probe process a reload execs (and any other child) never holds them. */
Test(socketact, children_do_not_inherit_the_sockets, .timeout = 60)
{
    int web, adm, stray;
    listen_at(100, &web);
    listen_at(101, &adm);
    listen_at(102, &stray);
    wt_server s = {0};
    start_activated(&s, web, adm);
    for (int fd = 3; fd <= 4; fd++) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)s.pid, fd);
        FILE *f = fopen(path, "r");
        cr_assert_not_null(f, "weft has no fd %d", fd);
        char line[128];
        unsigned long flags = 0;
        while (fgets(line, sizeof(line), f) != NULL)
            if (sscanf(line, "flags: %lo", &flags) == 1)
                break;
        fclose(f);
        cr_assert(flags & O_CLOEXEC, "fd %d (a passed socket) is not close-on-exec: flags 0%lo", fd, flags);
    }
    wt_finish(&s);
    close(100);
    close(101);
    close(102);
}
