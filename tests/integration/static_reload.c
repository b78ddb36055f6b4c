/*
 * A static route across reloads: a download that started before a reload
 * changed the route's directory finishes from the file it started on,
 * byte for byte, while new requests are served from the new directory.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "harness.h"

#define BIG (32u * 1024 * 1024)

static wt_server srv;

static unsigned char pattern(size_t i) { return (unsigned char)(i * 13 % 241); }

static void make_dir_with(const char *dir, const char *name, size_t size, int big)
{
    cr_assert_eq(mkdir(dir, 0755), 0);
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    for (size_t i = 0; i < size; i++)
        fputc(big ? pattern(i) : 'B', f);
    fclose(f);
}

static void conf_for(const char *dir)
{
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\n"
             "routes = (\n"
             "  { path = \"/s\"; static = { dir = \"%s\"; }; },\n" WT_HELLO_ROUTE "\n"
             ");\n",
             dir);
    wt_write_conf(&srv, conf);
}

/* A client with a small receive window, so the server cannot have written
 * the whole file into socket buffers before the reload. */
static int slow_client(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    int rcv = 16 * 1024;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* Reads the body on while the test reloads: a reader that stops for more
 * than 5 s is closed by h2o (its HTTP/1 write timeout), which is not what
 * this test is about. Paced (16 KiB every 100 ms) until `fast` is set, so
 * the download is still in flight when the reload lands. */
typedef struct reader {
    int fd;
    size_t body; /* bytes of the body read so far */
    atomic_int fast;
    atomic_int done;
    int err;          /* errno of a failed read */
    size_t bad_at;    /* first byte that differs from the old file's; BIG+1: none */
} reader;

static void *read_rest(void *arg)
{
    reader *rd = arg;
    static char buf[65536];
    for (;;) {
        int fast = atomic_load(&rd->fast);
        ssize_t n = read(rd->fd, buf, fast ? sizeof(buf) : 16384);
        if (n < 0) {
            rd->err = errno;
            break;
        }
        if (n == 0)
            break;
        for (ssize_t i = 0; i < n && rd->bad_at > BIG; i++)
            if ((unsigned char)buf[i] != pattern(rd->body + (size_t)i))
                rd->bad_at = rd->body + (size_t)i;
        rd->body += (size_t)n;
        if (!fast)
            usleep(100000); /* a slow client's pace, not a wait for the server */
    }
    atomic_store(&rd->done, 1);
    return NULL;
}

/* Each loop swaps to the new generation by a message after the reload's
 * log line: poll until GET path answers `status` (and `want`), with a deadline. */
static void wait_answer(const char *path, long status, const char *want)
{
    double t0 = wt_now_ms();
    for (;;) {
        wt_resp r;
        cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
        int ok = r.status == status && (want == NULL || strcmp(r.body, want) == 0);
        cr_assert_null(strstr(r.body, "secret"), "%s leaked: %s", path, r.body);
        long got = r.status;
        wt_resp_free(&r);
        if (ok)
            return;
        cr_assert_lt(wt_now_ms() - t0, 10000, "%s still answers %ld", path, got);
        usleep(10000);
    }
}

Test(static_reload, a_download_in_flight_finishes_from_its_generation_while_new_requests_see_the_new_dir,
     .timeout = 180)
{
    wt_write_conf(&srv, "#\n");
    char a[400], b[400];
    snprintf(a, sizeof(a), "%s/a", srv.dir);
    snprintf(b, sizeof(b), "%s/b", srv.dir);
    make_dir_with(a, "big.bin", BIG, 1);
    make_dir_with(b, "big.bin", 1, 0);
    conf_for("a");
    wt_start(&srv, NULL);

    int fd = slow_client(srv.port);
    const char req[] = "GET /s/big.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    cr_assert_eq(write(fd, req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
    /* The head and the first bytes of the body. */
    char buf[65536];
    size_t got = 0, body = 0, head_len = 0;
    char head[4096] = "";
    while (head_len == 0) {
        ssize_t n = read(fd, buf, sizeof(buf));
        cr_assert_gt(n, 0, "read: %s", n < 0 ? strerror(errno) : "closed");
        memcpy(head + got, buf, (size_t)n < sizeof(head) - got - 1 ? (size_t)n : sizeof(head) - got - 1);
        got += (size_t)n;
        char *end = strstr(head, "\r\n\r\n");
        if (end != NULL) {
            head_len = (size_t)(end + 4 - head);
            body = got - head_len;
            for (size_t i = 0; i < body; i++)
                cr_assert_eq((unsigned char)buf[(size_t)n - body + i], pattern(i));
        }
    }
    cr_assert(strncmp(head, "HTTP/1.1 200", 12) == 0, "%s", head);
    cr_assert(strstr(head, "33554432") != NULL, "content-length of the old file: %s", head);

    reader rd = {.fd = fd, .body = body, .bad_at = BIG + 1};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, read_rest, &rd), 0);
    /* A download counts as a request in flight until its last byte is out. */
    cr_assert_geq(wt_metric(&srv, "weft_inflight_requests"), 1, "the download is not counted in flight");

    conf_for("b");
    cr_assert_eq(kill(srv.pid, SIGHUP), 0);
    free(wt_wait_log(&srv, "reload: generation 2 serving", 30000));
    wait_answer("/s/big.bin", 200, "B"); /* new requests read the new directory */
    cr_assert_eq(atomic_load(&rd.done), 0, "the download was still in flight at the reload (%zu bytes read)",
                 rd.body);

    /* The rest, every byte the old file's. */
    atomic_store(&rd.fast, 1);
    pthread_join(t, NULL);
    close(fd);
    cr_assert_eq(rd.err, 0, "read: %s after %zu bytes", strerror(rd.err), rd.body);
    cr_assert_gt(rd.bad_at, (size_t)BIG, "byte %zu differs", rd.bad_at);
    cr_assert_eq(rd.body, BIG, "the download finished whole");
    wt_wait_metric_eq(&srv, "weft_inflight_requests", 0, 10000);
    wt_suite_stop(&srv);
    wt_rm_rf(srv.dir);
}

