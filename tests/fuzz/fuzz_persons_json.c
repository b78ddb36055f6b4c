/*
 * libFuzzer target: the persons plugin's request validation and answers.
 *
 * plugins/persons/persons.c is compiled into this binary (#included, so its
 * static helpers can be checked directly too) and driven through its real
 * entry points, handle() and handle_async(), with a fake host table that
 * implements what those paths call. The fake database never runs SQL: it
 * records the parameters and answers with the outcome the input chooses
 * (rows, unavailable, timeout, SQL error), so no PostgreSQL is needed.
 *
 * Input: byte 0 = [bit 7: handle_async | bits 5-6: database outcome |
 * bits 3-4: content type | bits 0-2: request kind], then the request's text:
 * the body for a POST, otherwise "param\nlimit\noffset" (missing parts are
 * absent). Kinds: 0 POST …/persons, 1 GET …/persons, 2 GET …/{id},
 * 3 DELETE …/{id}, 4 GET …/name/{name}, 5 GET …/age-greater-than/{age},
 * 6 PUT …/persons, 7 PATCH …/{id}.
 *
 * What must hold, for any input:
 *   - the plugin answers exactly once with a status from its API
 *     (200 201 204 400 404 405 415 500 503), a JSON body (none for 204) and
 *     `content-type: application/json`; errors are {"error": "..."};
 *   - a statement runs only with validated parameters: a name that is
 *     UTF-8 of 1..255 characters, an age 0..150, MALE/FEMALE, ids 1..2^31-1,
 *     limit 1..1000, offset 0..2^31-1, numbers re-formatted as plain
 *     decimals; and a POST runs one only if the body is a JSON object with
 *     exactly name, age and gender;
 *   - utf8_valid() agrees with jansson's UTF-8 check; a body that passes
 *     the host's json_body check (base/json_guard.c) and parses is at most
 *     JSON_DEPTH_MAX deep;
 *   - every result is freed once, nothing leaks (LeakSanitizer).
 */
#include "../../plugins/persons/persons.c"

#include <stdint.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            __builtin_trap();                                                                                          \
    } while (0)

/* ---- the fake host ---- */

struct weft_req {
    struct weft_req_head head; /* first, as in the host: weft_req_host() reads it */
    const char *method;
    const char *ctype;
    const char *body;
    size_t body_len;
    const char *param_name, *param_value;
    const char *limit, *offset;
    /* response */
    int status;
    char ctype_out[64];
    int n_headers;
    char *res;
    size_t res_len;
    int done_calls, done_rc;
    /* database */
    int outcome; /* 0 rows, 1 unavailable, 2 timeout, 3 SQL error */
    int empty;   /* outcome 0: no row / nothing affected */
    int queries;
    const char *sql;
    int nparams;
    char params[3][1024];
    int param_null[3];
};

struct weft_result {
    int rows;
    long long affected;
    const char *v[2];
};

