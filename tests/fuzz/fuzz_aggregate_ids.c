/*
 * libFuzzer target: the aggregate plugin's ids=1,2,3 parameter, turned
 * into one upstream call per id by prepare().
 *
 * plugins/aggregate/aggregate.c is compiled into this binary (#included),
 * with a route of max_ids 100 and max_response 4 MiB. Input: the value of
 * ids (any bytes but NUL, as the host hands a decoded query value out); an
 * input starting with NUL stands for ids absent.
 * What must hold, for any input:
 *   - either it is refused with exactly one 400 and no calls, or it gives
 *     one call per comma-separated item, at most max_ids, each a positive
 *     decimal whose URL is the prefix and that number, with the call's
 *     limits set (timeouts, max_connections, and a body share of at least
 *     4 KiB and at most 1 MiB, never more than max_response in total unless
 *     the 4 KiB floor says so);
 *   - no read past the value's NUL (ASan), nothing leaks.
 * The parser does not recurse: the coroutine stack is not at stake here.
 */
#include "../../plugins/aggregate/aggregate.c"

#include <stdint.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            __builtin_trap();                                                                                          \
    } while (0)

struct weft_req {
    struct weft_req_head head; /* first, as in the host: weft_req_host() reads it */
    const char *ids;
    int errors, status;
};

static const char *f_query(const weft_req *r, const char *name, size_t *len)
{
    CHECK(len == NULL);
    CHECK(strcmp(name, "ids") == 0);
    return r->ids;
}

static weft_rc f_error(weft_req *r, int status, const char *message)
{
    CHECK(message != NULL && message[0] != '\0');
    r->errors++;
    r->status = status;
    return WEFT_OK;
}

static void f_http_free(weft_http_response *res) { CHECK(res == NULL); }

static const weft_host_request fake_request = {
    .struct_size = sizeof(weft_host_request), .version = WEFT_HOST_REQUEST_VERSION, .query = f_query};
static const weft_host_response fake_response = {
    .struct_size = sizeof(weft_host_response), .version = WEFT_HOST_RESPONSE_VERSION, .error = f_error};
static const weft_host_http fake_http = {
    .struct_size = sizeof(weft_host_http), .version = WEFT_HOST_HTTP_VERSION, .response_free = f_http_free};
static const weft_host fake_host = {
    .struct_size = sizeof(weft_host),
    .abi_version = WEFT_PLUGIN_ABI,
    .server_version = "fuzz",
    .request = &fake_request,
    .response = &fake_response,
    .http = &fake_http,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char prefix[] = "http://127.0.0.1:1/p/";
    route rt = {.prefix = prefix, .timeout_ms = 2000, .connect_timeout_ms = 1000, .max_connections = 64,
                .max_ids = 100, .max_response = 4 * 1024 * 1024};
    char *ids = malloc(size + 1);
    CHECK(ids != NULL);
    memcpy(ids, data, size);
    ids[size] = '\0';
    weft_req r = {.head.host = &fake_host, .ids = size > 0 && data[0] == '\0' ? NULL : ids};
    job *j = prepare(&r, &rt);
    if (j == NULL) {
        CHECK(r.errors == 1 && (r.status == 400 || r.status == 503));
    } else {
        CHECK(r.errors == 0 && j->n >= 1 && (long)j->n <= rt.max_ids);
        size_t commas = 0;
        for (const char *p = r.ids; *p; p++)
            commas += *p == ',';
        CHECK(j->n == commas + 1);
        const char *p = r.ids;
        for (size_t i = 0; i < j->n; i++) {
            char *end;
            long v = strtol(p, &end, 10);
            CHECK(v > 0 && v == j->ids[i] && (*end == ',' || *end == '\0'));
            char want[128];
            snprintf(want, sizeof(want), "%s%ld", prefix, v);
            CHECK(strcmp(j->urls[i], want) == 0 && j->rqs[i].url == j->urls[i]);
            CHECK(j->rqs[i].timeout_ms == rt.timeout_ms && j->rqs[i].max_connections == rt.max_connections);
            CHECK(j->rqs[i].max_body >= 4096 && j->rqs[i].max_body <= 1024 * 1024);
            CHECK(j->rqs[i].max_body * j->n <= (size_t)rt.max_response || j->rqs[i].max_body == 4096);
            CHECK(j->res[i] == NULL);
            p = end + (*end == ',');
        }
        job_free(j);
    }
    free(ids);
    return 0;
}
