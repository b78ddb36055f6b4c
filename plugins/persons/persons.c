/*
 * persons — a JSON CRUD API over the `person` table (sql/001_schema.sql).
 *
 *   POST   …/persons                       create   → 201 + Location
 *   GET    …/persons                       list     (?limit=1..1000&offset=0..)
 *   GET    …/persons/{id}                  one      → 200 or 404
 *   DELETE …/persons/{id}                  delete   → 204 or 404
 *   GET    …/persons/name/{name}           by exact name (paged)
 *   GET    …/persons/age-greater-than/{age} older than age (paged)
 *
 * One plugin serves every route: which operation a request means follows
 * from its method and from which path parameter its route pattern has.
 *
 * The division of labour is deliberate: PostgreSQL builds every JSON answer
 * (json_build_object, json_agg), so no row is ever formatted by hand; jansson
 * parses and validates every JSON body and builds the error bodies; every
 * statement is a constant with $n parameters, so no input ever becomes SQL.
 *
 * The blocking entry point (pool, coroutine) and the reactive one share all of
 * it: plan() turns a request into an operation or an error answer, answer()
 * turns a database outcome into the response; only the waiting differs.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <weft/plugin.h>

#define NAME_MAX_CHARS 255 /* varchar(255): PostgreSQL counts characters, so do we */
#define AGE_MAX 150
#define LIMIT_DEFAULT 100
#define LIMIT_MAX 1000
/* A person is a flat object (depth 1): deeper bodies are refused before jansson sees them (request->json_body). */
#define JSON_DEPTH_MAX 16

/* ---- SQL: constants only; every value is a $n parameter ---- */

#define PERSON_JSON "json_build_object('id', id, 'name', name, 'age', age, 'gender', gender)"
/* Pages aggregate a LIMIT/OFFSET subquery; ORDER BY inside json_agg, because
 * an aggregate does not promise to keep its input's order. coalesce: json_agg
 * of no rows is NULL, the API answers []. */
#define PAGE_SQL(where, lim, off)                                                                  \
    "SELECT coalesce(json_agg(" PERSON_JSON " ORDER BY id), '[]'::json)::text"                     \
    " FROM (SELECT id, name, age, gender FROM person " where " ORDER BY id LIMIT " lim "::int"      \
    " OFFSET " off "::int) AS page"

static const char SQL_INSERT[] = "INSERT INTO person (name, age, gender) VALUES ($1::varchar, $2::int, $3::varchar)"
                                 " RETURNING id, " PERSON_JSON "::text";
static const char SQL_GET[] = "SELECT " PERSON_JSON "::text FROM person WHERE id = $1::int";
static const char SQL_DELETE[] = "DELETE FROM person WHERE id = $1::int";
static const char SQL_LIST[] = PAGE_SQL("", "$1", "$2");
static const char SQL_BY_NAME[] = PAGE_SQL("WHERE name = $1::varchar", "$2", "$3");
static const char SQL_OLDER[] = PAGE_SQL("WHERE age > $1::int", "$2", "$3");

/* ---- one request's operation ---- */

typedef enum op_kind { OP_CREATE, OP_GET, OP_DELETE, OP_PAGE } op_kind;

typedef struct op {
    op_kind kind;
    const char *sql;
    int nparams;
    const char *params[3];
    /* Numeric parameters as we re-formatted them, never the client's text;
     * they live here so they outlast the query whichever way it waits. */
    char num[3][24];
    json_t *body;  /* OP_CREATE: owns the strings params[0] and [2] point into */
    long long id;  /* OP_GET, OP_DELETE: for the 404 message */
} op;

/* plan() result meaning "run o->sql"; otherwise it returns the weft_rc of
 * the error response it has already written. */
#define PLANNED 1

/* ---- responses ---- */

static int send_json(weft_req *req, int status, const char *text, size_t len)
{
    const weft_host *h = weft_req_host(req);
    h->response->status(req, status);
    if (h->response->header(req, "content-type", "application/json") < 0 || h->response->write(req, text, len) < 0)
        return WEFT_ERROR;
    return WEFT_OK;
}

/* vsnprintf may cut a long message inside a UTF-8 sequence, which jansson
 * would refuse: drop an incomplete sequence at the end. */
