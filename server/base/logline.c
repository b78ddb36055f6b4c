#include "base/logline.h"

#include <stdint.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at s (n bytes left), 0 if none starts there (RFC 3629). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char b = s[0];
    size_t k = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (k == 0 || n < k)
        return 0;
    /* The second byte's range excludes overlong forms, surrogates and past U+10FFFF. */
    unsigned char lo = b == 0xe0 ? 0xa0 : b == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = b == 0xed ? 0x9f : b == 0xf4 ? 0x8f : 0xbf;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < k; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return k;
}

/*
 * One character of s as JSON string content: its text in out (up to 6
 * bytes) or, with out NULL, only its length; *adv is the input it takes.
 */
static size_t one_char(const unsigned char *s, size_t n, char *out, size_t *adv)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b = s[0];
    const char *esc = b == '"'  ? "\\\""
                      : b == '\\' ? "\\\\"
                      : b == '\n' ? "\\n"
                      : b == '\r' ? "\\r"
                      : b == '\t' ? "\\t"
                                   : NULL;
    *adv = 1;
    if (esc != NULL) {
        if (out != NULL)
            memcpy(out, esc, 2);
        return 2;
    }
    if (b < 0x20 || b == 0x7f) {
        if (out != NULL)
            memcpy(out, (char[]){'\\', 'u', '0', '0', hex[b >> 4], hex[b & 15]}, 6);
        return 6;
    }
    if (b < 0x80) {
        if (out != NULL)
            out[0] = (char)b;
        return 1;
    }
    size_t k = utf8_len(s, n);
    if (k == 0) { /* one byte that is not UTF-8: U+FFFD, and on at the next byte */
        if (out != NULL)
            memcpy(out, "\\ufffd", 6);
        return 6;
    }
    if (out != NULL)
        memcpy(out, s, k);
    *adv = k;
    return k;
}

char *weft_jl_escape(char *p, char *end, const char *s, size_t n, size_t *used)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        char buf[6];
        size_t adv, len = one_char(u + i, n - i, buf, &adv);
        if (len > (size_t)(end - p))
            break;
        memcpy(p, buf, len);
        p += len;
        i += adv;
    }
    *used = i;
    return p;
}

/* The JSON length of s[0..n), stopping at cap. */
static size_t measure(const char *s, size_t n, size_t cap)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t total = 0;
    for (size_t i = 0, adv; i < n && total <= cap; i += adv)
        total += one_char(u + i, n - i, NULL, &adv);
    return total;
}

static char *put(char *p, char *end, const char *s)
{
    size_t n = strlen(s);
    if (n > (size_t)(end - p))
        n = (size_t)(end - p);
    memcpy(p, s, n);
    return p + n;
}

static char *put_num(char *p, char *end, unsigned v, int width)
{
    char d[10];
    for (int i = width - 1; i >= 0; i--, v /= 10)
        d[i] = (char)('0' + v % 10);
    for (int i = 0; i < width && p < end; i++)
        *p++ = d[i];
    return p;
}

char *weft_jl_time(char *p, char *end, const struct timespec *ts)
{
    /* Days to a civil date (Howard Hinnant's algorithm): gmtime_r may take
     * a lock, which a signal handler must not. */
    int64_t secs = (int64_t)ts->tv_sec, days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
    int64_t rem = secs - days * 86400, z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097, yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int64_t day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
    int64_t year = yoe + era * 400 + (month <= 2);
    p = put_num(p, end, (unsigned)(year < 0 ? 0 : year > 9999 ? 9999 : year), 4);
    p = put_num(put(p, end, "-"), end, (unsigned)month, 2);
    p = put_num(put(p, end, "-"), end, (unsigned)day, 2);
    p = put_num(put(p, end, "T"), end, (unsigned)(rem / 3600), 2);
    p = put_num(put(p, end, ":"), end, (unsigned)(rem / 60 % 60), 2);
    p = put_num(put(p, end, ":"), end, (unsigned)(rem % 60), 2);
    p = put_num(put(p, end, "."), end, (unsigned)(ts->tv_nsec / 1000000), 3);
    return put(p, end, "Z");
}

/* A cut at a byte count may split the last character: drop its start. */
static size_t drop_split_tail(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char b = u[n - back];
        if ((b & 0xc0) == 0x80)
            continue;
        size_t need = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 1;
        return need > back ? n - back : n;
    }
    return n;
}

#define TAIL ",\"truncated\":true}\n"
#define TAIL_LEN (sizeof(TAIL) - 1)

/* `,"key":"value"` below end, the value cut to fit (and then ending in
 * "..."); nothing at all when not even that fits. Sets *cut when shortened. */
static char *put_field(char *p, char *end, const char *key, const char *v, size_t n, int was_cut, int *cut)
{
    size_t skeleton = 2 + strlen(key) + 3 + 4;
    if ((size_t)(end - p) < skeleton) {
        *cut = 1;
        return p;
    }
    p = put(put(put(p, end, ",\""), end, key), end, "\":\"");
    size_t used;
    p = weft_jl_escape(p, end - 4, v, n, &used);
    if (used < n || was_cut) {
        p = put(p, end, "...");
        *cut = 1;
    }
    return put(p, end, "\"");
}

size_t weft_jl_line(char *buf, size_t size, const weft_jl_line_in *in)
{
    char *p = buf, *end = buf + size - TAIL_LEN; /* the tail always fits */
    p = weft_jl_time(put(p, end, "{\"time\":\""), end, &in->when);
    p = put(put(put(p, end, "\",\"level\":\""), end, in->level), end, "\"");
    /* The fields are short and capped: their room is kept, the message takes the rest. */
    size_t fields_room = 0;
    for (size_t i = 0; i < in->n_fields; i++) {
        size_t m = measure(in->fields[i].value, in->fields[i].len, WEFT_JL_FIELD_MAX);
        fields_room += 2 + strlen(in->fields[i].key) + 3 + 4 + (m < WEFT_JL_FIELD_MAX ? m : WEFT_JL_FIELD_MAX);
    }
    size_t left = (size_t)(end - p);
    char *msg_end = left > fields_room + 64 ? end - fields_room : p + (left < 64 ? left : 64);
    int cut = 0;
    size_t msg_len = in->msg_cut ? drop_split_tail(in->msg, in->msg_len) : in->msg_len;
    p = put_field(p, msg_end, "msg", in->msg, msg_len, in->msg_cut, &cut);
    for (size_t i = 0; i < in->n_fields; i++) {
        const weft_jl_field *f = &in->fields[i];
        size_t want = 2 + strlen(f->key) + 3 + 4 + WEFT_JL_FIELD_MAX;
        p = put_field(p, (size_t)(end - p) > want ? p + want : end, f->key, f->value, f->len, 0, &cut);
    }
    memcpy(p, cut ? TAIL : "}\n", cut ? TAIL_LEN : 2);
    return (size_t)(p - buf) + (cut ? TAIL_LEN : 2);
}
