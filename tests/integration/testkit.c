/*
 * The plugin authors' test kit (weft/test.h, libweft-test) and the tests
 * `weft new-plugin` writes with it:
 *   - the kit's own API against the bundled hello plugin: start with a config
 *     fragment, HTTP/1.1 and HTTP/2, header and body assertions whose
 *     failures read as diffs, a clean stop;
 *   - the kit's optional database: a private PostgreSQL cluster from the
 *     helper `weft dev` uses, with a fixture file applied, queried by the
 *     persons plugin; a clean skip when PostgreSQL is not installed;
 *   - `weft new-plugin greeter DIR && make -C DIR/greeter test` passes out of
 *     the box against this build tree, and a broken greeting fails by name.
 *
 * pkg-config is pointed at an empty directory while building the scaffold,
 * so an installed weft-dev (possibly older) never decides what is tested.
 */
#include <weft/test.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#ifndef WEFT_SCAFFOLD_CFLAGS
#define WEFT_SCAFFOLD_CFLAGS "-O1 -g -Wall -Wextra"
#endif

static const char hello_conf[] = "threads = 1;\n"
                                 "routes = (\n"
                                 "  { path = \"/hi\"; plugin = \"hello\"; dispatch = \"coroutine\";\n"
                                 "    options = { greeting = \"hi there\\n\"; }; },\n"
                                 "  { path = \"/hi/reactive\"; plugin = \"hello\"; dispatch = \"reactive\";\n"
                                 "    options = { greeting = \"hi there\\n\"; }; }\n"
                                 ");\n";

Test(testkit, starts_weft_sends_over_http1_and_http2_and_stops_cleanly)
{
    weft_test_server *s = weft_test_start(&(weft_test_options){.plugin_dir = WEFT_PLUGIN_DIR, .config = hello_conf});
    cr_assert_gt(weft_test_port(s), 0);
    const weft_test_request reqs[] = {{.path = "/hi"}, {.path = "/hi/reactive", .http2 = 1}};
    for (size_t i = 0; i < 2; i++) {
        weft_test_response r;
        weft_test_send(s, &reqs[i], &r);
        weft_assert_status(&r, 200);
        weft_assert_header(&r, "content-type", "text/plain");
        weft_assert_header(&r, "x-no-such-header", NULL);
        weft_assert_body(&r, "hi there\n");
        weft_assert_body_contains(&r, "there");
        cr_assert(strncmp(r.headers, reqs[i].http2 ? "HTTP/2" : "HTTP/1.1", reqs[i].http2 ? 6 : 8) == 0,
                  "the protocol asked for: %s", r.headers);
        weft_test_response_free(&r);
    }
    weft_test_response r;
    const char *const hdrs[] = {"X-Test: 1", NULL};
    weft_test_send(s, &(weft_test_request){.method = "DELETE", .path = "/nowhere", .headers = hdrs}, &r);
    weft_assert_status(&r, 404);
    weft_test_response_free(&r);
    weft_test_stop(s);
}

Test(testkit, failed_checks_read_as_diffs)
{
    weft_test_response r = {.status = 200, .body = "Hello,\tworld\nbye\n", .len = 17};
    snprintf(r.headers, sizeof(r.headers), "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\n");
    cr_assert_null(weft_test_check_body(&r, "Hello,\tworld\nbye\n"));
    char *m = weft_test_check_body(&r, "Hello,\tworld\nBye\n");
    cr_assert_not_null(m);
    cr_assert(strstr(m, "body differs at byte 13 (line 2, column 1)") != NULL, "%s", m);
    cr_assert(strstr(m, "expected: \"Hello,\\tworld\\nBye\\n\"") != NULL, "control bytes shown escaped: %s", m);
    cr_assert(strstr(m, "actual:   \"Hello,\\tworld\\nbye\\n\"") != NULL, "%s", m);
    free(m);
    m = weft_test_check_status(&r, 404);
    cr_assert(m != NULL && strstr(m, "status: expected 404, got 200") != NULL, "%s", m);
    free(m);
    m = weft_test_check_header(&r, "Content-Type", "text/html");
    cr_assert(m != NULL && strstr(m, "expected \"text/html\", got \"text/plain\"") != NULL, "%s", m);
    free(m);
    cr_assert_null(weft_test_check_header(&r, "Content-Type", "text/plain"));
    m = weft_test_check_body_contains(&r, "moon");
    cr_assert(m != NULL && strstr(m, "does not contain \"moon\"") != NULL, "%s", m);
    free(m);
}

