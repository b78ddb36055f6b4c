/*
 * The persons plugin against a real PostgreSQL, under all three policies.
 *
 * Needs PGHOST/PGPORT/PGUSER/PGDATABASE pointing at a cluster with sql/
 * applied; packaging/test.sh starts one with packaging/pgdev.sh. Every name
 * a test stores carries the process id, so parallel runs never see each
 * other's rows, and every test deletes what it created.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static const char *conf = "threads = 2;\n"
                          WT_LISTEN "\n"
                          "limits = { max_body = 4096; };\n"
                          "pools = ( { name = \"default\"; size = 16; queue = 1000; } );\n"
                          "database = { conninfo = \"dbname=weft\"; statement_timeout_ms = 3000; };\n"
                          "routes = (\n" WT_PERSON_ROUTES("pool", ",") WT_PERSON_ROUTES("coroutine", ",")
                              WT_PERSON_ROUTES("reactive", "") ");\n";

static wt_server srv;

static void start(void)
{
    /* No database is a broken test environment, not a reason to skip. */
    const char *pghost = getenv("PGHOST");
    cr_assert(pghost != NULL && pghost[0] != '\0',
              "PGHOST is not set: the persons tests need PostgreSQL with sql/ applied, e.g.\n"
              "  packaging/pgdev.sh start /tmp/wpg && eval \"$(packaging/pgdev.sh env /tmp/wpg)\"\n"
              "(packaging/test.sh does this itself)");
    wt_start(&srv, conf);
}

/* As in policies.c: a clean exit, so sanitizer findings fail the suite. */
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(persons, .init = start, .fini = stop, .timeout = 120);

static void request(const char *method, const char *path, const char *ctype, const char *body, wt_resp *out)
{
    int rc = wt_http_typed(&srv, method, path, ctype != NULL ? ctype : "", body, out);
    cr_assert_eq(rc, 0, "%s %s: transport error", method, path);
}

static void get(const char *path, wt_resp *out) { request("GET", path, NULL, NULL, out); }

static void post_json(const char *path, const char *body, wt_resp *out)
{
    request("POST", path, "application/json", body, out);
}

/* `n` requests at once over separate connections (curl multi): method,
 * path and body per request; statuses and bodies (caller frees) out. */
static void request_many(int n, const char *method, char (*paths)[256], char (*bodies)[256], long *statuses,
                         char **out)
{
    const char **p = calloc((size_t)n, sizeof(char *)), **b = calloc((size_t)n, sizeof(char *));
    for (int i = 0; i < n; i++) {
        p[i] = paths[i];
        b[i] = bodies != NULL ? bodies[i] : NULL;
    }
    wt_http_batch(&srv, n, method, p, bodies != NULL ? "application/json" : "", bodies != NULL ? b : NULL, statuses,
                  out);
    free(p);
    free(b);
}

/* ---- reading the answers ---- */

/*
 * The raw JSON token of the next `"key":` at or after `json`: a number as
 * written, or a string's content with its escapes kept (compare it with the
 * escaped form). PostgreSQL writes `"key" : value`, jansson `"key":value`.
 * Returns where to continue, or NULL when there is no such key.
 */
static const char *field(const char *json, const char *key, char *out, size_t size)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\"", key);
    for (const char *p = strstr(json, pat); p != NULL; p = strstr(p + 1, pat)) {
        const char *v = p + strlen(pat);
        v += strspn(v, " \n\t");
        if (*v != ':')
            continue; /* the key's text as a value, not a key */
        v++;
        v += strspn(v, " \n\t");
        size_t len;
        if (*v == '"') {
            v++;
            for (len = 0; v[len] != '\0' && v[len] != '"'; len++)
                if (v[len] == '\\' && v[len + 1] != '\0')
                    len++;
        } else {
            len = strcspn(v, ",}] \n\t");
        }
        snprintf(out, size, "%.*s", (int)len, v);
        return v + len;
    }
    return NULL;
}

static long field_long(const char *json, const char *key)
{
    char v[32];
    return field(json, key, v, sizeof(v)) != NULL ? atol(v) : -1;
}

/* Every "id" in an answer (an array of persons), in order; the count. */
static int ids_of(const char *json, long *ids, int max)
{
    int n = 0;
    char v[32];
    for (const char *p = field(json, "id", v, sizeof(v)); p != NULL; p = field(p, "id", v, sizeof(v))) {
        cr_assert_lt(n, max, "more than %d persons in %.200s", max, json);
        ids[n++] = atol(v);
    }
    return n;
}

