/*
 * Tests for server/plugin/host_log.c: API 2's `log` group, a plugin's lines
 * in weft's log. On a hand-made request with a route, a line names the
 * route (its label) and the request id in the text format, and carries
 * route, plugin, request_id and trace_id as fields of their own in JSON, so
 * `jq 'select(.request_id == ...)'` finds a plugin's lines with weft's;
 * without a request (or before routing) it is a bare line. Standard error
 * is captured into the test's directory.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "harness.h"
#include "plugin/host.h"
#include "request/request.h"
#include "request/route.h"
#include "unit.h"

static char cap_path[320];
static int saved_stderr = -1;
static weft_req *req;
static weft_route route;
static const weft_route_cfg rc = {.path = "/persons/{id}", .plugin = "persons"};
static const weft_host_log *h;

static void setup(void)
{
    wt_unit_setup("host_log");
    unsetenv("JOURNAL_STREAM"); /* no "<N>" priority prefixes */
    snprintf(cap_path, sizeof(cap_path), "%s/stderr", wt_tmpdir);
    weft_log_set_level(WEFT_LOG_INFO);
    req = weft_req_new();
    cr_assert_not_null(req);
    route.cfg = &rc;
    snprintf(route.label, sizeof(route.label), "route /persons/{id} (plugin persons 1.2)");
    req->route = &route;
    weft_req_set_id(req, "req-7", 5);
    memcpy(req->trace.trace_id_hex, "0af7651916cd43dd8448eb211c80319c", 33);
    h = weft_host_api2.log;
}

static void teardown(void)
{
    weft_log_set_json(0);
    weft_req_free(req);
    wt_unit_teardown();
}

TestSuite(host_log, .init = setup, .fini = teardown, .timeout = 30);

static void capture_begin(void)
{
    int fd = open(cap_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    saved_stderr = dup(STDERR_FILENO);
    cr_assert_geq(dup2(fd, STDERR_FILENO), 0);
    close(fd);
}

static char *capture_end(void)
{
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    char *text = wt_read_file(cap_path);
    cr_assert_not_null(text);
    return text;
}

/* msgv, called the way a plugin's own printf-style wrapper would. */
static void via_msgv(const weft_req *r, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    h->msgv(r, level, fmt, ap);
    va_end(ap);
}

Test(host_log, the_group_is_api2s)
{
    cr_assert_eq(h, &weft_host_log_group);
    cr_assert_eq(h->struct_size, sizeof(weft_host_log));
    cr_assert_eq(h->version, WEFT_HOST_LOG_VERSION);
    cr_assert_eq(weft_host_api1.log, weft_host_log_msg, "ABI 1's log is the same function");
}

Test(host_log, a_text_line_names_the_route_and_the_request)
{
    capture_begin();
    h->msg(req, WEFT_LOG_WARN, "person %d not found", 42);
    via_msgv(req, WEFT_LOG_ERROR, "and %s", "again");
    char *text = capture_end();
    cr_assert(strstr(text, " warn  route /persons/{id} (plugin persons 1.2) [req-7]: person 42 not found\n") != NULL,
              "%s", text);
    cr_assert(strstr(text, " error route /persons/{id} (plugin persons 1.2) [req-7]: and again\n") != NULL, "%s",
              text);
    free(text);
}

Test(host_log, without_a_routed_request_the_line_is_bare)
{
    capture_begin();
    h->msg(NULL, WEFT_LOG_WARN, "from load()");
    req->route = NULL;
    h->msg(req, WEFT_LOG_WARN, "before routing");
    char *text = capture_end();
    cr_assert(strstr(text, " warn  from load()\n") != NULL, "%s", text);
    cr_assert(strstr(text, " warn  before routing\n") != NULL, "%s", text);
    cr_assert_null(strstr(text, "req-7"), "%s", text);
    free(text);
}

Test(host_log, lines_below_the_level_are_dropped)
{
    capture_begin();
    h->msg(req, WEFT_LOG_DEBUG, "hidden");
    h->msg(req, WEFT_LOG_INFO, "shown");
    char *text = capture_end();
    cr_assert_null(strstr(text, "hidden"), "%s", text);
    cr_assert_not_null(strstr(text, "shown"), "%s", text);
    free(text);
}

Test(host_log, json_lines_carry_route_plugin_request_and_trace)
{
    weft_log_set_json(1);
    capture_begin();
    h->msg(req, WEFT_LOG_WARN, "a \"quoted\" %s", "word");
    char *text = capture_end();
    json_error_t err;
    json_t *o = json_loads(text, JSON_DISABLE_EOF_CHECK, &err);
    cr_assert_not_null(o, "not JSON (%s): %s", err.text, text);
    static const char *const want[][2] = {
        {"level", "warn"},
        {"msg", "a \"quoted\" word"},
        {"route", "/persons/{id}"},
        {"plugin", "persons"},
        {"request_id", "req-7"},
        {"trace_id", "0af7651916cd43dd8448eb211c80319c"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *v = json_string_value(json_object_get(o, want[i][0]));
        cr_assert(v != NULL && strcmp(v, want[i][1]) == 0, "%s: %s in %s", want[i][0], v ? v : "(none)", text);
    }
    cr_assert_null(strstr(json_string_value(json_object_get(o, "msg")), "req-7"),
                   "the text prefix belongs to the text format only: %s", text);
    json_decref(o);
    free(text);
}
