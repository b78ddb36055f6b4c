/*
 * Large route fragments: tens of thousands of routes under one prefix load
 * and route (the router's literal children are hashed, no longer scanned,
 * and the plugin probe keeps the end of its child's output, not the start),
 * and a fragment over limits.max_route_file_routes or
 * limits.max_route_file_size is refused with FILE:LINE. The time the build
 * takes is measured by bench/router_build.sh, not asserted here.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

/* routes.d/big.conf beside the server's config: `n` routes /r/0 .. /r/n-1,
 * one a line after the opening line, so /r/i is on line i + 2. */
static void write_fragment(wt_server *s, int n, const char *pad)
{
    char dir[400], path[450];
    snprintf(dir, sizeof(dir), "%s/routes.d", s->dir);
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/big.conf", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs("routes = (\n", f);
    for (int i = 0; i < n; i++)
        fprintf(f, "  { path = \"/r/%d\"; plugin = \"hello\"; dispatch = \"reactive\"; }%s%s\n", i,
                i + 1 < n ? "," : "", pad != NULL ? pad : "");
    fputs(");\n", f);
    cr_assert_eq(fclose(f), 0);
}

static int check(wt_server *s, char **out)
{
    const char *args[] = {"-t", "-c", s->conf, NULL};
    return wt_run(out, args, NULL);
}

Test(routescale, fifty_thousand_routes_in_one_fragment_load_and_route, .timeout = 300)
{
    enum { N = 50000 };
    wt_server s = {0};
    wt_write_conf(&s, "threads = 1;\n" WT_LISTEN "\nlimits = { max_route_file_routes = 50000; };\n" WT_HELLO_ROUTES
                      "\n");
    write_fragment(&s, N, NULL);
    wt_start(&s, NULL);
    char *log = wt_read_log(&s);
    cr_assert(strstr(log, "serving 50001 route(s)") != NULL, "%s", log);
    free(log);
    static const char *const hit[] = {"/r/0", "/r/1", "/r/25000", "/r/49999", "/hello"};
    for (size_t i = 0; i < sizeof(hit) / sizeof(hit[0]); i++) {
        wt_resp r;
        cr_assert_eq(wt_http(&s, "GET", hit[i], NULL, &r), 0);
        cr_assert_eq(r.status, 200, "%s: %ld", hit[i], r.status);
        wt_resp_free(&r);
    }
    static const char *const miss[] = {"/r/50000", "/r/", "/r/4999x", "/r/0/0", "/r"};
    for (size_t i = 0; i < sizeof(miss) / sizeof(miss[0]); i++) {
        wt_resp r;
        cr_assert_eq(wt_http(&s, "GET", miss[i], NULL, &r), 0);
        cr_assert_eq(r.status, 404, "%s: %ld", miss[i], r.status);
        wt_resp_free(&r);
    }
    wt_finish(&s);
}

Test(routescale, the_default_route_count_limit_is_ten_thousand, .timeout = 120)
{
    wt_server s = {0};
    wt_write_conf(&s, WT_LISTEN "\n" WT_HELLO_ROUTES "\n");
    write_fragment(&s, 10000, NULL);
    char *out;
    int rc = check(&s, &out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "is valid (10001 routes") != NULL, "%s", out);
    free(out);

    /* Over the limit, the drop-in is left out, as every drop-in that would
     * not load: a warning, and `weft -t` still passes (issue 26). */
    write_fragment(&s, 10001, NULL);
    rc = check(&s, &out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "warning: drop-in") != NULL && strstr(out, "is left out") != NULL, "%s", out);
    /* routes[10000], the first one over, is /r/10000 on line 10002. */
    char want[600];
    snprintf(want, sizeof(want),
             "%s/routes.d/big.conf:10002: routes[10000]: route fragment refused: 10001 routes, more than "
             "limits.max_route_file_routes (10000)",
             s.dir);
    cr_assert(strstr(out, want) != NULL, "want '%s' in:\n%s", want, out);
    free(out);
}

Test(routescale, a_fragment_over_max_route_file_size_is_refused, .timeout = 120)
{
    wt_server s = {0};
    wt_write_conf(&s, WT_LISTEN "\nlimits = { max_route_file_size = 65536; };\n" WT_HELLO_ROUTES "\n");
    write_fragment(&s, 10, NULL);
    char *out;
    cr_assert_eq(check(&s, &out), 0, "%s", out);
    free(out);
    /* Ten routes and a long comment on each line: the bytes count, not the routes. */
    char pad[8192];
    memset(pad, 'x', sizeof(pad) - 1);
    pad[0] = '#';
    pad[sizeof(pad) - 1] = '\0';
    write_fragment(&s, 10, pad);
    cr_assert_eq(check(&s, &out), 0, "left out with a warning, as every drop-in that would not load: %s", out);
    cr_assert(strstr(out, "is left out") != NULL, "%s", out);
    char want[600];
    snprintf(want, sizeof(want), "route fragment %s/routes.d/big.conf: refused: ", s.dir);
    cr_assert(strstr(out, want) != NULL, "want '%s' in:\n%s", want, out);
    cr_assert(strstr(out, " bytes, more than limits.max_route_file_size (65536)") != NULL, "%s", out);
    free(out);
}