static const char *f_method(const weft_req *r) { return r->method; }
static const char *f_path(const weft_req *r) { return "/pool/persons"; }
static const char *with_len(const char *v, size_t *len)
{
    if (len != NULL)
        *len = v != NULL ? strlen(v) : 0;
    return v;
}
static const char *f_param(const weft_req *r, const char *name, size_t *len)
{
    return with_len(r->param_name != NULL && strcmp(name, r->param_name) == 0 ? r->param_value : NULL, len);
}
static const char *f_query(const weft_req *r, const char *name, size_t *len)
{
    return with_len(strcmp(name, "limit") == 0 ? r->limit : strcmp(name, "offset") == 0 ? r->offset : NULL, len);
}
static const char *f_header(const weft_req *r, const char *name, size_t *len)
{
    return with_len(strcasecmp(name, "content-type") == 0 ? r->ctype : NULL, len);
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
    r->n_headers++;
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
static weft_rc f_printf(weft_req *r, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return f_write(r, buf, n < 0 ? 0 : (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}
static weft_rc f_error(weft_req *r, int status, const char *msg)
{
    r->status = status;
    r->res_len = 0;
    return f_write(r, msg, strlen(msg));
}
static void f_done(weft_req *r, int rc)
{
    r->done_calls++;
    r->done_rc = rc;
}
static void f_log(const weft_req *r, int level, const char *fmt, ...)
{
    (void)r;
    (void)level;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap); /* formats must be sound even if nobody reads them */
    va_end(ap);
}

static int run_query(weft_req *r, const char *sql, int nparams, const char *const *params, weft_result **res)
{
    r->queries++;
    r->sql = sql;
    CHECK(nparams >= 1 && nparams <= 3);
    r->nparams = nparams;
    for (int i = 0; i < nparams; i++) {
        r->param_null[i] = params[i] == NULL;
        CHECK(params[i] == NULL || strlen(params[i]) < sizeof(r->params[i]));
        snprintf(r->params[i], sizeof(r->params[i]), "%s", params[i] != NULL ? params[i] : "");
    }
    *res = NULL;
    switch (r->outcome) {
    case 1:
        return WEFT_UNAVAILABLE;
    case 2:
        return WEFT_TIMEOUT;
    case 3: {
        weft_result *e = calloc(1, sizeof(*e));
        CHECK(e != NULL);
        e->v[0] = "ERROR:  relation \"person\" does not exist\nLINE 1: SELECT ...";
        *res = e;
        return WEFT_ERROR;
    }
    default: {
        weft_result *ok = calloc(1, sizeof(*ok));
        CHECK(ok != NULL);
        ok->rows = r->empty ? 0 : 1;
        ok->affected = r->empty ? 0 : 1;
        if (sql == SQL_INSERT) {
            ok->v[0] = "7";
            ok->v[1] = "{\"id\" : 7, \"name\" : \"x\", \"age\" : 1, \"gender\" : \"MALE\"}";
        } else {
            ok->v[0] = sql == SQL_GET ? "{\"id\" : 7}" : "[]";
        }
        *res = ok;
        return WEFT_OK;
    }
    }
}

static weft_rc f_db_query(weft_req *r, const char *sql, int nparams, const char *const *params, weft_result **res,
                          weft_db_callback cb, void *arg)
{
    if (cb == NULL)
        return (weft_rc)run_query(r, sql, nparams, params, res);
    weft_result *out;
    int rc = run_query(r, sql, nparams, params, &out);
    cb(r, arg, rc, out); /* the real host calls back later, on the same loop thread */
    return WEFT_AGAIN;
}
static int f_rows(const weft_result *res) { return res->rows; }
static int f_cols(const weft_result *res) { return 2; }
/* As server/db_host.c: NULL for SQL NULL and for a row or column that is
 * not there (the plugin reads row 0 before it checks the row count). */
static const char *f_value(const weft_result *res, int row, int col)
{
    if (row < 0 || row >= res->rows || col < 0 || col >= 2)
        return NULL;
    return res->v[col];
}
static long long f_affected(const weft_result *res) { return res->affected; }
static const char *f_sqlstate(const weft_result *res) { return "42P01"; }
static const char *f_result_error(const weft_result *res) { return res->v[0]; }
static void f_result_free(weft_result *res) { free(res); }

#include "json_body_fake.h"

static const weft_host_log fake_log = {.struct_size = sizeof(weft_host_log), .version = 1, .msg = f_log};
static const weft_host_request fake_request = {
    .struct_size = sizeof(weft_host_request),
    .version = 3,
    .method = f_method,
    .path = f_path,
    .param = f_param,
    .query = f_query,
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
    .writef = f_printf,
    .error = f_error,
    .done = f_done,
};
static const weft_host_db fake_db = {
    .struct_size = sizeof(weft_host_db),
    .version = 1,
    .query = f_db_query,
    .result_rows = f_rows,
    .result_cols = f_cols,
    .result_value = f_value,
    .result_affected = f_affected,
    .result_sqlstate = f_sqlstate,
    .result_error = f_result_error,
    .result_free = f_result_free,
};
static const weft_host fake_host = {
    .struct_size = sizeof(weft_host),
    .abi_version = WEFT_PLUGIN_ABI,
    .server_version = "fuzz",
    .log = &fake_log,
    .request = &fake_request,
    .response = &fake_response,
    .db = &fake_db,
};

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    void *state = (void *)1;
    CHECK(weft_plugin_entry()->init(&fake_host, NULL, &state) == WEFT_OK);
    return 0;
}

/* ---- checks ---- */

static int is_decimal(const char *s, long long lo, long long hi)
{
    if (s[0] == '\0' || (s[0] == '0' && s[1] != '\0'))
        return 0; /* re-formatted numbers have no leading zeros */
    long long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > hi)
            return 0;
        v = v * 10 + (*p - '0');
    }
    return v >= lo && v <= hi;
}

