/*
 * Who may talk to the admin listener: a page in a local browser reaches
 * 127.0.0.1 too (DNS rebinding gives it a Host of its own; a cross-site form
 * POST needs none), so a foreign Host is refused, a state change from a
 * cross-site Origin / Sec-Fetch-Site is refused, and with admin.token_file
 * /reload needs the bearer token.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rawhttp.h"

/* One request with exactly these head lines (Host included). */
static long admin_status(const wt_server *s, const char *method, const char *target, const char *lines)
{
    char req[1024];
    int len = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\n%sConnection: close\r\nContent-Length: 0\r\n\r\n", method,
                       target, lines);
    wt_raw_resp r;
    wt_raw_send(s->admin_port, req, (size_t)len, &r, 10000);
    long st = r.status;
    wt_raw_free(&r);
    return st;
}

static void start(wt_server *s, const char *extra)
{
    wt_startf(s,
              "threads = 1; " WT_LISTEN "\n"
              "admin = { listen = \"127.0.0.1:0\"; %s };\n"
              WT_HELLO_ROUTES "\n",
              extra);
    cr_assert_gt(s->admin_port, 0);
}

Test(admin, only_loopback_or_allowed_hosts, .timeout = 60)
{
    wt_server s = {0};
    start(&s, "allowed_hosts = [\"ops.example\"];");
    cr_expect_eq(admin_status(&s, "GET", "/status", "Host: 127.0.0.1:9901\r\n"), 200);
    cr_expect_eq(admin_status(&s, "GET", "/status", "Host: localhost\r\n"), 200);
    cr_expect_eq(admin_status(&s, "GET", "/status", "Host: [::1]:9901\r\n"), 200);
    cr_expect_eq(admin_status(&s, "GET", "/status", "Host: OPS.example:9901\r\n"), 200, "admin.allowed_hosts");
    cr_expect_eq(admin_status(&s, "GET", "/status", "Host: evil.example\r\n"), 403);
    cr_expect_eq(admin_status(&s, "POST", "/reload", "Host: evil.example\r\n"), 403, "DNS rebinding");
    cr_expect_eq(admin_status(&s, "GET", "/status", "Host: 127.0.0.1.evil.example\r\n"), 403);
    wt_finish(&s);
}

Test(admin, cross_site_state_changes_are_refused, .timeout = 60)
{
    wt_server s = {0};
    start(&s, "");
    cr_expect_eq(admin_status(&s, "POST", "/reload", "Host: 127.0.0.1\r\nOrigin: https://evil.example\r\n"), 403);
    cr_expect_eq(admin_status(&s, "POST", "/reload", "Host: 127.0.0.1\r\nSec-Fetch-Site: cross-site\r\n"), 403);
    cr_expect_eq(admin_status(&s, "GET", "/status", "Host: 127.0.0.1\r\nOrigin: https://evil.example\r\n"), 200,
                 "reading is not a state change");
    cr_expect_eq(admin_status(&s, "POST", "/reload", "Host: 127.0.0.1\r\nOrigin: http://127.0.0.1:9901\r\n"), 202);
    cr_expect_eq(admin_status(&s, "POST", "/reload", "Host: 127.0.0.1\r\nSec-Fetch-Site: same-origin\r\n"), 202);
    cr_expect_eq(admin_status(&s, "POST", "/reload", "Host: 127.0.0.1\r\n"), 202, "curl and scripts send neither");
    wt_finish(&s);
}

Test(admin, token_file_bearer_only_for_reload, .timeout = 60)
{
    wt_server s = {0};
    wt_write_conf(&s, "# placeholder\n");
    char path[400];
    snprintf(path, sizeof(path), "%s/admin.token", s.dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("s3cret-token-0123456789\n", f);
    fclose(f);
    start(&s, "token_file = \"admin.token\";");
    cr_expect_eq(admin_status(&s, "POST", "/reload", "Host: 127.0.0.1\r\n"), 401);
    cr_expect_eq(admin_status(&s, "POST", "/reload", "Host: 127.0.0.1\r\nAuthorization: Bearer wrong-token-0123456789\r\n"),
                 401);
    cr_expect_eq(admin_status(&s, "POST", "/reload", "Host: 127.0.0.1\r\nAuthorization: Bearer s3cret-token-0123456789\r\n"),
                 202);
    cr_expect_eq(admin_status(&s, "GET", "/status", "Host: 127.0.0.1\r\n"), 200, "reading needs no token");
    wt_finish(&s);
}
