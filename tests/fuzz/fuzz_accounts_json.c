/*
 * libFuzzer target: the accounts plugin's transfer body, parsed on a stack
 * the size of a coroutine's.
 *
 * plugins/accounts/accounts.c is compiled into this binary (#included) and
 * its parse_transfer() runs for each input on a thread whose stack is
 * coroutine.stack_size's default, 64 KiB, behind the thread's guard page:
 * a parser that recurses
 * with the input's nesting overflows it and the fuzzer reports the crash.
 * That is what a 2 KB body nested 1,000 deep did to weft (issue 30).
 *
 * Input: byte 0 picks the content type (bits 0-1); the rest is the body.
 * What must hold, for any input:
 *   - either the transfer is refused with 400, 413 or 415, a JSON
 *     {"error": ...} body and content-type application/json, or it is
 *     accepted with from and to 1..2^31-1 and different, amount
 *     1..10^12, and the three statement parameters their plain decimals;
 *   - a body over 4096 bytes is never accepted, a wrong content type
 *     always gets 415;
 *   - nothing leaks (LeakSanitizer).
 */
#include "../../plugins/accounts/accounts.c"

#include <pthread.h>
#include <stdint.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            __builtin_trap();                                                                                          \
    } while (0)

/* The default coroutine.stack_size, even under ASan (where weft maps four
 * times as much): the deep part of any parse is jansson's own recursion,
 * which is not instrumented, so the sanitized build must overflow where
 * the plain one does. */
#define CORO_STACK (64 * 1024)

struct weft_req {
    struct weft_req_head head; /* first, as in the host: weft_req_host() reads it */
    const char *ctype;
    const char *body;
    size_t body_len;
    int status;
    char ctype_out[64];
    char *res;
    size_t res_len;
};

static const char *f_header(const weft_req *r, const char *name, size_t *len)
{
    const char *v = strcasecmp(name, "content-type") == 0 ? r->ctype : NULL;
    if (len != NULL)
        *len = v != NULL ? strlen(v) : 0;
    return v;
}
static const char *f_body(const weft_req *r, size_t *len)
{
    *len = r->body_len;
    return r->body;
}
static weft_rc f_status(weft_req *r, int status)
{
    r->status = status;
    return WEFT_OK;
}
static weft_rc f_header_out(weft_req *r, const char *name, const char *value)
{
    CHECK(name != NULL && value != NULL);
    if (strcasecmp(name, "content-type") == 0)
        snprintf(r->ctype_out, sizeof(r->ctype_out), "%s", value);
    return WEFT_OK;
}
static weft_rc f_write(weft_req *r, const void *data, size_t len)
{
    char *n = realloc(r->res, r->res_len + len + 1);
    CHECK(n != NULL);
    memcpy(n + r->res_len, data, len);
    r->res = n;
    r->res_len += len;
    r->res[r->res_len] = '\0';
    return WEFT_OK;
}

/* On the coroutine-sized stack with the plugin. */
#include "json_body_fake.h"

static const weft_host_request fake_request = {
    .struct_size = sizeof(weft_host_request),
    .version = 3,
    .header = f_header,
    .body = f_body,
    .json_body = f_json_body,
};
static const weft_host_response fake_response = {
    .struct_size = sizeof(weft_host_response),
    .version = 1,
    .status = f_status,
    .header = f_header_out,
    .write = f_write,
};
static const weft_host fake_host = {
    .struct_size = sizeof(weft_host),
    .abi_version = WEFT_PLUGIN_ABI,
    .server_version = "fuzz",
    .request = &fake_request,
    .response = &fake_response,
};

typedef struct job {
    weft_req *r;
    transfer t;
    int rc;
} job;

static void *run(void *arg)
{
    job *j = arg;
    j->rc = parse_transfer(j->r, &j->t);
    return NULL;
}

static int is_decimal(const char *s, long long lo, long long hi)
{
    if (s[0] == '\0' || (s[0] == '0' && s[1] != '\0'))
        return 0;
    long long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > hi)
            return 0;
        v = v * 10 + (*p - '0');
    }
    return v >= lo && v <= hi;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    static const char *const ctypes[] = {"application/json", "application/json; charset=utf-8", NULL, "text/plain"};
    weft_req r = {.head.host = &fake_host, .ctype = ctypes[data[0] & 3]};
    /* The body, NUL-terminated like every request string the host hands out. */
    char *body = malloc(size);
    CHECK(body != NULL);
    memcpy(body, data + 1, size - 1);
    body[size - 1] = '\0';
    r.body = body;
    r.body_len = size - 1;

    job j = {.r = &r, .rc = -2};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    CHECK(pthread_attr_setstacksize(&attr, CORO_STACK) == 0);
    pthread_t t;
    CHECK(pthread_create(&t, &attr, run, &j) == 0);
    pthread_join(t, NULL);
    pthread_attr_destroy(&attr);

    if (j.rc == 0) {
        CHECK(r.status == 0 && r.res == NULL);
        CHECK((data[0] & 3) < 2 && r.body_len <= BODY_MAX);
        CHECK(j.t.from != j.t.to);
        CHECK(is_decimal(j.t.p[0], 1, 2147483647) && atoll(j.t.p[0]) == j.t.from);
        CHECK(is_decimal(j.t.p[1], 1, 2147483647) && atoll(j.t.p[1]) == j.t.to);
        CHECK(is_decimal(j.t.p[2], 1, 1000000000000LL) && atoll(j.t.p[2]) == j.t.amount);
    } else {
        CHECK(j.rc == -1);
        CHECK(r.status == 400 || r.status == 413 || r.status == 415);
        CHECK((data[0] & 3) < 2 || r.status == 415);
        CHECK(strcmp(r.ctype_out, "application/json") == 0);
        json_error_t err;
        json_t *e = json_loads(r.res, 0, &err);
        CHECK(fake_error_shape_ok(e, r.status));
        json_decref(e);
    }
    free(r.res);
    free(body);
    return 0;
}