static int depth_of(const json_t *v)
{
    int d = 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            int c = depth_of(x);
            d = c > d ? c : d;
        }
        return d + 1;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            int c = depth_of(x);
            d = c > d ? c : d;
        }
        return d + 1;
    }
    return 0;
}

static void check_page_params(const weft_req *r, int first)
{
    CHECK(r->nparams == first + 2);
    CHECK(is_decimal(r->params[first], 1, LIMIT_MAX));
    CHECK(is_decimal(r->params[first + 1], 0, INT_MAX));
}

/* What a statement may be run with, given the request that led to it. */
static void check_statement(const weft_req *r, int kind)
{
    for (int i = 0; i < r->nparams; i++)
        CHECK(!r->param_null[i]);
    switch (kind) {
    case 0: {
        CHECK(r->sql == SQL_INSERT && r->nparams == 3);
        CHECK(weft_media_type_is(r->ctype, "application/json"));
        CHECK(utf8_valid((const unsigned char *)r->params[0]));
        size_t chars = utf8_chars(r->params[0]);
        CHECK(chars >= 1 && chars <= NAME_MAX_CHARS);
        CHECK(is_decimal(r->params[1], 0, AGE_MAX));
        CHECK(strcmp(r->params[2], "MALE") == 0 || strcmp(r->params[2], "FEMALE") == 0);
        /* independently: the body is an object of exactly these three fields */
        json_t *b = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, NULL);
        CHECK(b != NULL && json_is_object(b) && json_object_size(b) == 3);
        CHECK(json_is_string(json_object_get(b, "name")) && json_is_integer(json_object_get(b, "age")) &&
              json_is_string(json_object_get(b, "gender")));
        CHECK(strcmp(json_string_value(json_object_get(b, "name")), r->params[0]) == 0);
        json_decref(b);
        break;
    }
    case 1:
        CHECK(r->sql == SQL_LIST);
        check_page_params(r, 0);
        break;
    case 2:
    case 3:
        CHECK(r->sql == (kind == 2 ? SQL_GET : SQL_DELETE) && r->nparams == 1);
        CHECK(is_decimal(r->params[0], 1, INT_MAX));
        break;
    case 4:
        CHECK(r->sql == SQL_BY_NAME);
        CHECK(strcmp(r->params[0], r->param_value) == 0 && utf8_valid((const unsigned char *)r->params[0]));
        CHECK(utf8_chars(r->params[0]) <= NAME_MAX_CHARS);
        check_page_params(r, 1);
        break;
    case 5:
        CHECK(r->sql == SQL_OLDER);
        CHECK(is_decimal(r->params[0], 0, INT_MAX));
        check_page_params(r, 1);
        break;
    default:
        CHECK(0); /* PUT and PATCH never reach the database */
    }
}

