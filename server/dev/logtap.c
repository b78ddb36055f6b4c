#include "dev/logtap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/signals.h"
#include "base/sigsafe.h"

#define KEEP 200 /* lines */
#define LINE_MAX_BYTES 1024

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char lines[KEEP][LINE_MAX_BYTES];
static unsigned long n_lines; /* ever seen: line k is lines[k % KEEP] */
static char partial[LINE_MAX_BYTES];
static size_t n_partial;

static int terminal = -1, pipe_in = -1;
static atomic_int stopping;
static pthread_t reader;
static int started;

/* A finished line (or one cut at LINE_MAX_BYTES - 1). */
static void keep_line(void)
{
    pthread_mutex_lock(&mu);
    partial[n_partial] = '\0';
    memcpy(lines[n_lines % KEEP], partial, n_partial + 1);
    n_lines++;
    pthread_mutex_unlock(&mu);
    n_partial = 0;
}

static void consume(const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n' || n_partial == LINE_MAX_BYTES - 1)
            keep_line();
        if (buf[i] != '\n')
            partial[n_partial++] = buf[i];
    }
}

static void pass_on(const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(terminal, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* the terminal went away: the Dev UI still gets the lines */
        buf += w;
        n -= (size_t)w;
    }
}

static void *read_main(void *arg)
{
    (void)arg;
    weft_signals_block_async();
    char buf[4096];
    /* Polled, not read to EOF: daemons started in dev mode (the private
     * PostgreSQL) may hold the pipe's write end for ever. */
    while (!atomic_load(&stopping)) {
        struct pollfd p = {pipe_in, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = read(pipe_in, buf, sizeof(buf));
        if (n <= 0)
            break;
        pass_on(buf, (size_t)n);
        consume(buf, (size_t)n);
    }
    return NULL;
}

int weft_dev_logtap_start(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    terminal = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    if (terminal < 0 || dup2(p[1], STDERR_FILENO) < 0) {
        close(p[0]);
        close(p[1]);
        if (terminal >= 0)
            close(terminal);
        terminal = -1;
        return -1;
    }
    close(p[1]);
    pipe_in = p[0];
    weft_ss_set_report_fd(terminal); /* a crash report must outlive the reader */
    if (pthread_create(&reader, NULL, read_main, NULL) != 0) {
        weft_dev_logtap_stop();
        return -1;
    }
    started = 1;
    return 0;
}

void weft_dev_logtap_stop(void)
{
    if (terminal < 0)
        return;
    weft_ss_set_report_fd(-1);
    dup2(terminal, STDERR_FILENO); /* what is still written goes straight out */
    if (started) {
        atomic_store(&stopping, 1);
        pthread_join(reader, NULL);
        started = 0;
    }
    /* what the reader had not taken yet */
    char buf[4096];
    int fl = fcntl(pipe_in, F_GETFL);
    fcntl(pipe_in, F_SETFL, fl | O_NONBLOCK);
    ssize_t n;
    while ((n = read(pipe_in, buf, sizeof(buf))) > 0)
        pass_on(buf, (size_t)n);
    close(pipe_in);
    close(terminal);
    pipe_in = terminal = -1;
}

json_t *weft_dev_logtap_json(unsigned long after)
{
    json_t *arr = json_array();
    pthread_mutex_lock(&mu);
    unsigned long first = n_lines > KEEP ? n_lines - KEEP : 0;
    if (after < first)
        after = first;
    for (unsigned long k = after; arr != NULL && k < n_lines; k++)
        json_array_append_new(arr, json_string(lines[k % KEEP]));
    unsigned long next = n_lines;
    pthread_mutex_unlock(&mu);
    return json_pack("{s:I, s:o}", "next", (json_int_t)next, "lines", arr);
}
