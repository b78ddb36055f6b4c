/*
 * libFuzzer target: the events plugin's query parameters (count,
 * interval_ms), the only client input it parses.
 *
 * plugins/events/events.c is compiled into this binary (#included) and its
 * setup() runs on each input through a fake host table. Input: byte 0 says
 * which parameters are present (bit 0 count, bit 1 interval_ms); the rest is
 * their two values separated by the first NUL (a request's values are
 * NUL-terminated, percent-decoded strings: any byte but NUL).
 * What must hold, for any input:
 *   - either it is refused with exactly one 400 and nothing else, or both
 *     values are in range (count 1..100000, interval_ms 0..60000), equal to
 *     the decimal given (or the defaults 5 and 1000 when absent);
 *   - no read past a value's NUL (ASan), nothing leaks.
 * The parser does not recurse: the coroutine stack is not at stake here.
 */
#include "../../plugins/events/events.c"

#include <errno.h>
#include <stdint.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            __builtin_trap();                                                                                          \
    } while (0)

struct weft_req {
    struct weft_req_head head; /* first, as in the host: weft_req_host() reads it */
    const char *count, *interval;
    int errors, status;
};

static const char *f_query(const weft_req *r, const char *name, size_t *len)
{
    CHECK(len == NULL);
    if (strcmp(name, "count") == 0)
        return r->count;
    if (strcmp(name, "interval_ms") == 0)
        return r->interval;
    CHECK(0);
    return NULL;
}

static weft_rc f_error_json(weft_req *r, int status, const char *message)
{
    CHECK(message != NULL && message[0] != '\0');
    r->errors++;
    r->status = status;
    return WEFT_OK;
}

static const weft_host_request fake_request = {
    .struct_size = sizeof(weft_host_request), .version = WEFT_HOST_REQUEST_VERSION, .query = f_query};
static const weft_host_response fake_response = {
    .struct_size = sizeof(weft_host_response), .version = WEFT_HOST_RESPONSE_VERSION, .error_json = f_error_json};
static const weft_host fake_host = {
    .struct_size = sizeof(weft_host),
    .abi_version = WEFT_PLUGIN_ABI,
    .server_version = "fuzz",
    .request = &fake_request,
    .response = &fake_response,
};

/* What strtol would make of a whole decimal, or 0 when it is not one in range. */
static int expect(const char *v, long def, long lo, long hi, long *out)
{
    if (v == NULL) {
        *out = def;
        return 1;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    *out = x;
    return *v != '\0' && *end == '\0' && errno == 0 && x >= lo && x <= hi;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    char *text = malloc(size + 1); /* the values, each NUL-terminated */
    CHECK(text != NULL);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    text[size] = '\0';
    const char *second = text + strlen(text) + 1;
    weft_req r = {.head.host = &fake_host, .count = (data[0] & 1) ? text : NULL, .interval = (data[0] & 2) ? second : NULL};
    stream s = {0};
    int rc = setup(&r, &s);
    long count, interval;
    int ok = expect(r.count, 5, 1, 100000, &count);
    ok = ok && expect(r.interval, 1000, 0, 60000, &interval);
    if (rc == 0) {
        CHECK(ok && r.errors == 0);
        CHECK(s.count == count && s.interval_ms == interval);
    } else {
        CHECK(!ok && r.errors == 1 && r.status == 400);
    }
    free(text);
    return 0;
}
