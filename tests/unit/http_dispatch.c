/*
 * Tests for server/http/http.c's decisions before a request is dispatched,
 * on a real loop's h2o (support/unitloop.h: wt_loops_register installs
 * http.c's own handler, weft_http_register, on every path) serving a
 * hand-made generation: two routes in a real router (GET and HEAD on
 * /items/{id}, POST on /items) and limits.max_uri = 64. Checked, over
 * loopback TCP with raw requests: a path no route matches is 404 and
 * counted as unmatched; a wrong method is 405 with Allow naming the
 * route's methods, counted too; a target past max_uri is 414 before any
 * routing; an encoded NUL in the query or a path above the root is 400.
 * What a matched route does next (admission, dispatch) is left to the
 * integration tests, which have connections weft accepted itself.
 */
#include "http/http.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "config/router.h"
#include "rawhttp.h"
#include "reload/generation.h"
#include "unitloop.h"

static weft_config cfg;
static weft_generation gen;
static weft_router *router;
static int item, items; /* stand-ins for routes: the router hands back what it was given */

static void teardown(void)
{
    wt_loops_stop();
    weft_router_free(router);
    router = NULL;
}

TestSuite(http_dispatch, .fini = teardown, .timeout = 60);

static void add(const char *pattern, unsigned methods, void *route)
{
    char why[256];
    void *conflict = NULL;
    cr_assert_eq(weft_router_add(router, pattern, methods, route, &conflict, why, sizeof(why)), 0, "%s: %s", pattern,
                 why);
}

static void start(void)
{
    router = weft_router_new();
    cr_assert_not_null(router);
    add("/items/{id}", WEFT_M_GET | WEFT_M_HEAD, &item);
    add("/items", WEFT_M_POST, &items);
    cfg.limits.max_uri = 64;
    gen.cfg = &cfg;
    gen.router = router;
    wt_loops_register(weft_http_register);
    wt_loops_start(1);
    wt_loops_generation(&gen);
}

static void expect(const char *method, const char *target, long status, const char *body_part, const char *allow)
{
    wt_raw_resp r;
    wt_raw_http(wt_h1_listen(0), method, target, NULL, NULL, &r);
    cr_assert_eq(r.status, status, "%s %s -> %s", method, target, r.head != NULL ? r.head : "(nothing)");
    cr_assert_not_null(strstr(r.body, body_part), "%s %s -> %s", method, target, r.body);
    char got[128];
    const char *a = wt_raw_header(&r, "allow", got, sizeof(got));
    if (allow == NULL)
        cr_assert_null(a, "%s %s: Allow: %s", method, target, a);
    else
        cr_assert(a != NULL && strcmp(a, allow) == 0, "%s %s: Allow: %s, not %s", method, target, a ? a : "(none)",
                  allow);
    wt_raw_free(&r);
}

typedef struct counts {
    unsigned long long not_found, not_allowed;
} counts;

static void read_counts(void *arg)
{
    counts *c = arg;
    c->not_found = atomic_load(&weft_loop_current->stats->unmatched[0]);
    c->not_allowed = atomic_load(&weft_loop_current->stats->unmatched[1]);
}

Test(http_dispatch, no_route_is_404_and_counted)
{
    start();
    expect("GET", "/nothing/here", 404, "no route matches", NULL);
    expect("GET", "/items/7/more", 404, "no route matches", NULL);
    counts c;
    wt_on_loop(0, read_counts, &c);
    cr_assert_eq(c.not_found, 2);
    cr_assert_eq(c.not_allowed, 0);
}

Test(http_dispatch, a_wrong_method_is_405_with_allow_and_counted)
{
    start();
    char want[64];
    weft_methods_format(WEFT_M_GET | WEFT_M_HEAD, want, sizeof(want));
    expect("DELETE", "/items/7", 405, "method not allowed", want);
    expect("GET", "/items", 405, "method not allowed", "POST");
    counts c;
    wt_on_loop(0, read_counts, &c);
    cr_assert_eq(c.not_allowed, 2);
    cr_assert_eq(c.not_found, 0);
}

Test(http_dispatch, a_target_past_max_uri_is_414_before_routing)
{
    start();
    char target[128] = "/items/";
    memset(target + 7, '9', 70);
    target[77] = '\0';
    expect("GET", target, 414, "limits.max_uri", NULL);
    expect("GET", "/nothing?pad=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 414, "limits.max_uri",
           NULL); /* the query counts too: a 404 path, refused before routing */
    counts c;
    wt_on_loop(0, read_counts, &c);
    cr_assert_eq(c.not_found, 0, "refused before routing");
}

Test(http_dispatch, an_encoded_nul_or_a_path_above_the_root_is_400)
{
    start();
    expect("GET", "/items/7?q=%00", 400, "encoded NUL", NULL);
    expect("GET", "/../items/7", 400, "above the root", NULL);
}