static void trim_partial_utf8(char *s)
{
    size_t n = strlen(s);
    size_t i = n;
    while (i > 0 && n - i < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
        i--;
    if (i == 0)
        return;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (n - (i - 1) < need)
        s[i - 1] = '\0';
}

/* {"error": "..."} built by jansson, so the message is always escaped right.
 * Messages speak about the request only: database errors go to the log. */
static int send_error_v(weft_req *req, int status, const char *fmt, va_list ap)
{
    char msg[256];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    trim_partial_utf8(msg);
    json_t *obj = json_pack("{s:s}", "error", msg);
    if (obj == NULL) /* still not UTF-8 (jansson's own error text): say less */
        obj = json_pack("{s:s}", "error", status < 500 ? "invalid request" : "internal error");
    char *text = obj != NULL ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    if (text == NULL)
        return WEFT_ERROR; /* out of memory: the host answers 500 */
    int rc = send_json(req, status, text, strlen(text));
    free(text);
    return rc;
}

static int send_error(weft_req *req, int status, const char *fmt, ...) WEFT_PRINTF(3, 4);
static int send_error(weft_req *req, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = send_error_v(req, status, fmt, ap);
    va_end(ap);
    return rc;
}

static int method_not_allowed(weft_req *req, const char *method, const char *allow)
{
    const weft_host *h = weft_req_host(req);
    /* Set after send_error: it writes status and body, headers add up. */
    int rc = send_error(req, 405, "method %.16s not allowed here", method);
    if (h->response->header(req, "allow", allow) < 0)
        return WEFT_ERROR;
    return rc;
}

/* ---- validation ---- */

/* Digits only: no sign, space, fraction or exponent, so "+1", " 1", "1e3" and
 * "0x1" are refused rather than guessed at. Checking against `hi` after each
 * digit also keeps the arithmetic from overflowing. */
static int parse_bounded(const char *s, long long lo, long long hi, long long *out)
{
    if (s == NULL || *s == '\0')
        return 0;
    long long v = 0;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        v = v * 10 + (*s - '0');
        if (v > hi)
            return 0;
    }
    if (v < lo)
        return 0;
    *out = v;
    return 1;
}

/* Path parameters arrive percent-decoded, so "%FF" is a raw byte that
 * PostgreSQL would reject as a statement error; refuse it as bad input. A
 * strict RFC 3629 check: no overlong forms, surrogates or values past U+10FFFF. */