static void check_answer(const weft_req *r)
{
    static const int allowed[] = {200, 201, 204, 400, 404, 405, 415, 500, 503};
    int ok = 0;
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
        ok |= r->status == allowed[i];
    CHECK(ok);
    if (r->status == 204) {
        CHECK(r->res_len == 0);
        return;
    }
    CHECK(strcmp(r->ctype_out, "application/json") == 0);
    json_error_t err;
    json_t *j = json_loadb(r->res != NULL ? r->res : "", r->res_len, 0, &err);
    CHECK(j != NULL);
    if (r->status >= 400) {
        CHECK(fake_error_shape_ok(j, r->status));
        const char *msg = json_string_value(json_object_get(j, "error"));
        /* the database's own words never reach a client: 5xx bodies are fixed
         * (4xx ones may quote the client's input, e.g. an unknown field name) */
        if (r->status == 500)
            CHECK(strcmp(msg, "database error") == 0);
        if (r->status == 503)
            CHECK(strcmp(msg, "database unavailable") == 0);
    }
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    static const char *const ctypes[] = {"application/json", "application/json; charset=utf-8", NULL, "text/plain"};
    static const char *const methods[] = {"POST", "GET", "GET", "DELETE", "GET", "GET", "PUT", "PATCH"};
    static const char *const params[] = {NULL, NULL, "id", "id", "name", "age", NULL, "id"};
    int kind = data[0] & 7;
    int async = data[0] >> 7;
    weft_req r = {.head.host = &fake_host};
    r.method = methods[kind];
    r.ctype = ctypes[(data[0] >> 3) & 3];
    r.outcome = (data[0] >> 5) & 3;
    r.empty = size % 2;
    r.param_name = params[kind];

    /* The text, NUL-terminated like every request string the host hands out. */
    size_t n = size - 1;
    char *text = malloc(n + 1);
    CHECK(text != NULL);
    memcpy(text, data + 1, n);
    text[n] = '\0';
    char *parts[3] = {NULL, NULL, NULL};
    if (kind == 0 || kind == 6) {
        r.body = text;
        r.body_len = n;
    } else {
        char *p = text;
        for (int i = 0; i < 3 && p != NULL; i++) {
            parts[i] = p;
            char *nl = strchr(p, '\n');
            if (nl != NULL)
                *nl = '\0';
            p = nl != NULL ? nl + 1 : NULL;
        }
        r.param_value = r.param_name != NULL ? parts[0] : NULL;
        r.limit = parts[1];
        r.offset = parts[2];
    }

    weft_plugin_entry_fn entry = weft_plugin_entry;
    const weft_plugin *d = entry();
    int rc;
    if (async) {
        rc = d->handle_async(&r, NULL);
        CHECK(rc == WEFT_OK || rc == WEFT_AGAIN || rc == WEFT_ERROR);
        CHECK(r.done_calls == (rc == WEFT_AGAIN ? 1 : 0));
        CHECK(rc != WEFT_AGAIN || r.queries == 1);
        if (rc == WEFT_AGAIN)
            rc = r.done_rc;
    } else {
        rc = d->handle(&r, NULL);
        CHECK(r.done_calls == 0);
    }
    CHECK(rc == WEFT_OK); /* the fake host never runs out of memory */
    CHECK(r.queries <= 1);
    if (r.queries == 1)
        check_statement(&r, kind);
    check_answer(&r);
    if (r.queries == 1 && r.outcome == 1)
        CHECK(r.status == 503);

    /* The helpers on their own. */
    if (kind == 4 && r.param_value != NULL) {
        json_t *s = json_string(r.param_value);
        CHECK((s != NULL) == utf8_valid((const unsigned char *)r.param_value));
        json_decref(s);
    }
    if (kind == 0 && !weft_json_too_deep(r.body, r.body_len, JSON_DEPTH_MAX)) {
        json_t *b = json_loadb(r.body, r.body_len, JSON_DECODE_ANY, NULL);
        CHECK(b == NULL || depth_of(b) <= JSON_DEPTH_MAX);
        json_decref(b);
    }
    free(r.res);
    free(text);
    return 0;
}
