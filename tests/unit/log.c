/*
 * log.format = "json" whatever the bytes (base/log.c, base/logline.c, the
 * crash report's base/sigsafe.c): every line one JSON object with time and
 * level -- a message of quotes or of euro signs past the line buffer, bytes
 * that are not UTF-8 in the message or in a field, a character cut at the
 * message limit, control characters -- shortened with a mark, never lost.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/logline.h"
#include "base/sigsafe.h"
#include "harness.h"
#include "unit.h"

static char cap_path[320];
static int saved_stderr = -1;

static void setup(void)
{
    wt_unit_setup("log");
    unsetenv("JOURNAL_STREAM");
    snprintf(cap_path, sizeof(cap_path), "%s/stderr", wt_tmpdir);
    weft_log_set_json(1);
    weft_log_set_level(WEFT_LOG_DEBUG);
}

static void teardown(void)
{
    weft_log_set_json(0);
    wt_unit_teardown();
}

TestSuite(log, .init = setup, .fini = teardown);

/* Standard error into a file until capture_end, which returns what was written. */
static void capture_begin(void)
{
    int fd = open(cap_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    saved_stderr = dup(STDERR_FILENO);
    cr_assert_geq(dup2(fd, STDERR_FILENO), 0);
    close(fd);
}

static char *capture_end(void)
{
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    char *text = wt_read_file(cap_path);
    cr_assert_not_null(text);
    return text;
}

/* One line, one JSON object with string time and level; returns it (json_decref it). */
static json_t *one_object(const char *text)
{
    const char *nl = strchr(text, '\n');
    cr_assert(nl != NULL && nl[1] == '\0', "one line, newline-terminated: '%s'", text);
    json_error_t err;
    json_t *o = json_loadb(text, (size_t)(nl - text), 0, &err);
    cr_assert_not_null(o, "not JSON (%s at %d): '%s'", err.text, err.position, text);
    cr_assert(json_is_string(json_object_get(o, "time")), "%s", text);
    cr_assert(json_is_string(json_object_get(o, "level")), "%s", text);
    cr_assert(json_is_string(json_object_get(o, "msg")), "%s", text);
    return o;
}

static const char *field(json_t *o, const char *key) { return json_string_value(json_object_get(o, key)); }

static json_t *log_one(const char *msg)
{
    capture_begin();
    weft_log_warn("%s", msg);
    char *text = capture_end();
    json_t *o = one_object(text);
    free(text);
    return o;
}

static char *repeat(const char *unit, size_t times)
{
    size_t n = strlen(unit);
    char *s = malloc(n * times + 1);
    cr_assert_not_null(s);
    for (size_t i = 0; i < times; i++)
        memcpy(s + i * n, unit, n);
    s[n * times] = '\0';
    return s;
}

Test(log, quotes_past_the_line_buffer_stay_whole)
{
    char *msg = repeat("\"", 2040); /* 4,080 bytes escaped: with time and level past the old 4 KB line */
    json_t *o = log_one(msg);
    cr_assert_str_eq(field(o, "msg"), msg);
    cr_assert_str_eq(field(o, "level"), "warn");
    cr_assert_null(json_object_get(o, "truncated"));
    json_decref(o);
    free(msg);
}

Test(log, a_message_past_the_limit_is_cut_at_a_character_with_a_mark)
{
    char *msg = repeat("\xe2\x82\xac", 700); /* euro signs: 2,100 bytes, the limit falls inside one */
    json_t *o = log_one(msg);
    const char *got = field(o, "msg");
    size_t n = strlen(got);
    cr_assert(n > 2000 && n <= 2047 + 3, "%zu bytes", n);
    cr_assert_str_eq(got + n - 3, "...");
    cr_assert_eq((n - 3) % 3, 0, "whole euro signs only: %zu bytes before the mark", n - 3);
    cr_assert_eq(strncmp(got, msg, n - 3), 0);
    cr_assert(json_is_true(json_object_get(o, "truncated")));
    json_decref(o);
    free(msg);
}

Test(log, control_characters_past_the_line_are_cut_with_a_mark)
{
    char *msg = repeat("\x01", 2040); /* 6 bytes each escaped: far past the line */
    json_t *o = log_one(msg);
    const char *got = field(o, "msg");
    cr_assert(strlen(got) > 500 && strspn(got, "\x01") == strlen(got) - 3, "%zu", strlen(got));
    cr_assert(json_is_true(json_object_get(o, "truncated")));
    json_decref(o);
    free(msg);
}

Test(log, bytes_that_are_not_utf8_become_replacement_characters)
{
    /* An 8-bit header, an overlong '/', a lone continuation, a surrogate, a cut sequence. */
    json_t *o = log_one("x-note: caf\xe9 \xc0\xaf \x80 \xed\xa0\x80 ok \xe2\x82");
    cr_assert_str_eq(field(o, "msg"), "x-note: caf\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd "
                                      "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd ok \xef\xbf\xbd\xef\xbf\xbd");
    json_decref(o);
    o = log_one("valid: \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \x7f\x1b[31m");
    cr_assert_str_eq(field(o, "msg"), "valid: \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \x7f\x1b[31m");
    json_decref(o);
}

static void vlog_ctx(const weft_log_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    weft_vlog_in(WEFT_LOG_INFO, ctx, fmt, ap);
    va_end(ap);
}

Test(log, fields_that_are_not_utf8_or_too_long_stay_json)
{
    char *long_id = repeat("\"", 3000);
    weft_log_ctx ctx = {.route = "/r\xff", .plugin = "p\x01", .request_id = long_id, .trace_id = "0af7651916cd43dd"};
    capture_begin();
    vlog_ctx(&ctx, "hello %s", "\xfe");
    char *text = capture_end();
    json_t *o = one_object(text);
    cr_assert_str_eq(field(o, "msg"), "hello \xef\xbf\xbd");
    cr_assert_str_eq(field(o, "route"), "/r\xef\xbf\xbd");
    cr_assert_str_eq(field(o, "plugin"), "p\x01");
    cr_assert_str_eq(field(o, "trace_id"), "0af7651916cd43dd");
    const char *id = field(o, "request_id");
    cr_assert(id != NULL && strlen(id) < 300 && strcmp(id + strlen(id) - 3, "...") == 0, "%s", text);
    cr_assert(json_is_true(json_object_get(o, "truncated")));
    json_decref(o);
    free(text);
    free(long_id);
}

/* The encoder alone: any buffer from its minimum up holds a valid line. */
Test(log, every_buffer_size_holds_a_valid_line)
{
    char *msg = repeat("\xe2\x82\xac\"\x02\xff", 400), *val = repeat("\\\xc3", 700);
    weft_jl_field f[3] = {{"route", val, strlen(val)}, {"plugin", "p", 1}, {"request_id", val, 20}};
    for (size_t size = WEFT_JL_MIN_LINE; size < 8000; size += 97) {
        char *buf = malloc(size);
        cr_assert_not_null(buf);
        weft_jl_line_in in = {.level = "error", .msg = msg, .msg_len = strlen(msg), .fields = f, .n_fields = 3};
        clock_gettime(CLOCK_REALTIME, &in.when);
        size_t n = weft_jl_line(buf, size, &in);
        cr_assert(n <= size && n > 0 && buf[n - 1] == '\n', "size %zu: %zu", size, n);
        json_error_t err;
        json_t *o = json_loadb(buf, n - 1, 0, &err);
        cr_assert_not_null(o, "size %zu: %s: %.*s", size, err.text, (int)n, buf);
        cr_assert(json_is_string(json_object_get(o, "time")) && json_is_string(json_object_get(o, "level")));
        json_decref(o);
        free(buf);
    }
    free(msg);
    free(val);
}

Test(log, time_is_utc_with_milliseconds)
{
    static const time_t when[] = {0, 951782400, 951868799, 1700000000, 4102444800, 253402300799};
    for (size_t i = 0; i < sizeof(when) / sizeof(when[0]) + 2000; i++) {
        uint64_t r = (uint64_t)rand() << 16 ^ (uint64_t)rand();
        time_t t = i < sizeof(when) / sizeof(when[0]) ? when[i] : (time_t)(r % 4102444800ULL);
        struct timespec ts = {.tv_sec = t, .tv_nsec = 123456789};
        char got[40] = "", want[40];
        *weft_jl_time(got, got + sizeof(got) - 1, &ts) = '\0';
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%S.123Z", &tm);
        cr_assert_str_eq(got, want, "t=%lld", (long long)t);
    }
}

/* The crash handler's lines (ops/crash.c, dispatch/coro.c): JSON in JSON mode, text otherwise. */
Test(log, crash_report_lines_follow_the_format)
{
    int fd = open(cap_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    weft_ss_set_report_fd(fd);
    weft_jl_field f[2] = {{"route", "/c", 2}, {"plugin", "crashy", 6}};
    const char *fatal = "weft: FATAL: SIGSEGV in route /c handling GET /c?\xff; backtrace follows";
    weft_ss_report_line(fatal, strlen(fatal), f, 2);
    close(fd);
    weft_ss_set_report_fd(-1);
    char *text = wt_read_file(cap_path);
    json_t *o = one_object(text);
    cr_assert_str_eq(field(o, "level"), "error");
    cr_assert_str_eq(field(o, "route"), "/c");
    cr_assert_str_eq(field(o, "plugin"), "crashy");
    cr_assert(strstr(field(o, "msg"), "handling GET /c?\xef\xbf\xbd; backtrace follows") != NULL, "%s", text);
    json_decref(o);
    free(text);

    weft_log_set_json(0);
    fd = open(cap_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    weft_ss_set_report_fd(fd);
    weft_ss_report_line("weft: FATAL: x", 14, f, 2);
    close(fd);
    weft_ss_set_report_fd(-1);
    text = wt_read_file(cap_path);
    cr_assert_str_eq(text, "weft: FATAL: x\n");
    free(text);
}

Test(log, text_format_is_unchanged)
{
    weft_log_set_json(0);
    capture_begin();
    weft_log_info("plain %d", 7);
    char *text = capture_end();
    cr_assert(strlen(text) > 30 && strstr(text, "Z info  plain 7\n") != NULL, "%s", text);
    free(text);
}