static void put(const char *dir, const char *name, const char *text)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static void body_is(const char *path, long status, const char *want)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, status, "%s: %ld %s", path, r.status, r.body);
    if (want != NULL)
        cr_assert_str_eq(r.body, want, "%s", path);
    cr_assert_null(strstr(r.body, "secret"), "%s leaked: %s", path, r.body);
    wt_resp_free(&r);
}

Test(static_reload, a_directory_renamed_over_dir_is_checked_as_it_is_served, .timeout = 120)
{
    wt_write_conf(&srv, "#\n");
    char www[400], old[400], out[400], link[600], secret[600];
    snprintf(www, sizeof(www), "%s/www", srv.dir);
    snprintf(old, sizeof(old), "%s/www.old", srv.dir);
    snprintf(out, sizeof(out), "%s/out", srv.dir);
    cr_assert_eq(mkdir(www, 0755), 0);
    cr_assert_eq(mkdir(out, 0755), 0);
    put(www, "a.txt", "one");
    put(out, "secret.txt", "secret");
    conf_for("www");
    wt_start(&srv, NULL);
    body_is("/s/a.txt", 200, "one");

    /* Another directory renamed into place, whose a.txt leads out of the tree. */
    cr_assert_eq(rename(www, old), 0);
    cr_assert_eq(mkdir(www, 0755), 0);
    snprintf(link, sizeof(link), "%s/a.txt", www);
    snprintf(secret, sizeof(secret), "%s/secret.txt", out);
    cr_assert_eq(symlink(secret, link), 0);
    /* The serving generation serves the directory it checks: the old one. */
    body_is("/s/a.txt", 200, "one");
    /* A reload opens the new one, and its symlink out is refused. */
    cr_assert_eq(kill(srv.pid, SIGHUP), 0);
    free(wt_wait_log(&srv, "reload: generation 2 serving", 30000));
    wait_answer("/s/a.txt", 404, NULL);
    wt_suite_stop(&srv);
    wt_rm_rf(srv.dir);
}
