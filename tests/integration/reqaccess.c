/* Plugin API 1.1 request access and response helpers (fixture reqinfo),
 * under every policy; the request id also in the access log and log lines. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static wt_server srv;
static void start(void)
{
    wt_startf(&srv,
              "threads = 2; " WT_LISTEN "\n"
              "log = { level = \"info\"; access_log = \"%s/access.log\"; };\n"
              "routes = (\n" WT_EACH_POLICY("/info/{id}", "reqinfo", "") ");\n",
              srv.dir);
}
static void stop(void) { wt_suite_stop(&srv); }
TestSuite(reqaccess, .init = start, .fini = stop, .timeout = 60);

static void expect_line(const wt_resp *r, const char *line)
{
    char want[512];
    snprintf(want, sizeof(want), "\n%s\n", line);
    char body[8192];
    snprintf(body, sizeof(body), "\n%s", r->body);
    cr_expect(strstr(body, want) != NULL, "no line '%s' in:\n%s", line, r->body);
}

ParameterizedTestParameters(reqaccess, request_facts) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, reqaccess, request_facts)
{
    char path[128], line[128], v[96];
    snprintf(path, sizeof(path), "/%s/info/a%%20b?x=1&tag=one&tag=two%%20too&e=&plus=a+b", p->name);
    const char *hdrs[] = {"X-Test: abc", "Cookie: theme=dark; sid=\"s3cr3t\"", "X-Request-Id: trace-42.A_b:c", NULL};
    wt_resp r;
    cr_assert_eq(wt_http_headers(&srv, "GET", path, hdrs, NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    cr_assert(strncmp(r.body, "peer=127.0.0.1:", 15) == 0 && atoi(r.body + 15) > 0, "%s", r.body);
    snprintf(line, sizeof(line), "local=127.0.0.1:%d", srv.port);
    expect_line(&r, line);
    expect_line(&r, "id=trace-42.A_b:c");
    cr_assert_str_eq(wt_header(&r, "x-request-id", v, sizeof(v)), "trace-42.A_b:c");
    expect_line(&r, "qs=x=1&tag=one&tag=two%20too&e=&plus=a+b");
    expect_line(&r, "h.x-test=abc");
    expect_line(&r, "q.x=1/1");
    expect_line(&r, "q.tag=one/3");
    expect_line(&r, "q.tag=two too/7");
    expect_line(&r, "q.e=/0");
    expect_line(&r, "q.plus=a b/3");
    expect_line(&r, "cookie=s3cr3t");
    expect_line(&r, "param=a b/3");
    wt_resp_free(&r);
    wt_finish(&srv);
}

ParameterizedTestParameters(reqaccess, request_id_made_up_when_absent_or_insane) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, reqaccess, request_id_made_up_when_absent_or_insane)
{
    char path[128], a[96], b[96], c[96];
    snprintf(path, sizeof(path), "/%s/info/1", p->name);
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_not_null(wt_header(&r, "x-request-id", a, sizeof(a)));
    cr_assert_geq(strlen(a), 8);
    wt_resp_free(&r);
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_not_null(wt_header(&r, "x-request-id", b, sizeof(b)));
    cr_assert_str_neq(a, b, "two requests, one id");
    wt_resp_free(&r);
    const char *bad[] = {"X-Request-Id: has space<script>", NULL};
    cr_assert_eq(wt_http_headers(&srv, "GET", path, bad, NULL, &r), 0);
    cr_assert_not_null(wt_header(&r, "x-request-id", c, sizeof(c)));
    cr_assert(strchr(c, '<') == NULL && strchr(c, ' ') == NULL, "insane id kept: %s", c);
    wt_resp_free(&r);
    wt_finish(&srv);
}

ParameterizedTestParameters(reqaccess, response_helpers) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, reqaccess, response_helpers)
{
    char path[160], v[256];
    wt_resp r;
    snprintf(path, sizeof(path), "/%s/info/1?do=json&msg=bad%%20%%22input%%22%%0A%%5C%%FF", p->name);
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 422);
    cr_assert_str_eq(wt_header(&r, "content-type", v, sizeof(v)), "application/json");
    cr_assert_str_eq(r.body, "{\"error\":\"bad \\\"input\\\"\\n\\\\\xEF\xBF\xBD\",\"status\":422}");
    wt_resp_free(&r);

    snprintf(path, sizeof(path), "/%s/info/1?do=cookie", p->name);
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    cr_assert(strstr(r.headers, "set-cookie: sid=abc123; Max-Age=3600; Path=/; Secure; HttpOnly; SameSite=Lax\r\n"),
              "%s", r.headers);
    cr_assert(strstr(r.headers, "set-cookie: theme=dark; Domain=example.org\r\n"), "%s", r.headers);
    wt_resp_free(&r);

    snprintf(path, sizeof(path), "/%s/info/1?do=badcookie", p->name);
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_str_eq(r.body, "refused=1111\n");
    cr_assert_null(strstr(r.headers, "set-cookie"), "%s", r.headers);
    wt_resp_free(&r);

    /* API 2's fixed answers (reqinfo is built against API 2; abi.c checks ABI 1's) */
    snprintf(path, sizeof(path), "/%s/info/1?do=api2", p->name);
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 299, "%s", r.body);
    cr_assert_str_eq(r.body, "status42=-1 status299=0 stop=0,0\n");
    wt_resp_free(&r);

    snprintf(path, sizeof(path), "/%s/info/1?do=redirect", p->name);
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 303);
    cr_assert_str_eq(wt_header(&r, "location", v, sizeof(v)), "/elsewhere");
    wt_resp_free(&r);
    wt_finish(&srv);
}