static int contains_id(const char *json, long id)
{
    static long ids[1000];
    int n = ids_of(json, ids, 1000);
    for (int i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}


/* JSON's escapes for " and \ — all our names need, and exactly what
 * PostgreSQL writes back, so the escaped forms compare equal. */
static void json_escape(const char *raw, char *out, size_t size)
{
    size_t o = 0;
    for (const char *p = raw; *p != '\0' && o + 3 < size; p++) {
        if (*p == '"' || *p == '\\')
            out[o++] = '\\';
        out[o++] = *p;
    }
    out[o] = '\0';
}

static void assert_json_type(const wt_resp *r)
{
    char ct[128];
    cr_assert_not_null(wt_header(r, "content-type", ct, sizeof(ct)), "no content-type: %s", r->headers);
    cr_assert_str_eq(ct, "application/json");
}

/* A 4xx from the plugin: {"error": "..."} mentioning `what`, never SQL. */
static void assert_error(const wt_resp *r, long status, const char *what, const char *context)
{
    cr_assert_eq(r->status, status, "%s: %ld %s", context, r->status, r->body);
    assert_json_type(r);
    cr_assert(strncmp(r->body, "{\"error\":\"", 10) == 0, "%s: not a JSON error: %s", context, r->body);
    cr_assert_not_null(strstr(r->body, what), "%s: '%s' does not mention '%s'", context, r->body, what);
    cr_assert_null(strstr(r->body, "SELECT"), "%s: SQL in %s", context, r->body);
    cr_assert_null(strstr(r->body, "person WHERE"), "%s: SQL in %s", context, r->body);
}

/* ---- tests ---- */

/* Criterion may run each test in a re-executed process: parameters must be
 * plain data, not pointers into this one. */
typedef struct policy_param {
    char prefix[32];
    int age; /* above every seeded age (18..77), different per policy */
} policy_param;

ParameterizedTestParameters(persons, crud_round_trip)
{
    static policy_param params[] = {{"/pool", 141}, {"/coroutine", 142}, {"/reactive", 143}};
    return cr_make_param_array(policy_param, params, sizeof(params) / sizeof(params[0]));
}

ParameterizedTest(policy_param *param, persons, crud_round_trip)
{
    char name[128], enc[512], coll[64], path[1024], body[512], v[512];
    snprintf(name, sizeof(name), "crud %s %d", param->prefix + 1, (int)getpid());
    wt_pct_encode(name, enc, sizeof(enc));
    snprintf(coll, sizeof(coll), "%s/persons", param->prefix);
    snprintf(body, sizeof(body), "{\"name\": \"%s\", \"age\": %d, \"gender\": \"FEMALE\"}", name, param->age);

    wt_resp r;
    post_json(coll, body, &r);
    cr_assert_eq(r.status, 201, "POST %s: %ld %s", coll, r.status, r.body);
    assert_json_type(&r);
    long id = field_long(r.body, "id");
    cr_assert_gt(id, 0, "%s", r.body);
    char loc[256], want_loc[256];
    snprintf(want_loc, sizeof(want_loc), "%s/%ld", coll, id);
    cr_assert_not_null(wt_header(&r, "location", loc, sizeof(loc)), "%s", r.headers);
    cr_assert_str_eq(loc, want_loc);
    cr_assert_not_null(field(r.body, "name", v, sizeof(v)));
    cr_assert_str_eq(v, name);
    cr_assert_eq(field_long(r.body, "age"), param->age);
    cr_assert_not_null(field(r.body, "gender", v, sizeof(v)));
    cr_assert_str_eq(v, "FEMALE");
    char *created = strdup(r.body);
    wt_resp_free(&r);

    get(loc, &r);
    cr_assert_eq(r.status, 200, "GET %s: %ld %s", loc, r.status, r.body);
    assert_json_type(&r);
    cr_assert_str_eq(r.body, created, "GET answers what POST stored");
    wt_resp_free(&r);
    free(created);

    snprintf(path, sizeof(path), "%s/name/%s", coll, enc);
    get(path, &r);
    cr_assert_eq(r.status, 200, "GET %s: %ld %s", path, r.status, r.body);
    cr_assert_eq(r.body[0], '[', "%s", r.body);
    long ids[8];
    cr_assert_eq(ids_of(r.body, ids, 8), 1, "%s", r.body);
    cr_assert_eq(ids[0], id);
    wt_resp_free(&r);

    /* Older than age - 1 includes it, older than age does not; nothing
     * returned is younger than asked. */
    for (int delta = 1; delta >= 0; delta--) {
        int than = param->age - delta;
        snprintf(path, sizeof(path), "%s/age-greater-than/%d?limit=1000", coll, than);
        get(path, &r);
        cr_assert_eq(r.status, 200, "GET %s: %ld %s", path, r.status, r.body);
        cr_assert_eq(contains_id(r.body, id), delta == 1, "%s: person %ld in %s", path, id, r.body);
        char age[32];
        for (const char *p = field(r.body, "age", age, sizeof(age)); p != NULL; p = field(p, "age", age, sizeof(age)))
            cr_assert_gt(atol(age), than, "%s returned age %s", path, age);
        wt_resp_free(&r);
    }

    request("DELETE", loc, NULL, NULL, &r);
    cr_assert_eq(r.status, 204, "DELETE %s: %ld %s", loc, r.status, r.body);
    cr_assert_eq(r.len, 0);
    wt_resp_free(&r);
    get(loc, &r);
    assert_error(&r, 404, "not found", "GET after DELETE");
    wt_resp_free(&r);
    request("DELETE", loc, NULL, NULL, &r);
    assert_error(&r, 404, "not found", "second DELETE");
    wt_resp_free(&r);
    wt_finish(&srv);
}

ParameterizedTestParameters(persons, bad_input_is_400_415_413)
{
    static policy_param params[] = {{"/pool", 0}, {"/coroutine", 0}, {"/reactive", 0}};
    return cr_make_param_array(policy_param, params, sizeof(params) / sizeof(params[0]));
}

ParameterizedTest(policy_param *param, persons, bad_input_is_400_415_413)
{
    static const struct {
        const char *body, *what;
    } bodies[] = {
        {"{\"name\": \"x\", \"age\": 3", "line 1"}, /* jansson's position */
        {"[1, 2]", "object"},
        {"{\"name\": \"x\", \"gender\": \"MALE\"}", "age"},
        {"{\"age\": 30, \"gender\": \"MALE\"}", "name"},
        {"{\"name\": \"x\", \"age\": 30}", "gender"},
        {"{\"name\": \"x\", \"age\": \"30\", \"gender\": \"MALE\"}", "age"},
        {"{\"name\": \"x\", \"age\": 30.5, \"gender\": \"MALE\"}", "age"},
        {"{\"name\": \"x\", \"age\": 151, \"gender\": \"MALE\"}", "age"},
        {"{\"name\": \"x\", \"age\": -1, \"gender\": \"MALE\"}", "age"},
        {"{\"name\": \"x\", \"age\": 30, \"gender\": \"OTHER\"}", "gender"},
        {"{\"name\": \"\", \"age\": 30, \"gender\": \"MALE\"}", "name"},
        {"{\"name\": 7, \"age\": 30, \"gender\": \"MALE\"}", "name"},
        {"{\"name\": \"x\", \"age\": 30, \"gender\": \"MALE\", \"nickname\": \"y\"}", "nickname"},
    };
    static const char *ids[] = {"abc", "0", "-1", "99999999999", "2147483648", "1.5"};
    static const char *queries[] = {"?limit=5000", "?limit=0", "?limit=x", "?offset=-1", "?offset=abc"};
    char coll[64], path[256];
    snprintf(coll, sizeof(coll), "%s/persons", param->prefix);
    wt_resp r;

    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        post_json(coll, bodies[i].body, &r);
        assert_error(&r, 400, bodies[i].what, bodies[i].body);
        wt_resp_free(&r);
    }
    /* A name one character too long (PostgreSQL's varchar counts characters). */
    char long_body[400];
    int at = snprintf(long_body, sizeof(long_body), "{\"name\": \"");
    memset(long_body + at, 'n', 256);
    snprintf(long_body + at + 256, sizeof(long_body) - (size_t)at - 256, "\", \"age\": 1, \"gender\": \"MALE\"}");
    post_json(coll, long_body, &r);
    assert_error(&r, 400, "name", "256-character name");
    wt_resp_free(&r);

    /* Thousands of nested arrays would overflow a coroutine's stack inside
     * the JSON parser; the plugin refuses them first. */
    char deep[3100];
    memset(deep, '[', 3000);
    deep[3000] = '\0';
    post_json(coll, deep, &r);
    assert_error(&r, 400, "nested", "3000 nested arrays");
    wt_resp_free(&r);

    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", coll, ids[i]);
        get(path, &r);
        assert_error(&r, 400, "id must be an integer between 1 and 2147483647", path);
        wt_resp_free(&r);
        request("DELETE", path, NULL, NULL, &r);
        assert_error(&r, 400, "id must be an integer between 1 and 2147483647", path);
        wt_resp_free(&r);
    }
    for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
        snprintf(path, sizeof(path), "%s%s", coll, queries[i]);
        get(path, &r);
        assert_error(&r, 400, strstr(queries[i], "limit") ? "limit" : "offset", path);
        wt_resp_free(&r);
    }
    snprintf(path, sizeof(path), "%s/age-greater-than/old", coll);
    get(path, &r);
    assert_error(&r, 400, "age", path);
    wt_resp_free(&r);

    const char *valid = "{\"name\": \"x\", \"age\": 30, \"gender\": \"MALE\"}";
    request("POST", coll, "text/plain", valid, &r);
    assert_error(&r, 415, "application/json", "text/plain");
    wt_resp_free(&r);
    request("POST", coll, NULL, valid, &r);
    assert_error(&r, 415, "application/json", "no content-type");
    wt_resp_free(&r);
    request("POST", coll, "application/jsonx", valid, &r);
    assert_error(&r, 415, "application/json", "application/jsonx");
    wt_resp_free(&r);

    /* Over limits.max_body (4096): the host refuses it before the plugin. */
    char *big = malloc(6000);
    int n = snprintf(big, 6000, "{\"name\": \"");
    memset(big + n, 'b', 5000);
    snprintf(big + n + 5000, 6000 - (size_t)n - 5000, "\", \"age\": 1, \"gender\": \"MALE\"}");
    post_json(coll, big, &r);
    cr_assert_eq(r.status, 413, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    free(big);
    wt_finish(&srv);
}