/* The persons plugin's routes under /coroutine and a fixture row of its own. */
Test(testkit, a_private_database_with_a_fixture_file_serves_the_persons_plugin, .timeout = 240)
{
    char sql[] = "/tmp/weft-kit-sql-XXXXXX";
    int fd = mkstemp(sql);
    cr_assert_neq(fd, -1);
    static const char fixture[] = "INSERT INTO person (name, gender, age) VALUES ('Kit Fixture', 'x', 41);\n";
    cr_assert_eq(write(fd, fixture, sizeof(fixture) - 1), (ssize_t)(sizeof(fixture) - 1));
    close(fd);
    /* The test's own PG* (ctest's shared cluster) must not be what weft reaches. */
    const char *const env[] = {"PGHOST=/nonexistent", NULL};
    weft_test_server *s = weft_test_start(&(weft_test_options){
        .plugin_dir = WEFT_PLUGIN_DIR,
        .config = "routes = (\n" WT_PERSON_ROUTES("coroutine", "") ");\n",
        .env = env,
        .database = 1,
        .database_sql = sql});
    unlink(sql);
    const char *pgdir = weft_test_database_dir(s);
    cr_assert(pgdir != NULL && strncmp(pgdir, "/tmp/weft-test-", 15) == 0, "a private cluster: %s", pgdir);
    weft_test_response r;
    weft_test_get(s, "/coroutine/persons/name/Kit%20Fixture", &r);
    weft_assert_status(&r, 200);
    weft_assert_body_contains(&r, "\"name\" : \"Kit Fixture\"");
    weft_assert_body_contains(&r, "\"age\" : 41");
    weft_test_response_free(&r);
    weft_test_get(s, "/coroutine/persons/1", &r); /* weft's seed rows are there too */
    weft_assert_status(&r, 200);
    weft_test_response_free(&r);
    char data[400];
    snprintf(data, sizeof(data), "%s/data", pgdir);
    weft_test_stop(s);
    cr_assert_neq(access(data, F_OK), 0, "the cluster is removed with the server: %s", data);
}

/* Without PostgreSQL's server programs a test that asks for a database is
 * skipped (reported as such), never failed: the assertion below never runs. */
Test(testkit, no_postgresql_skips_a_test_that_wants_a_database)
{
    const char *empty = "/nonexistent/weft-no-postgresql";
    setenv("PG_BINDIR", empty, 1); /* this test's own process: Criterion runs each in one */
    weft_test_server *s = weft_test_start(&(weft_test_options){.plugin_dir = WEFT_PLUGIN_DIR, .database = 1});
    weft_test_stop(s);
    cr_assert_fail("weft_test_start did not skip the test although PG_BINDIR=%s has no PostgreSQL", empty);
}

/* `cmd` through the shell with its output; returns its exit status. */
static int shell(const char *cmd, char **out)
{
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t len = 0;
    FILE *m = open_memstream(out, &len);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        fwrite(chunk, 1, n, m);
    fclose(m);
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void make_test(const char *dir, int want_rc, const char *want_text)
{
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             /* BXFI_MAP is this test's own sandbox (Criterion): the inner tests need theirs */
             "mkdir -p %s/no-pkgconfig && env -u BXFI_MAP PKG_CONFIG_LIBDIR=%s/no-pkgconfig make -C %s/greeter test "
             "CFLAGS='" WEFT_SCAFFOLD_CFLAGS "' 2>&1",
             dir, dir, dir);
    int rc = shell(cmd, &out);
    cr_assert(want_rc == 0 ? rc == 0 : rc != 0, "make test exited %d:\n%s", rc, out);
    cr_assert(strstr(out, want_text) != NULL, "make test does not say '%s':\n%s", want_text, out);
    free(out);
}

Test(testkit, scaffolded_project_tests_pass_out_of_the_box_and_fail_by_name)
{
    char dir[] = "/tmp/weft-kit-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char *out = NULL;
    const char *args[] = {"new-plugin", "greeter", dir, NULL};
    int rc = wt_run(&out, args, NULL);
    cr_assert_eq(rc, 0, "weft new-plugin exited %d:\n%s", rc, out);
    cr_assert(strstr(out, "tests/greeter_test.c") != NULL, "%s", out);
    free(out);

    make_test(dir, 0, "Tested: 2 | Passing: 2 | Failing: 0 | Crashing: 0");

    /* A broken greeting fails the test by name, with the diff. */
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "sed -i 's/\"Hello from greeter\"/\"Howdy from greeter\"/' %s/greeter/greeter.c", dir);
    cr_assert_eq(system(cmd), 0);
    make_test(dir, 1, "[FAIL] greeter::greets_under_coroutine_and_reactive");
    make_test(dir, 1, "actual:   \"Howdy from greeter\\n\"");

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
