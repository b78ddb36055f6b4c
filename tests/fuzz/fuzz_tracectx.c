/*
 * libFuzzer target: W3C trace context as a client sends it.
 *
 * Input: the first line is a traceparent value, the rest a tracestate
 * value. Both go through base/tracectx.c as request/trace.c uses them.
 *
 * Besides "no crash, no overread" (ASan+UBSan), it checks what the rest of
 * the server relies on:
 *   - an accepted traceparent has non-zero ids, and formatted back it is
 *     its own first 55 characters with the version set to 00;
 *   - an accepted tracestate is at most 512 bytes of printable ASCII
 *     (tabs only as blanks around members): what weft passes on.
 */
#include <stdint.h>
#include <string.h>

#include "base/tracectx.h"

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            __builtin_trap();                                                                                                   \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    const char *nl = memchr(s, '\n', size);
    size_t tp_len = nl != NULL ? (size_t)(nl - s) : size;
    weft_traceparent p;
    if (weft_traceparent_parse(s, tp_len, &p) == 0) {
        static const uint8_t zero[16];
        CHECK(memcmp(p.trace_id, zero, 16) != 0 && memcmp(p.span_id, zero, 8) != 0);
        char out[WEFT_TRACEPARENT_LEN + 1];
        weft_traceparent_format(out, p.trace_id, p.span_id, p.flags);
        CHECK(tp_len >= WEFT_TRACEPARENT_LEN && memcmp(out + 2, s + 2, WEFT_TRACEPARENT_LEN - 2) == 0);
    }
    if (nl != NULL) {
        const char *ts = nl + 1;
        size_t ts_len = size - tp_len - 1;
        if (weft_tracestate_valid(ts, ts_len)) {
            CHECK(ts_len <= WEFT_TRACESTATE_MAX_LEN);
            for (size_t i = 0; i < ts_len; i++)
                CHECK((ts[i] >= 0x20 && ts[i] <= 0x7e) || ts[i] == '\t'); /* a tab only around members */
        }
    }
    return 0;
}
