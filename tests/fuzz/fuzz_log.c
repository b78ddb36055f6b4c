/*
 * libFuzzer target: the JSON log line encoder (base/logline.c), which the
 * logger and the crash handler share.
 *
 * Input: byte 0 picks the buffer size (WEFT_JL_MIN_LINE and up), byte 1 the
 * number of fields (0-4) and whether the message was cut at a byte count,
 * bytes 2-9 four 16-bit field lengths; the rest is the message, then the
 * fields' values, any bytes at all. The buffer is allocated at exactly that
 * size (ASan sees one byte past it). Every output must be one line of valid
 * JSON (jansson's json_loadb) with string time, level and msg; a value not
 * cut comes back byte for byte when it was valid UTF-8, and a cut one ends
 * in "..." after a prefix of what was given, with "truncated": true.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/logline.h"

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            __builtin_trap();                                                                                          \
    } while (0)

static const char *const keys[4] = {"route", "plugin", "request_id", "trace_id"};

/* What the value must decode to, by an independent reading: each valid
 * UTF-8 sequence (as jansson validates one) kept, every other byte U+FFFD.
 * malloc'd, its length in *out_len. */
static char *reference(const char *s, size_t n, size_t *out_len)
{
    char *out = malloc(n * 3 + 1);
    CHECK(out != NULL);
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = (unsigned char)s[i] < 0x80 ? 1 : 0;
        for (size_t try = 2; k == 0 && try <= 4 && i + try <= n; try++) {
            json_t *v = json_stringn(s + i, try);
            if (v != NULL)
                k = try;
            json_decref(v);
        }
        if (k == 0) {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        }
    }
    *out_len = o;
    return out;
}

/* Whole when neither cut nor shortened, else a prefix then "..."; a value
 * cut before (was_cut) may lose a split character at its end. */
static void check_value(json_t *o, const char *key, const char *given, size_t len, int truncated, int was_cut)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL) {
        CHECK(truncated); /* only a field that did not fit at all is left out */
        return;
    }
    CHECK(json_is_string(v));
    const char *got = json_string_value(v);
    size_t n = json_string_length(v), want_len;
    for (size_t drop = 0; drop <= (was_cut ? 3 : 0) && drop <= len; drop++) {
        char *want = reference(given, len - drop, &want_len);
        int whole = !was_cut && n == want_len && memcmp(got, want, n) == 0;
        int prefix = truncated && n >= 3 && memcmp(got + n - 3, "...", 3) == 0 && n - 3 <= want_len &&
                     memcmp(got, want, n - 3) == 0;
        free(want);
        if (whole || prefix)
            return;
    }
    CHECK(0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 10)
        return -1;
    size_t buf_size = WEFT_JL_MIN_LINE + (size_t)data[0] * 24;
    size_t n_fields = data[1] % 5;
    int cut = (data[1] >> 3) & 1;
    size_t lens[4], at = 10;
    for (size_t i = 0; i < 4; i++)
        lens[i] = (size_t)data[2 + 2 * i] | (size_t)data[3 + 2 * i] << 8;
    size_t rest = size - at, total = 0;
    for (size_t i = 0; i < n_fields; i++) {
        lens[i] = rest - total > 0 ? lens[i] % (rest - total + 1) : 0;
        total += lens[i];
    }
    const char *msg = (const char *)data + at;
    size_t msg_len = rest - total;
    weft_jl_field fields[4];
    const char *p = msg + msg_len;
    for (size_t i = 0; i < n_fields; i++) {
        fields[i] = (weft_jl_field){keys[i], p, lens[i]};
        p += lens[i];
    }
    weft_jl_line_in in = {.level = "warn", .msg = msg, .msg_len = msg_len, .msg_cut = cut, .fields = fields,
                          .n_fields = n_fields};
    in.when.tv_sec = (time_t)(((uint64_t)data[2] << 24 | (uint64_t)data[5] << 8 | data[9]) * 4099);
    in.when.tv_nsec = (long)(data[4] * 3906250L);

    char *buf = malloc(buf_size);
    CHECK(buf != NULL);
    size_t n = weft_jl_line(buf, buf_size, &in);
    CHECK(n >= 2 && n <= buf_size && buf[n - 1] == '\n' && memchr(buf, '\n', n - 1) == NULL);
    json_error_t err;
    json_t *o = json_loadb(buf, n - 1, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &err);
    CHECK(o != NULL && json_is_object(o));
    CHECK(json_is_string(json_object_get(o, "time")) && json_string_length(json_object_get(o, "time")) == 24);
    const char *level = json_string_value(json_object_get(o, "level"));
    CHECK(level != NULL && strcmp(level, "warn") == 0);
    CHECK(json_is_string(json_object_get(o, "msg")));
    json_t *t = json_object_get(o, "truncated");
    CHECK(t == NULL || json_is_true(t));
    int truncated = t != NULL;
    check_value(o, "msg", msg, msg_len, truncated, cut);
    for (size_t i = 0; i < n_fields; i++)
        check_value(o, keys[i], fields[i].value, fields[i].len, truncated, 0);
    json_decref(o);
    free(buf);
    return 0;
}
