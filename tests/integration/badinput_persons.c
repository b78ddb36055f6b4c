/*
 * The bad-input matrix, what the persons plugin is handed: ids, ages and
 * limits out of range, text that is not UTF-8 or hides a NUL, parameters
 * decoded more than once, SQL metacharacters in every string field. Rows and
 * invariants: badinput.h.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "badinput.h"

/* ---- ids, ages, limits: digits in range or 400 ---- */

Test(badinput, ids_out_of_range_or_not_decimal_are_400)
{
    static const row rows[] = {
        {"id overflows int", "GET", "{P}/persons/2147483648", NULL, NULL, G_NONE, 0, 400, 0, "id must be", NULL, NULL},
        {"id overflows long", "GET", "{P}/persons/99999999999999999999999", NULL, NULL, G_NONE, 0, 400, 0,
         "id must be", NULL, NULL},
        {"negative id", "GET", "{P}/persons/-1", NULL, NULL, G_NONE, 0, 400, 0, "id must be", NULL, NULL},
        {"zero id", "DELETE", "{P}/persons/0", NULL, NULL, G_NONE, 0, 400, 0, "id must be", NULL, NULL},
        {"exponent", "GET", "{P}/persons/1e3", NULL, NULL, G_NONE, 0, 400, 0, "id must be", NULL, NULL},
        {"hex", "DELETE", "{P}/persons/0x10", NULL, NULL, G_NONE, 0, 400, 0, "id must be", NULL, NULL},
        {"plus sign", "GET", "{P}/persons/+1", NULL, NULL, G_NONE, 0, 400, 0, "id must be", NULL, NULL},
        {"leading space", "GET", "{P}/persons/%201", NULL, NULL, G_NONE, 0, 400, 0, "id must be", NULL, NULL},
        {"SQL in an id", "GET", "{P}/persons/1%27%20OR%201=1", NULL, NULL, G_NONE, 0, 400, 0, "id must be", NULL,
         NULL},
        {"SQL in an id, DELETE", "DELETE", "{P}/persons/%27%20OR%201=1--", NULL, NULL, G_NONE, 0, 400, 0,
         "id must be", NULL, NULL},
        {"negative age", "GET", "{P}/persons/age-greater-than/-1", NULL, NULL, G_NONE, 0, 400, 0, "age must be",
         NULL, NULL},
        {"age overflows", "GET", "{P}/persons/age-greater-than/4294967296", NULL, NULL, G_NONE, 0, 400, 0,
         "age must be", NULL, NULL},
        {"limit with SQL", "GET", "{P}/persons?limit=1%3BDROP%20TABLE%20person", NULL, NULL, G_NONE, 0, 400, 0,
         "limit", NULL, NULL},
        {"offset overflows", "GET", "{P}/persons?offset=2147483648", NULL, NULL, G_NONE, 0, 400, 0, "offset", NULL,
         NULL},
    };
    ROWS(rows);
    finish();
}

/* A DELETE with an id that is "almost" a victim's id deletes nothing. */
Test(badinput, near_miss_ids_delete_nothing)
{
    char name[128];
    snprintf(name, sizeof(name), "%s", tag);
    long victim = create_person("/pool", name);
    const char *const forms[] = {"%ld%%20OR%%201=1", "%ld.0", "+%ld", "%ld%%3B", "0x%lx", "%lde0", "-%ld", "%ld%%20"};
    for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
        for (size_t p = 0; p < 3; p++) {
            char id[64], target[128];
            snprintf(id, sizeof(id), forms[f], victim);
            snprintf(target, sizeof(target), "%s/persons/%s", policies[p], id);
            wt_raw_resp r;
            http("DELETE", target, NULL, NULL, &r);
            cr_assert_eq(r.status, 400, "DELETE %s: %ld %s", target, r.status, r.body);
            wt_raw_free(&r);
        }
    }
    char target[64];
    snprintf(target, sizeof(target), "/reactive/persons/%ld", victim);
    wt_raw_resp r;
    http("GET", target, NULL, NULL, &r);
    cr_assert_eq(r.status, 200, "the victim is gone: %ld %s", r.status, r.body);
    wt_raw_free(&r);
    delete_person(victim);
    finish();
}

