#include "base/sigsafe.h"

#include <signal.h>
#include <sys/uio.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/logline.h"

static atomic_int report_fd = -1;

int weft_ss_report_fd(void)
{
    int fd = atomic_load_explicit(&report_fd, memory_order_relaxed);
    return fd >= 0 ? fd : STDERR_FILENO;
}

void weft_ss_set_report_fd(int fd) { atomic_store_explicit(&report_fd, fd, memory_order_relaxed); }

static atomic_int journal;

void weft_ss_set_journal(int on) { atomic_store_explicit(&journal, on, memory_order_relaxed); }

const char *weft_ss_report_prefix(void)
{
    /* A log tap (dev mode) is a pipe to a reader, not the journal. */
    int tapped = atomic_load_explicit(&report_fd, memory_order_relaxed) >= 0;
    return atomic_load_explicit(&journal, memory_order_relaxed) && !tapped ? "<2>" : "";
}

static atomic_int json;

void weft_ss_set_json(int on) { atomic_store_explicit(&json, on, memory_order_relaxed); }

int weft_ss_json(void) { return atomic_load_explicit(&json, memory_order_relaxed); }

void weft_ss_report_line(const char *text, size_t n, const weft_jl_field *fields, size_t n_fields)
{
    /* One write a line, its journal priority in front: another thread's
     * line in between would split the report. */
    const char *prio = weft_ss_report_prefix();
    int fd = weft_ss_report_fd();
    ssize_t ignored;
    if (!weft_ss_json()) {
        struct iovec iov[3] = {{(void *)prio, strlen(prio)}, {(void *)text, n}, {"\n", 1}};
        ignored = writev(fd, iov, 3);
        (void)ignored;
        return;
    }
    /* log.format = "json": the report is log lines like any other, so a
     * shipper parsing the error log meets no plain text when weft dies. */
    char line[4608];
    weft_jl_line_in in = {.level = "error", .msg = text, .msg_len = n, .fields = fields, .n_fields = n_fields};
    clock_gettime(CLOCK_REALTIME, &in.when); /* async-signal-safe (POSIX) */
    struct iovec iov[2] = {{(void *)prio, strlen(prio)}, {line, weft_jl_line(line, sizeof(line), &in)}};
    ignored = writev(fd, iov, 2);
    (void)ignored;
}

char *weft_ss_append(char *p, char *end, const char *s)
{
    while (s != NULL && *s != '\0' && p < end)
        *p++ = *s++;
    return p;
}

char *weft_ss_append_n(char *p, char *end, const char *s, size_t n)
{
    for (size_t i = 0; s != NULL && i < n && s[i] != '\0' && p < end; i++)
        *p++ = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    return p;
}

char *weft_ss_append_u64(char *p, char *end, uint64_t v)
{
    char digits[24];
    int n = 0;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n > 0 && p < end)
        *p++ = digits[--n];
    return p;
}

char *weft_ss_append_hex(char *p, char *end, uint64_t v)
{
    char digits[16];
    int n = 0;
    do
        digits[n++] = "0123456789abcdef"[v & 15];
    while ((v >>= 4) != 0);
    while (n > 0 && p < end)
        *p++ = digits[--n];
    return p;
}

const char *weft_ss_signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    default: return NULL;
    }
}
