/*
 * The bad-input matrix, shared by badinput_http.c (the request's shape) and
 * badinput_persons.c (what the persons plugin is handed): what a hostile or
 * broken client can throw at weft, and what must come back. Every row names
 * the expected status and then checks that the server still serves (`/hello`
 * answers 200) and that nothing was written that should not be (the persons
 * rows carrying this run's tag are counted before and after).
 *
 * HTTP goes over a raw socket (support/rawhttp.h): these rows must send
 * exactly their bytes.
 *
 * Needs PostgreSQL like persons.c (PGHOST etc.; packaging/pgdev.sh).
 */
#ifndef WEFT_TEST_BADINPUT_H
#define WEFT_TEST_BADINPUT_H

#include <stddef.h>

#include "harness.h"
#include "rawhttp.h"

extern const char *const policies[3]; /* the route prefixes, one per dispatch policy */
extern wt_server srv;
extern char tag[96];      /* this process's name for what it stores */
extern char tag_enc[300]; /* the same, percent-encoded */

/** Ends every test: stops the server and asserts a clean exit. */
void finish(void);
/** One raw request to the server under test (see wt_raw_http). */
void http(const char *method, const char *target, const char *headers, const char *body, wt_raw_resp *out);
/** /hello still answers and weft is still running, after `what`. */
void assert_serving(const char *what);
/** Occurrences of "id" in a JSON answer. */
int count_ids(const char *json);
long create_person(const char *prefix, const char *name_json);
void delete_person(long id);

enum gen {
    G_NONE,
    G_PATH,         /* `gen_size` bytes of 'a' appended to the target */
    G_HEADER_ONE,   /* one header of `gen_size` bytes */
    G_HEADERS_MANY, /* `gen_size` headers of 1000 bytes */
    G_BODY,         /* a JSON body padded with spaces to `gen_size` bytes, Content-Length */
    G_CHUNKED       /* the same, chunked */
};

typedef struct row {
    const char *name;
    const char *method;
    const char *target; /* "{P}" runs the row once per policy prefix; "{T}" is the encoded tag */
    const char *headers;
    const char *body; /* "{T}" is the tag */
    enum gen gen;
    size_t gen_size;
    long status, status_alt; /* expected; status_alt 0 or another acceptable answer */
    const char *want;        /* in the body, or NULL */
    const char *not_want;    /* never in the body, or NULL */
    const char *want_header; /* "name: value", or NULL */
} row;

/** Runs each row (once per policy when its target has "{P}") and checks the invariants after each. */
void run_rows(const row *rows, size_t n);

#define ROWS(t) run_rows(t, sizeof(t) / sizeof(t[0]))
#define JSON "Content-Type: application/json\r\n"
#define PERSON "{\"name\": \"{t}\", \"age\": 30, \"gender\": \"MALE\"}"

#endif