static int utf8_valid(const unsigned char *s)
{
    while (*s != '\0') {
        unsigned char c = *s;
        int n;
        unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
        if (c < 0x80) {
            s++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else {
            return 0;
        }
        if (s[1] < lo || s[1] > hi)
            return 0;
        for (int i = 2; i <= n; i++)
            if ((s[i] & 0xC0) != 0x80)
                return 0;
        s += n + 1;
    }
    return 1;
}

/* Characters, not bytes, of valid UTF-8: count all but continuation bytes. */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s != '\0'; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* How many bytes of `s` fit in `max` without cutting a character. */
static int utf8_prefix(const char *s, int max)
{
    int n = (int)strnlen(s, (size_t)max + 1);
    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* ?limit= and ?offset= into params[first] and [first + 1]. */
static int plan_page(weft_req *req, op *o, int first)
{
    const weft_host *h = weft_req_host(req);
    long long limit = LIMIT_DEFAULT, offset = 0;
    const char *l = h->request->query(req, "limit", NULL);
    const char *f = h->request->query(req, "offset", NULL);
    if (l != NULL && !parse_bounded(l, 1, LIMIT_MAX, &limit))
        return send_error(req, 400, "limit must be an integer between 1 and %d", LIMIT_MAX);
    if (f != NULL && !parse_bounded(f, 0, INT_MAX, &offset))
        return send_error(req, 400, "offset must be an integer between 0 and %d", INT_MAX);
    snprintf(o->num[first], sizeof(o->num[first]), "%lld", limit);
    snprintf(o->num[first + 1], sizeof(o->num[first + 1]), "%lld", offset);
    o->params[first] = o->num[first];
    o->params[first + 1] = o->num[first + 1];
    o->nparams = first + 2;
    o->kind = OP_PAGE;
    return PLANNED;
}

static int plan_id(weft_req *req, op *o, const char *text, op_kind kind)
{
    if (!parse_bounded(text, 1, INT_MAX, &o->id))
        return send_error(req, 400, "id must be an integer between 1 and %d", INT_MAX);
    snprintf(o->num[0], sizeof(o->num[0]), "%lld", o->id);
    o->params[0] = o->num[0];
    o->nparams = 1;
    o->kind = kind;
    o->sql = kind == OP_GET ? SQL_GET : SQL_DELETE;
    return PLANNED;
}

static int plan_by_name(weft_req *req, op *o, const char *name)
{
    if (!utf8_valid((const unsigned char *)name))
        return send_error(req, 400, "name must be valid UTF-8");
    if (utf8_chars(name) > NAME_MAX_CHARS)
        return send_error(req, 400, "name must be at most %d characters", NAME_MAX_CHARS);
    o->params[0] = name; /* the request's string lives as long as the request */
    o->sql = SQL_BY_NAME;
    return plan_page(req, o, 1);
}

static int plan_older(weft_req *req, op *o, const char *age)
{
    long long a;
    if (!parse_bounded(age, 0, INT_MAX, &a))
        return send_error(req, 400, "age must be an integer between 0 and %d", INT_MAX);
    snprintf(o->num[0], sizeof(o->num[0]), "%lld", a);
    o->params[0] = o->num[0];
    o->sql = SQL_OLDER;
    return plan_page(req, o, 1);
}

/* Checks one field of the body; returns NULL if fine, else the reason (a
 * static string naming the field). */
static const char *check_name(const json_t *v)
{
    if (v == NULL)
        return "name is required";
    if (!json_is_string(v))
        return "name must be a string";
    /* jansson guarantees valid UTF-8 without NUL (no JSON_ALLOW_NUL). */
    size_t n = utf8_chars(json_string_value(v));
    if (n == 0)
        return "name must not be empty";
    if (n > NAME_MAX_CHARS)
        return "name must be at most 255 characters";
    return NULL;
}

static const char *check_age(const json_t *v)
{
    if (v == NULL)
        return "age is required";
    /* json_is_integer: 30.0 and "30" are refused, not converted. */
    if (!json_is_integer(v))
        return "age must be an integer";
    json_int_t a = json_integer_value(v);
    if (a < 0 || a > AGE_MAX)
        return "age must be between 0 and 150";
    return NULL;
}

static const char *check_gender(const json_t *v)
{
    if (v == NULL)
        return "gender is required";
    if (!json_is_string(v) || (strcmp(json_string_value(v), "MALE") != 0 && strcmp(json_string_value(v), "FEMALE") != 0))
        return "gender must be \"MALE\" or \"FEMALE\"";
    return NULL;
}

static int plan_create(weft_req *req, op *o)
{
    const weft_host *h = weft_req_host(req);
    /* application/json, nested no deeper than a person could be (else the
     * host has answered 415 or 400). */
    size_t len = 0;
    const char *text = NULL;
    if (h->request->json_body(req, JSON_DEPTH_MAX, &text, &len) != WEFT_OK)
        return WEFT_OK;
    json_error_t err;
    /* Duplicate keys would make "which name?" ambiguous: refuse them. */
    json_t *body = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (body == NULL)
        return send_error(req, 400, "invalid JSON at line %d, column %d: %s", err.line, err.column, err.text);
    if (!json_is_object(body)) {
        json_decref(body);
        return send_error(req, 400, "the body must be a JSON object with name, age and gender");
    }
    /* Unknown fields are refused rather than dropped: a client that
     * misspells one hears about it. */
    const char *key;
    json_t *value;
    json_object_foreach(body, key, value) {
        if (strcmp(key, "name") != 0 && strcmp(key, "age") != 0 && strcmp(key, "gender") != 0) {
            int rc = send_error(req, 400, "unknown field \"%.*s\"", utf8_prefix(key, 64), key);
            json_decref(body);
            return rc;
        }
    }
    json_t *name = json_object_get(body, "name"), *age = json_object_get(body, "age");
    json_t *gender = json_object_get(body, "gender");
    const char *why = check_name(name);
    if (why == NULL)
        why = check_age(age);
    if (why == NULL)
        why = check_gender(gender);
    if (why != NULL) {
        json_decref(body);
        return send_error(req, 400, "%s", why);
    }
    snprintf(o->num[1], sizeof(o->num[1]), "%lld", (long long)json_integer_value(age));
    o->params[0] = json_string_value(name);
    o->params[1] = o->num[1];
    o->params[2] = json_string_value(gender);
    o->nparams = 3;
    o->body = body;
    o->kind = OP_CREATE;
    o->sql = SQL_INSERT;
    return PLANNED;
}

/* The route pattern decides the resource (which parameter it has), the
 * method the operation. Routes may leave `methods` open, so a method that
 * fits no operation is answered here too. */
static int plan(weft_req *req, op *o)
{
    const weft_host *h = weft_req_host(req);
    memset(o, 0, sizeof(*o));
    const char *method = h->request->method(req);
    int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    const char *id = h->request->param(req, "id", NULL);
    const char *name = h->request->param(req, "name", NULL);
    const char *age = h->request->param(req, "age", NULL);
    if (id != NULL) {
        if (get)
            return plan_id(req, o, id, OP_GET);
        if (strcmp(method, "DELETE") == 0)
            return plan_id(req, o, id, OP_DELETE);
        return method_not_allowed(req, method, "GET, HEAD, DELETE");
    }
    if (name != NULL)
        return get ? plan_by_name(req, o, name) : method_not_allowed(req, method, "GET, HEAD");
    if (age != NULL)
        return get ? plan_older(req, o, age) : method_not_allowed(req, method, "GET, HEAD");
    if (get) {
        o->sql = SQL_LIST;
        return plan_page(req, o, 0);
    }
    if (strcmp(method, "POST") == 0)
        return plan_create(req, o);
    return method_not_allowed(req, method, "GET, HEAD, POST");
}

/* ---- answers ---- */

static int database_failed(weft_req *req, int rc, const weft_result *res)
{
    const weft_host *h = weft_req_host(req);
    switch (rc) {
    case WEFT_TIMEOUT:
        h->log->msg(req, WEFT_LOG_WARN, "statement timed out");
        /* fall through */
    case WEFT_UNAVAILABLE:
    case WEFT_CANCELLED: /* shutting down: another instance may answer */
        if (send_error(req, 503, "database unavailable") < 0 || h->response->header(req, "retry-after", "1") < 0)
            return WEFT_ERROR;
        return WEFT_OK;
    default: {
        /* libpq's message continues with context lines (LINE 1: …, a caret):
         * the first line keeps the log one line per event. */
        const char *msg = res != NULL ? h->db->result_error(res) : "no result";
        if (msg == NULL)
            msg = "no message";
        h->log->msg(req, WEFT_LOG_ERROR, "query failed (rc %d, SQLSTATE %s): %.*s", rc,
                  res != NULL ? h->db->result_sqlstate(res) : "none", (int)strcspn(msg, "\n"), msg);
        return send_error(req, 500, "database error");
    }
    }
}

/* A result that does not have the shape our own SQL promises is a server
 * fault (a schema that differs from sql/, say), not the client's. */
static int bad_shape(weft_req *req)
{
    const weft_host *h = weft_req_host(req);
    h->log->msg(req, WEFT_LOG_ERROR, "unexpected result shape; is the schema from sql/ applied?");
    return send_error(req, 500, "database error");
}

static int created(weft_req *req, const weft_result *res)
{
    const weft_host *h = weft_req_host(req);
    const char *id = h->db->result_value(res, 0, 0);
    const char *json = h->db->result_value(res, 0, 1);
    if (h->db->result_rows(res) != 1 || id == NULL || json == NULL)
        return bad_shape(req);
    /* Location: the collection's path as the client used it, plus the id. */
    const char *path = h->request->path(req);
    size_t plen = strlen(path);
    int slash = plen == 0 || path[plen - 1] != '/';
    char *loc = malloc(plen + (size_t)slash + strlen(id) + 1);
    if (loc == NULL)
        return WEFT_ERROR;
    sprintf(loc, "%s%s%s", path, slash ? "/" : "", id);
    int rc = send_json(req, 201, json, strlen(json));
    if (rc == WEFT_OK && h->response->header(req, "location", loc) < 0)
        rc = WEFT_ERROR;
    free(loc);
    return rc;
}

static int answer(weft_req *req, const op *o, const weft_result *res)
{
    const weft_host *h = weft_req_host(req);
    const char *json;
    switch (o->kind) {
    case OP_CREATE:
        return created(req, res);
    case OP_GET:
        if (h->db->result_rows(res) == 0)
            return send_error(req, 404, "person %lld not found", o->id);
        json = h->db->result_value(res, 0, 0);
        return json != NULL ? send_json(req, 200, json, strlen(json)) : bad_shape(req);
    case OP_DELETE:
        if (h->db->result_affected(res) == 0)
            return send_error(req, 404, "person %lld not found", o->id);
        h->response->status(req, 204);
        return WEFT_OK;
    case OP_PAGE:
        json = h->db->result_rows(res) == 1 ? h->db->result_value(res, 0, 0) : NULL;
        return json != NULL ? send_json(req, 200, json, strlen(json)) : bad_shape(req);
    }
    return bad_shape(req);
}

/* Writes the response for a finished query and releases what the operation
 * and the result hold. */
static int finish(weft_req *req, op *o, int rc, weft_result *res)
{
    const weft_host *h = weft_req_host(req);
    int out = rc == WEFT_OK && res != NULL ? answer(req, o, res) : database_failed(req, rc, res);
    if (res != NULL)
        h->db->result_free(res);
    json_decref(o->body);
    o->body = NULL;
    return out;
}

/* ---- entry points ---- */

static weft_rc persons_init(const weft_host *h, weft_init *ctx, void **state)
{
    /* A server built without database support has no db group: say so
     * here rather than failing every request. */
    if (h->db == NULL) {
        h->init->error(ctx, "this weft (%s) has no database API; the persons plugin needs a host with "
                           "the db group (plugin API with PostgreSQL support)",
                      h->server_version != NULL ? h->server_version : "unknown version");
        return WEFT_ERROR;
    }
    if (!WEFT_GROUP_AT_LEAST(h->request, 3)) {
        h->init->error(ctx, "this weft (%s) has no request->json_body (request group version 3)",
                      h->server_version != NULL ? h->server_version : "unknown version");
        return WEFT_ERROR;
    }
    *state = NULL; /* nothing per route: the SQL is constant, the host owns the connections */
    return WEFT_OK;
}

static void persons_fini(void *state)
{
    (void)state;
}

/* pool: blocks the worker; coroutine: suspends it until the result is in. */
static weft_rc persons_handle(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    (void)state;
    op o;
    int p = plan(req, &o);
    if (p != PLANNED)
        return p;
    weft_result *res = NULL;
    int rc = h->db->query(req, o.sql, o.nparams, o.params, &res, NULL, NULL);
    return finish(req, &o, rc, res);
}

/* On the loop thread, once the query has an outcome. */
static void on_result(weft_req *req, void *arg, int rc, weft_result *res)
{
    const weft_host *h = weft_req_host(req);
    op *o = arg;
    int out = finish(req, o, rc, res);
    free(o);
    h->response->done(req, out);
}

static weft_rc persons_handle_async(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    (void)state;
    /* On the heap: the operation must outlive this call until on_result. */
    op *o = malloc(sizeof(*o));
    if (o == NULL)
        return send_error(req, 500, "out of memory");
    int p = plan(req, o);
    if (p != PLANNED) {
        free(o); /* plan() holds nothing when it answered itself */
        return p;
    }
    h->db->query(req, o->sql, o->nparams, o->params, NULL, on_result, o);
    return WEFT_AGAIN;
}

static const weft_plugin persons_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "persons",
    .version = "1.0.0",
    .description = "JSON CRUD API over the PostgreSQL person table",
    .init = persons_init,
    .fini = persons_fini,
    .handle = persons_handle,
    .handle_async = persons_handle_async,
};

const weft_plugin *weft_plugin_entry(void)
{
    return &persons_plugin;
}