/* ---- text: UTF-8, NUL, percent-encoding ---- */

Test(badinput, non_utf8_path_parameters_are_400)
{
    static const row rows[] = {
        {"%FF%FE", "GET", "{P}/persons/name/%FF%FE", NULL, NULL, G_NONE, 0, 400, 0, "UTF-8", NULL, NULL},
        {"raw bytes FF FE", "GET", "{P}/persons/name/\xff\xfe", NULL, NULL, G_NONE, 0, 400, 0, "UTF-8", NULL, NULL},
        {"overlong slash", "GET", "{P}/persons/name/%C0%AF", NULL, NULL, G_NONE, 0, 400, 0, "UTF-8", NULL, NULL},
        {"UTF-16 surrogate", "GET", "{P}/persons/name/%ED%A0%80", NULL, NULL, G_NONE, 0, 400, 0, "UTF-8", NULL, NULL},
        {"past U+10FFFF", "GET", "{P}/persons/name/%F4%90%80%80", NULL, NULL, G_NONE, 0, 400, 0, "UTF-8", NULL, NULL},
        {"truncated sequence", "GET", "{P}/persons/name/ab%E2%82", NULL, NULL, G_NONE, 0, 400, 0, "UTF-8", NULL,
         NULL},
        {"invalid UTF-8 in a JSON body", "POST", "{P}/persons", JSON,
         "{\"name\": \"\xff\xfe\", \"age\": 30, \"gender\": \"MALE\"}", G_NONE, 0, 400, 0, "invalid JSON", NULL, NULL},
        {"escaped lone surrogate in a JSON body", "POST", "{P}/persons", JSON,
         "{\"name\": \"\\ud800 {t}\", \"age\": 30, \"gender\": \"MALE\"}", G_NONE, 0, 400, 0, NULL, NULL, NULL},
        {"valid UTF-8 is fine", "GET", "{P}/persons/name/%E6%97%A5%F0%9F%98%80", NULL, NULL, G_NONE, 0, 200, 0, "[]",
         NULL, NULL},
    };
    ROWS(rows);
    finish();
}

/*
 * Every string weft hands a plugin is NUL-terminated, so a decoded %00 would
 * silently cut a parameter short ("1%00abc" read as id 1). It must be refused.
 */
Test(badinput, nul_bytes_in_parameters_are_400)
{
    static const row rows[] = {
        {"%00 in an id", "GET", "{P}/persons/1%00abc", NULL, NULL, G_NONE, 0, 400, 0, NULL, "\"id\"", NULL},
        {"%00 in a name", "GET", "{P}/persons/name/Name5%00junk", NULL, NULL, G_NONE, 0, 400, 0, NULL, "Name5",
         NULL},
        {"%00 in a query value", "GET", "{P}/persons?limit=2%00zzz", NULL, NULL, G_NONE, 0, 400, 0, NULL, "\"id\"",
         NULL},
        {"%00 in a JSON body (\\u0000)", "POST", "{P}/persons", JSON,
         "{\"name\": \"{t}\\u0000x\", \"age\": 30, \"gender\": \"MALE\"}", G_NONE, 0, 400, 0, NULL, NULL, NULL},
    };
    ROWS(rows);
    finish();
}

/*
 * A path parameter is percent-decoded exactly once: "%2520" is the three
 * characters "%20", "%2F" is a '/' inside the value, not a separator, and a
 * name containing "%41" can be looked up.
 */