Test(reqaccess, request_id_in_log_lines_and_access_log)
{
    const char *hdrs[] = {"X-Request-Id: find-me-123", NULL};
    wt_resp r;
    cr_assert_eq(wt_http_headers(&srv, "GET", "/coroutine/info/1?do=log", hdrs, NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    wt_resp_free(&r);
    free(wt_wait_log(&srv, "[find-me-123]: reqinfo says hello", 5000));
    wt_finish(&srv); /* the access log is complete once the server stopped */
    char path[400], line[1024], all[4096] = "";
    snprintf(path, sizeof(path), "%s/access.log", srv.dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no access log at %s", path);
    while (fgets(line, sizeof(line), f) != NULL)
        strncat(all, line, sizeof(all) - strlen(all) - 1);
    fclose(f);
    cr_assert(strstr(all, "\"GET /coroutine/info/1?do=log HTTP/1.1\" 200") && strstr(all, " find-me-123 "), "%s", all);
}

/* log.request_id_header: which answers carry the id; the access log has it either way. */
static wt_server idsrv;
static void idsrv_stop(void) { wt_suite_stop(&idsrv); }
TestSuite(reqid_header, .fini = idsrv_stop, .timeout = 60);

static void id_header_run(const char *mode, int echoed)
{
    wt_startf(&idsrv,
              "threads = 1; " WT_LISTEN "\n"
              "log = { access_log = \"%s/access.log\"; request_id_header = \"%s\"; };\n"
              "routes = ( { path = \"/info/{id}\"; plugin = \"reqinfo\"; dispatch = \"reactive\"; } );\n",
              idsrv.dir, mode);
    const char *hdrs[] = {"X-Request-Id: sent-by-client-7", NULL};
    char v[96];
    wt_resp r;
    cr_assert_eq(wt_http_headers(&idsrv, "GET", "/info/1?n=sent", hdrs, NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    cr_assert(strstr(r.body, "\nid=sent-by-client-7\n") != NULL, "the plugin sees the id: %s", r.body);
    if (echoed)
        cr_assert_str_eq(wt_header(&r, "x-request-id", v, sizeof(v)), "sent-by-client-7");
    else
        cr_assert_null(wt_header(&r, "x-request-id", v, sizeof(v)), "%s: sent back: %s", mode, r.headers);
    wt_resp_free(&r);
    cr_assert_eq(wt_http(&idsrv, "GET", "/info/1?n=none", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    cr_assert_null(wt_header(&r, "x-request-id", v, sizeof(v)), "%s: a made-up id sent back: %s", mode, r.headers);
    const char *made_up = strstr(r.body, "\nid=");
    cr_assert_not_null(made_up, "%s", r.body);
    char id[40] = "";
    sscanf(made_up + 4, "%39[^\n]", id);
    cr_assert_geq(strlen(id), 8, "%s", r.body);
    wt_resp_free(&r);
    wt_finish(&idsrv); /* the access log is complete once the server stopped */
    char path[400], want[128];
    snprintf(path, sizeof(path), "%s/access.log", idsrv.dir);
    char *log = wt_read_file(path);
    cr_assert_not_null(log, "no access log at %s", path);
    cr_assert(strstr(log, "?n=sent HTTP/1.1\" 200") && strstr(log, " sent-by-client-7 "), "%s", log);
    snprintf(want, sizeof(want), " %s ", id); /* the trace id follows */
    cr_assert(strstr(log, "?n=none HTTP/1.1\" 200") && strstr(log, want), "made-up id %s not logged:\n%s", id, log);
    free(log);
}

Test(reqid_header, when_sent_echoes_only_the_clients_id) { id_header_run("when_sent", 1); }
Test(reqid_header, never_sends_it_but_still_logs_it) { id_header_run("never", 0); }