/* A parameter such as "; charset=utf-8" is still JSON. */
Test(persons, content_type_parameters_are_accepted)
{
    char body[256], loc[256];
    snprintf(body, sizeof(body), "{\"gender\": \"MALE\", \"age\": 0, \"name\": \"charset %d\"}", (int)getpid());
    wt_resp r;
    request("POST", "/reactive/persons", "Application/JSON; charset=utf-8", body, &r);
    cr_assert_eq(r.status, 201, "%ld %s", r.status, r.body);
    cr_assert_not_null(wt_header(&r, "location", loc, sizeof(loc)));
    wt_resp_free(&r);
    request("DELETE", loc, NULL, NULL, &r);
    cr_assert_eq(r.status, 204);
    wt_resp_free(&r);
    wt_finish(&srv);
}

/* Input is only ever a parameter: SQL syntax, quotes, backslashes and
 * non-ASCII text are stored and answered byte for byte. */
Test(persons, sql_metacharacters_are_data)
{
    char raw[2][256];
    snprintf(raw[0], sizeof(raw[0]), "Robert'); DROP TABLE person;-- %d", (int)getpid());
    snprintf(raw[1], sizeof(raw[1]), "q\"uo'te \\back\\slash\\ $1 %%s ünïcødé 日本語 😀 %d", (int)getpid());
    static const char *prefixes[] = {"/pool", "/coroutine", "/reactive"};
    for (int k = 0; k < 2; k++) {
        for (int p = 0; p < 3; p++) {
            char esc[512], enc[1024], body[1024], path[1200], v[512], loc[256];
            json_escape(raw[k], esc, sizeof(esc));
            wt_pct_encode(raw[k], enc, sizeof(enc));
            snprintf(body, sizeof(body), "{\"name\": \"%s\", \"age\": 40, \"gender\": \"MALE\"}", esc);
            snprintf(path, sizeof(path), "%s/persons", prefixes[p]);
            wt_resp r;
            post_json(path, body, &r);
            cr_assert_eq(r.status, 201, "%s %s: %ld %s", path, body, r.status, r.body);
            cr_assert_not_null(field(r.body, "name", v, sizeof(v)));
            cr_assert_str_eq(v, esc, "stored '%s' as '%s'", esc, v);
            long id = field_long(r.body, "id");
            cr_assert_not_null(wt_header(&r, "location", loc, sizeof(loc)));
            wt_resp_free(&r);

            get(loc, &r);
            cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
            cr_assert_not_null(field(r.body, "name", v, sizeof(v)));
            cr_assert_str_eq(v, esc);
            wt_resp_free(&r);

            snprintf(path, sizeof(path), "%s/persons/name/%s", prefixes[p], enc);
            get(path, &r);
            cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
            long ids[4];
            cr_assert_eq(ids_of(r.body, ids, 4), 1, "%s: %s", path, r.body);
            cr_assert_eq(ids[0], id);
            wt_resp_free(&r);

            request("DELETE", loc, NULL, NULL, &r);
            cr_assert_eq(r.status, 204);
            wt_resp_free(&r);
        }
    }
    /* The table is still there. */
    wt_resp r;
    get("/pool/persons?limit=1", &r);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    wt_finish(&srv);
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* 200 inserts at once, spread over the three policies: every one stored
 * once, under its own id. */
Test(persons, concurrent_inserts_get_distinct_ids)
{
    enum { N = 200 };
    static const char *prefixes[] = {"/pool", "/coroutine", "/reactive"};
    static char paths[N][256], bodies[N][256];
    static long st[N], ids[N], found[N];
    static char *out[N];
    char tag[64], enc[256], path[512];
    snprintf(tag, sizeof(tag), "concurrent %d %ld", (int)getpid(), (long)time(NULL));
    wt_pct_encode(tag, enc, sizeof(enc));
    for (int i = 0; i < N; i++) {
        snprintf(paths[i], sizeof(paths[i]), "%s/persons", prefixes[i % 3]);
        snprintf(bodies[i], sizeof(bodies[i]), "{\"name\": \"%s\", \"age\": %d, \"gender\": \"%s\"}", tag, i % 100,
                 i % 2 ? "MALE" : "FEMALE");
    }
    request_many(N, "POST", paths, bodies, st, out);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(st[i], 201, "POST #%d to %s: %ld %s", i, paths[i], st[i], out[i]);
        ids[i] = field_long(out[i], "id");
        cr_assert_gt(ids[i], 0, "%s", out[i]);
        free(out[i]);
    }
    qsort(ids, N, sizeof(long), cmp_long);
    for (int i = 1; i < N; i++)
        cr_assert_neq(ids[i], ids[i - 1], "id %ld given twice", ids[i]);

    snprintf(path, sizeof(path), "/coroutine/persons/name/%s?limit=1000", enc);
    wt_resp r;
    get(path, &r);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    cr_assert_eq(ids_of(r.body, found, N), N, "%s", r.body);
    /* ordered by id, so it must be exactly the sorted ids */
    for (int i = 0; i < N; i++)
        cr_assert_eq(found[i], ids[i], "row %d: id %ld, expected %ld", i, found[i], ids[i]);
    wt_resp_free(&r);

    for (int i = 0; i < N; i++)
        snprintf(paths[i], sizeof(paths[i]), "%s/persons/%ld", prefixes[i % 3], ids[i]);
    request_many(N, "DELETE", paths, NULL, st, out);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(st[i], 204, "DELETE %s: %ld %s", paths[i], st[i], out[i]);
        free(out[i]);
    }
    wt_finish(&srv);
}