Test(badinput, parameters_are_decoded_exactly_once)
{
    static const row rows[] = {
        {"%2520 is %20", "GET", "/echo/a%2520b", NULL, NULL, G_NONE, 0, 200, 0, "param.id=a%20b\n", NULL, NULL},
        {"%2500 is not NUL", "GET", "{P}/persons/1%2500", NULL, NULL, G_NONE, 0, 400, 0, "id must be", NULL, NULL},
        {"%252e%252e is not ..", "GET", "/echo/%252e%252e", NULL, NULL, G_NONE, 0, 200, 0, "param.id=%2e%2e\n",
         NULL, NULL},
        /* data, not a separator: the value "a/b", or refused */
        {"%2F inside a parameter", "GET", "/echo/a%2Fb", NULL, NULL, G_NONE, 0, 200, 400, NULL, "not found", NULL},
    };
    ROWS(rows);

    /* A stored name with a literal "%41" is found by its (encoded) name. */
    char name[160], enc[512], target[700];
    snprintf(name, sizeof(name), "pct%%41 %s", tag);
    long id = create_person("/coroutine", name);
    wt_pct_encode(name, enc, sizeof(enc));
    for (size_t p = 0; p < 3; p++) {
        snprintf(target, sizeof(target), "%s/persons/name/%s", policies[p], enc);
        wt_raw_resp r;
        http("GET", target, NULL, NULL, &r);
        char want[32];
        snprintf(want, sizeof(want), "\"id\" : %ld", id);
        int found = r.status == 200 && strstr(r.body, want) != NULL;
        long st = r.status;
        char body[256];
        snprintf(body, sizeof(body), "%s", r.body);
        wt_raw_free(&r);
        if (!found)
            delete_person(id);
        cr_assert(found, "GET %s (name '%s'): %ld %s", target, name, st, body);
    }
    delete_person(id);
    finish();
}

/* ---- SQL metacharacters: data, stored and returned byte for byte ---- */

Test(badinput, sql_metacharacters_in_every_string_field)
{
    static const char *const names[] = {
        "'; DROP TABLE person; --", "\\\" OR \\\"1\\\"=\\\"1", "$1::int", "Robert'); DELETE FROM person;--",
        "%s%n%x", "1' UNION SELECT version()--", "\\\\x00 E'\\\\\\\\'",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        for (size_t p = 0; p < 3; p++) {
            /* names[i] is written as a JSON string body; PostgreSQL writes it back the same way */
            char json_name[256], target[1200], raw_name[256];
            snprintf(json_name, sizeof(json_name), "%s %s", names[i], tag);
            long id = create_person(policies[p], json_name);
            snprintf(target, sizeof(target), "%s/persons/%ld", policies[p], id);
            wt_raw_resp r;
            http("GET", target, NULL, NULL, &r);
            cr_assert_eq(r.status, 200, "%s: %ld %s", target, r.status, r.body);
            char want[300];
            snprintf(want, sizeof(want), "\"name\" : \"%s\"", json_name);
            cr_assert(strstr(r.body, want) != NULL, "stored '%s', answered %s", json_name, r.body);
            wt_raw_free(&r);
            /* and found by it, through the path parameter */
            size_t o = 0;
            for (const char *c = json_name; *c && o + 1 < sizeof(raw_name); c++) {
                if (*c == '\\' && c[1] != '\0')
                    c++; /* JSON unescape: \" and \\ are all these names use */
                raw_name[o++] = *c;
            }
            raw_name[o] = '\0';
            char enc[700];
            wt_pct_encode(raw_name, enc, sizeof(enc));
            snprintf(target, sizeof(target), "%s/persons/name/%s", policies[p], enc);
            http("GET", target, NULL, NULL, &r);
            snprintf(want, sizeof(want), "\"id\" : %ld", id);
            cr_assert(r.status == 200 && strstr(r.body, want) != NULL && count_ids(r.body) == 1, "%s: %ld %s",
                      target, r.status, r.body);
            wt_raw_free(&r);
            delete_person(id);
        }
    }
    /* gender is an enumeration: SQL there is simply a wrong value */
    static const row rows[] = {
        {"SQL in gender", "POST", "{P}/persons", JSON,
         "{\"name\": \"{t}\", \"age\": 30, \"gender\": \"MALE' OR '1'='1\"}", G_NONE, 0, 400, 0, "gender", NULL, NULL},
        {"SQL as a field name", "POST", "{P}/persons", JSON,
         "{\"name\": \"{t}\", \"age\": 30, \"gender\": \"MALE\", \"age; DROP TABLE person\": 1}", G_NONE, 0, 400, 0,
         "unknown field", NULL, NULL},
    };
    ROWS(rows);
    assert_serving("SQL metacharacters");
    finish();
}
