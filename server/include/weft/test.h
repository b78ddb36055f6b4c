/*
 * weft's test kit for plugin authors (pkg-config weft-test): from a
 * Criterion test, start the real weft with the plugin under test and a
 * config fragment on an ephemeral port, send it requests over HTTP/1.1 or
 * HTTP/2, assert on the answers (a failure prints a readable diff), and stop
 * it, checking that it exited cleanly. weft's own integration tests run on
 * the same code (tests/support/harness.c).
 *
 *     Test(greeter, says_hello)
 *     {
 *         weft_test_server *s = weft_test_start(&(weft_test_options){
 *             .plugin_dir = ".", // greeter.so and greeter.routes
 *             .config = "limits = { max_body = 4096; };"});
 *         weft_test_response r;
 *         weft_test_get(s, "/greeter", &r);
 *         weft_assert_status(&r, 200);
 *         weft_assert_body(&r, "Hello from greeter\n");
 *         weft_test_response_free(&r);
 *         weft_test_stop(s);
 *     }
 *
 * The server is $WEFT_TEST_BIN if set, else the weft this kit was built for.
 * Every function fails the current test (Criterion) on an error of its own.
 */
#ifndef WEFT_TEST_H
#define WEFT_TEST_H

#include <criterion/criterion.h>
#include <stddef.h>

typedef struct weft_test_server weft_test_server;

typedef struct weft_test_options {
    /**
     * Where the plugin under test (NAME.so) is; searched before anything
     * else, and its NAME.routes there, if any, is served. NULL:
     * $WEFT_TEST_PLUGIN_DIR (the scaffold's `make test` sets it), else ".".
     */
    const char *plugin_dir;
    /**
     * Config fragment: routes, options, limits... in weft.conf syntax. The
     * kit adds `listen` and `admin` (127.0.0.1, ephemeral ports: tests run
     * in parallel) unless a line of it starts by setting them.
     */
    const char *config;
    /** Extra environment ("NAME=value", NULL-terminated) or NULL; PG* variables reach the database. */
    const char *const *env;
    /**
     * 1: a private PostgreSQL cluster for this server, from the helper
     * `weft dev` uses (pgdev.sh: unix socket only, database "weft" with
     * weft's schema), started before weft and stopped and removed by
     * weft_test_stop. weft reaches it through PGHOST, PGPORT, PGUSER and
     * PGDATABASE (the default conninfo "dbname=weft" needs nothing more).
     * Without PostgreSQL's server programs the test is skipped, saying so.
     */
    int database;
    /** With .database: an SQL file (fixtures) applied after weft's schema; NULL: none. */
    const char *database_sql;
} weft_test_options;

typedef struct weft_test_request {
    const char *method;         /**< NULL: GET */
    const char *path;           /**< with the query string */
    const char *const *headers; /**< "Name: value" lines, NULL-terminated, or NULL */
    const char *body;           /**< NULL: none */
    int http2;                  /**< 1: HTTP/2 (cleartext, prior knowledge); 0: HTTP/1.1 */
} weft_test_request;

typedef struct weft_test_response {
    long status;
    char *body; /**< NUL-terminated */
    size_t len;
    char headers[8192]; /**< the raw response head */
} weft_test_response;

/** Starts weft and waits until it serves. The test fails (with weft's log) if it does not. */
weft_test_server *weft_test_start(const weft_test_options *options);
/** The port of its listener. */
int weft_test_port(const weft_test_server *s);
/** The directory of its private database (PGHOST, for libpq in the test itself), or NULL without one. */
const char *weft_test_database_dir(const weft_test_server *s);
/** Its log so far (malloc'd). */
char *weft_test_log(const weft_test_server *s);
/** Stops it (SIGTERM) and fails the test unless it exits 0: a crash, a leak report or a hang count. Frees s. */
void weft_test_stop(weft_test_server *s);

/** Sends a request; fails the test on a transport error. Free the response with weft_test_response_free. */
void weft_test_send(weft_test_server *s, const weft_test_request *request, weft_test_response *response);
/** GET path over HTTP/1.1. */
void weft_test_get(weft_test_server *s, const char *path, weft_test_response *response);
void weft_test_response_free(weft_test_response *response);
/** A response header's value (case-insensitive name) copied into buf, or NULL if absent. */
const char *weft_test_header(const weft_test_response *r, const char *name, char *buf, size_t size);

/* Checks behind the assertions: NULL when they hold, else a message (malloc'd). */
char *weft_test_check_status(const weft_test_response *r, long want);
char *weft_test_check_body(const weft_test_response *r, const char *want);
char *weft_test_check_body_contains(const weft_test_response *r, const char *needle);
char *weft_test_check_header(const weft_test_response *r, const char *name, const char *want);

#define WEFT__ASSERT(check)                                                                                            \
    do {                                                                                                               \
        char *weft__msg = (check);                                                                                     \
        cr_assert(weft__msg == NULL, "%s", weft__msg);                                                                 \
    } while (0)
/** The response's status is `want`; else shows the status and the body. */
#define weft_assert_status(r, want) WEFT__ASSERT(weft_test_check_status((r), (want)))
/** The body is exactly `want`; else shows both and where they first differ. */
#define weft_assert_body(r, want) WEFT__ASSERT(weft_test_check_body((r), (want)))
/** The body contains `needle`. */
#define weft_assert_body_contains(r, needle) WEFT__ASSERT(weft_test_check_body_contains((r), (needle)))
/** Header `name` is present with value `want` (NULL: absent). */
#define weft_assert_header(r, name, want) WEFT__ASSERT(weft_test_check_header((r), (name), (want)))

#endif