/* sql/002_seed.sql's rows are there: id 1 is 'Name1', 19, FEMALE. */
Test(persons, seeded_data_is_visible)
{
    wt_resp r;
    char v[64];
    get("/coroutine/persons/1", &r);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    assert_json_type(&r);
    cr_assert_eq(field_long(r.body, "id"), 1, "%s", r.body);
    cr_assert_not_null(field(r.body, "name", v, sizeof(v)));
    cr_assert_str_eq(v, "Name1");
    wt_resp_free(&r);
    wt_finish(&srv);
}

/* Pages: ordered by id, limit and offset honoured, [] past the end. */
Test(persons, list_pages_in_id_order)
{
    long a[8], b[8];
    wt_resp r;
    get("/reactive/persons?limit=5", &r);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    cr_assert_eq(ids_of(r.body, a, 8), 5, "%s", r.body);
    for (int i = 1; i < 5; i++)
        cr_assert_lt(a[i - 1], a[i], "not in id order: %s", r.body);
    wt_resp_free(&r);
    get("/pool/persons?limit=2&offset=3", &r);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    cr_assert_eq(ids_of(r.body, b, 8), 2, "%s", r.body);
    cr_assert_eq(b[0], a[3]);
    cr_assert_eq(b[1], a[4]);
    wt_resp_free(&r);
    get("/coroutine/persons", &r);
    cr_assert_eq(r.status, 200);
    static long many[1000];
    cr_assert_eq(ids_of(r.body, many, 1000), 100, "default limit is 100");
    wt_resp_free(&r);
    get("/coroutine/persons?offset=2147483647", &r);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    cr_assert_str_eq(r.body, "[]");
    wt_resp_free(&r);
    get("/pool/persons/name/no%20such%20name%20at%20all", &r);
    cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
    cr_assert_str_eq(r.body, "[]");
    wt_resp_free(&r);
    wt_finish(&srv);
}
