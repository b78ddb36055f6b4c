/*
 * Tests for server/router.c: pattern validation, literal and parameter
 * matching, literal-over-parameter precedence with backtracking, 404/405 and
 * conflicts. The router only looks at method masks; HEAD-implies-GET is the
 * config's business.
 */
#include "config/router.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"

/* Distinct addresses stand in for routes. */
static int route_a, route_b, route_c, route_d;

static weft_router *router;

static void router_setup(void)
{
    router = weft_router_new();
    cr_assert_not_null(router);
}

static void router_teardown(void)
{
    weft_router_free(router);
    router = NULL;
}

static void add_ok(const char *pattern, unsigned methods, void *route)
{
    char why[256] = "";
    void *conflict = &route_d;
    int rc = weft_router_add(router, pattern, methods, route, &conflict, why, sizeof(why));
    cr_assert_eq(rc, 0, "adding %s failed: %s", pattern, why);
    cr_assert_null(conflict, "conflict must be reset to NULL on success");
}

static weft_match match(const char *path, unsigned method)
{
    weft_match m;
    memset(&m, 0xa5, sizeof(m)); /* match must initialise everything it reports */
    weft_router_match(router, path, strlen(path), method, &m);
    return m;
}

static void expect_param(const weft_match *m, size_t i, const char *name, const char *value)
{
    cr_assert_lt(i, m->n_params, "param %zu missing (n_params %zu)", i, m->n_params);
    cr_assert_str_eq(m->params[i].name, name);
    cr_assert_eq(m->params[i].value_len, strlen(value), "param %s: length %zu, want %zu", name,
                 m->params[i].value_len, strlen(value));
    cr_assert_eq(memcmp(m->params[i].value, value, strlen(value)), 0, "param %s: got '%.*s', want '%s'", name,
                 (int)m->params[i].value_len, m->params[i].value, value);
}

TestSuite(router, .init = router_setup, .fini = router_teardown);

/* ---- literal routes ---- */

Test(router, literal_match)
{
    add_ok("/hello", WEFT_M_GET, &route_a);
    add_ok("/hello/world", WEFT_M_GET, &route_b);
    weft_match m = match("/hello", WEFT_M_GET);
    cr_assert_eq(m.status, 200);
    cr_assert_eq(m.route, &route_a);
    cr_assert_eq(m.n_params, 0);
    m = match("/hello/world", WEFT_M_GET);
    cr_assert_eq(m.status, 200);
    cr_assert_eq(m.route, &route_b);
    cr_assert_eq(match("/hell", WEFT_M_GET).status, 404);
    cr_assert_eq(match("/helloo", WEFT_M_GET).status, 404);
    cr_assert_eq(match("/hello/world/x", WEFT_M_GET).status, 404);
    cr_assert_eq(match("/Hello", WEFT_M_GET).status, 404, "paths are case-sensitive");
    cr_assert_eq(match("/", WEFT_M_GET).status, 404);
}

Test(router, root_pattern)
{
    add_ok("/", WEFT_M_GET, &route_a);
    weft_match m = match("/", WEFT_M_GET);
    cr_assert_eq(m.status, 200);
    cr_assert_eq(m.route, &route_a);
    cr_assert_eq(match("", WEFT_M_GET).status, 200, "an empty path is the root");
    cr_assert_eq(match("/x", WEFT_M_GET).status, 404);
}

Test(router, only_len_bytes_of_the_path_count)
{
    add_ok("/hello", WEFT_M_GET, &route_a);
    const char *path = "/hello/world?x=1";
    weft_match m;
    weft_router_match(router, path, 6, WEFT_M_GET, &m);
    cr_assert_eq(m.status, 200);
    cr_assert_eq(m.route, &route_a);
}

Test(router, unknown_path_is_404)
{
    cr_assert_eq(match("/anything", WEFT_M_GET).status, 404, "an empty router answers 404");
    add_ok("/a/{id}", WEFT_M_GET, &route_a);
    weft_match m = match("/b/1", WEFT_M_GET);
    cr_assert_eq(m.status, 404);
    cr_assert_null(m.route);
    cr_assert_eq(m.allow, 0);
    cr_assert_eq(m.n_params, 0);
    cr_assert_eq(match("/a", WEFT_M_GET).status, 404, "a parameter needs a segment");
}

/* ---- parameters ---- */

Test(router, params_are_raw_slices_of_the_path)
{
    add_ok("/persons/{id}/pets/{pet_name}", WEFT_M_GET, &route_a);
    const char *path = "/persons/a%20b/pets/Rex+2";
    weft_match m = match(path, WEFT_M_GET);
    cr_assert_eq(m.status, 200);
    cr_assert_eq(m.route, &route_a);
    cr_assert_eq(m.n_params, 2);
    expect_param(&m, 0, "id", "a%20b"); /* not decoded: that is the request's job */
    expect_param(&m, 1, "pet_name", "Rex+2");
    /* Slices point into the caller's buffer, no copies. */
    cr_assert_eq(m.params[0].value, path + strlen("/persons/"));
    cr_assert_eq(m.params[1].value, path + strlen("/persons/a%20b/pets/"));
}

Test(router, eight_params)
{
    add_ok("/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}", WEFT_M_GET, &route_a);
    weft_match m = match("/1/2/3/4/5/6/7/8", WEFT_M_GET);
    cr_assert_eq(m.status, 200);
    cr_assert_eq(m.n_params, 8);
    expect_param(&m, 0, "a", "1");
    expect_param(&m, 7, "h", "8");
}

Test(router, literal_beats_param)
{
    add_ok("/persons/{id}", WEFT_M_GET, &route_a);
    add_ok("/persons/name/{name}", WEFT_M_GET, &route_b);
    add_ok("/persons/me", WEFT_M_GET, &route_c);

    weft_match m = match("/persons/name/bob", WEFT_M_GET);
    cr_assert_eq(m.status, 200);
    cr_assert_eq(m.route, &route_b);
    cr_assert_eq(m.n_params, 1);
    expect_param(&m, 0, "name", "bob");

    m = match("/persons/me", WEFT_M_GET);
    cr_assert_eq(m.route, &route_c, "a literal beats a parameter whatever the order added");
    cr_assert_eq(m.n_params, 0);

    m = match("/persons/42", WEFT_M_GET);
    cr_assert_eq(m.route, &route_a);
    expect_param(&m, 0, "id", "42");

    /* "name" alone dead-ends in the literal branch (no endpoint): the parameter takes it. */
    m = match("/persons/name", WEFT_M_GET);
    cr_assert_eq(m.status, 200);
    cr_assert_eq(m.route, &route_a);
    cr_assert_eq(m.n_params, 1);
    expect_param(&m, 0, "id", "name");
}

Test(router, literal_beats_param_added_first)
{
    add_ok("/persons/me", WEFT_M_GET, &route_c);
    add_ok("/persons/{id}", WEFT_M_GET, &route_a);
    cr_assert_eq(match("/persons/me", WEFT_M_GET).route, &route_c);
    cr_assert_eq(match("/persons/you", WEFT_M_GET).route, &route_a);
}

Test(router, backtracks_when_literal_branch_dead_ends)
{
    add_ok("/a/b/c", WEFT_M_GET, &route_a);
    add_ok("/a/{x}/d", WEFT_M_GET, &route_b);
    weft_match m = match("/a/b/d", WEFT_M_GET);
    cr_assert_eq(m.status, 200);
    cr_assert_eq(m.route, &route_b);
    cr_assert_eq(m.n_params, 1);
    expect_param(&m, 0, "x", "b");
    cr_assert_eq(match("/a/b/c", WEFT_M_GET).route, &route_a);
}

Test(router, backtracking_drops_params_of_the_dead_branch)
{
    add_ok("/a/b/{p}/c", WEFT_M_GET, &route_a);
    add_ok("/a/{x}/{q}/d", WEFT_M_GET, &route_b);
    weft_match m = match("/a/b/v/d", WEFT_M_GET);
    cr_assert_eq(m.status, 200);
    cr_assert_eq(m.route, &route_b);
    cr_assert_eq(m.n_params, 2, "the dead branch's {p} must not be left behind");
    expect_param(&m, 0, "x", "b");
    expect_param(&m, 1, "q", "v");
    m = match("/a/b/v/c", WEFT_M_GET);
    cr_assert_eq(m.route, &route_a);
    cr_assert_eq(m.n_params, 1);
    expect_param(&m, 0, "p", "v");
}

Test(router, backtracks_on_method_too)
{
    /* The literal route exists for the path but not for POST; the parameter route takes it. */
    add_ok("/items/new", WEFT_M_GET, &route_a);
    add_ok("/items/{id}", WEFT_M_POST, &route_b);
    weft_match m = match("/items/new", WEFT_M_POST);
    cr_assert_eq(m.status, 200);
    cr_assert_eq(m.route, &route_b);
    expect_param(&m, 0, "id", "new");
}

/* ---- methods ---- */

Test(router, wrong_method_is_405_with_allow)
{
    add_ok("/items", WEFT_M_GET | WEFT_M_HEAD, &route_a);
    add_ok("/items", WEFT_M_POST, &route_b);
    weft_match m = match("/items", WEFT_M_DELETE);
    cr_assert_eq(m.status, 405);
    cr_assert_null(m.route);
    cr_assert_eq(m.allow, WEFT_M_GET | WEFT_M_HEAD | WEFT_M_POST, "allow 0x%x", m.allow);
    cr_assert_eq(match("/items", WEFT_M_POST).route, &route_b);
    cr_assert_eq(match("/items", WEFT_M_HEAD).route, &route_a);
    cr_assert_eq(match("/items", WEFT_M_OTHER).status, 405);
    cr_assert_eq(match("/nothing", WEFT_M_DELETE).status, 404, "405 only for paths that exist");
}

Test(router, allow_lists_every_route_that_accepts_the_path)
{
    /* PUT /items/new: GET would be served by /items/new, POST by /items/{id}. */
    add_ok("/items/new", WEFT_M_GET, &route_a);
    add_ok("/items/{id}", WEFT_M_POST, &route_b);
    weft_match m = match("/items/new", WEFT_M_PUT);
    cr_assert_eq(m.status, 405);
    cr_assert_eq(m.allow, WEFT_M_GET | WEFT_M_POST, "allow 0x%x must name both GET and POST", m.allow);
}

Test(router, head_is_only_what_the_mask_says)
{
    add_ok("/get-only", WEFT_M_GET, &route_a);
    add_ok("/with-head", WEFT_M_GET | WEFT_M_HEAD, &route_b);
    weft_match m = match("/get-only", WEFT_M_HEAD);
    cr_assert_eq(m.status, 405, "the router adds no HEAD on its own");
    cr_assert_eq(m.allow, WEFT_M_GET);
    cr_assert_eq(match("/with-head", WEFT_M_HEAD).status, 200);
}

Test(router, all_methods_includes_other)
{
    add_ok("/any", WEFT_M_ALL, &route_a);
    cr_assert_eq(match("/any", WEFT_M_OTHER).status, 200);
    cr_assert_eq(match("/any", WEFT_M_PATCH).status, 200);
}

/* ---- conflicts ---- */

Test(router, duplicate_pattern_and_method_conflicts)
{
    add_ok("/x/{id}", WEFT_M_GET | WEFT_M_HEAD, &route_a);
    char why[256] = "";
    void *conflict = NULL;
    cr_assert_eq(weft_router_add(router, "/x/{id}", WEFT_M_GET | WEFT_M_POST, &route_b, &conflict, why, sizeof(why)),
                 -1);
    cr_assert_eq(conflict, &route_a);
    cr_assert_not_null(strstr(why, "already routed"), "why: %s", why);
    cr_assert_not_null(strstr(why, "GET"), "why must name the overlapping method: %s", why);
    cr_assert_null(strstr(why, "POST"), "POST does not overlap: %s", why);
    /* The refused route left nothing behind. */
    cr_assert_eq(match("/x/1", WEFT_M_POST).status, 405);
    /* Disjoint methods on the same pattern are fine. */
    add_ok("/x/{id}", WEFT_M_POST, &route_c);
    cr_assert_eq(match("/x/1", WEFT_M_POST).route, &route_c);
    cr_assert_eq(match("/x/1", WEFT_M_GET).route, &route_a);
}

Test(router, literal_duplicate_conflicts)
{
    add_ok("/a/b", WEFT_M_ALL, &route_a);
    char why[256] = "";
    void *conflict = NULL;
    cr_assert_eq(weft_router_add(router, "/a/b", WEFT_M_DELETE, &route_b, &conflict, why, sizeof(why)), -1);
    cr_assert_eq(conflict, &route_a);
}

Test(router, differing_param_names_at_one_position_rejected)
{
    add_ok("/p/{id}", WEFT_M_GET, &route_a);
    char why[256] = "";
    void *conflict = &route_d;
    cr_assert_eq(weft_router_add(router, "/p/{name}/x", WEFT_M_GET, &route_b, &conflict, why, sizeof(why)), -1);
    cr_assert_null(conflict, "a naming clash is not a route conflict");
    cr_assert_not_null(strstr(why, "{name}"), "why: %s", why);
    cr_assert_not_null(strstr(why, "{id}"), "why must name the other parameter: %s", why);
    /* Same name at the same position is fine. */
    add_ok("/p/{id}/x", WEFT_M_GET, &route_c);
    weft_match m = match("/p/7/x", WEFT_M_GET);
    cr_assert_eq(m.route, &route_c);
    expect_param(&m, 0, "id", "7");
}

Test(router, invalid_pattern_refused_by_add)
{
    char why[256] = "";
    void *conflict = &route_d;
    cr_assert_eq(weft_router_add(router, "no-slash", WEFT_M_GET, &route_a, &conflict, why, sizeof(why)), -1);
    cr_assert_null(conflict);
    cr_assert_neq(why[0], '\0');
    cr_assert_eq(match("/no-slash", WEFT_M_GET).status, 404);
}

/* ---- pattern validation ---- */

Test(router, pattern_check_rejections)
{
    static const struct {
        const char *pattern, *why;
    } bad[] = {
        {"", "must start with '/'"},
        {"hello", "must start with '/'"},
        {"/a//b", "empty segment"},
        {"//", "empty segment"},
        {"/a/", "trailing '/'"},
        {"/a/{}", "needs a name"},
        {"/a/{a-b}", "{name}"},
        {"/a/{1id}", "{name}"},
        {"/a/{i d}", "{name}"},
        {"/a/{abcdefghijklmnopqrstuvwxyzabcdefg}", "{name}"}, /* 33 characters */
        {"/a/x{id}", "whole segment"},
        {"/a/{id}x", "whole segment"},
        {"/a/{id", "whole segment"},
        {"/a/id}", "whole segment"},
        {"/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}", "more than 8 parameters"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char why[256] = "";
        cr_expect_eq(weft_pattern_check(bad[i].pattern, why, sizeof(why)), -1, "'%s' accepted", bad[i].pattern);
        cr_expect_not_null(strstr(why, bad[i].why), "'%s': reason '%s' does not mention '%s'", bad[i].pattern, why,
                           bad[i].why);
    }
}

Test(router, pattern_check_limits)
{
    char pat[2048], why[256];
    /* 64 segments are allowed, 65 are not. */
    pat[0] = '\0';
    for (int i = 0; i < WEFT_MAX_SEGMENTS; i++)
        strcat(pat, "/s");
    cr_assert_eq(weft_pattern_check(pat, why, sizeof(why)), 0, "64 segments: %s", why);
    strcat(pat, "/s");
    cr_assert_eq(weft_pattern_check(pat, why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "segments"), "why: %s", why);
    /* Over 1024 characters. */
    memset(pat, 'a', 1100);
    pat[0] = '/';
    pat[1100] = '\0';
    cr_assert_eq(weft_pattern_check(pat, why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "1024"), "why: %s", why);
    /* A tiny why buffer is never overrun. */
    char tiny[4] = {'x', 'x', 'x', 'x'};
    cr_assert_eq(weft_pattern_check("nope", tiny, sizeof(tiny)), -1);
    cr_assert_eq(tiny[3], '\0');
}

Test(router, pattern_check_accepts)
{
    static const char *const good[] = {
        "/", "/a", "/a/b", "/persons/{id}", "/{_x}", "/{a1_B2}", "/a/{abcdefghijklmnopqrstuvwxyzabcdef}", /* 32 */
        "/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}", "/files/report.v2-final~x",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        char why[256] = "";
        cr_expect_eq(weft_pattern_check(good[i], why, sizeof(why)), 0, "'%s' refused: %s", good[i], why);
    }
}

/* ---- odd request paths ---- */

Test(router, trailing_and_double_slashes_tolerated)
{
    add_ok("/hello", WEFT_M_GET, &route_a);
    add_ok("/persons/{id}", WEFT_M_GET, &route_b);
    cr_assert_eq(match("/hello/", WEFT_M_GET).route, &route_a);
    cr_assert_eq(match("//hello", WEFT_M_GET).route, &route_a);
    cr_assert_eq(match("/hello//", WEFT_M_GET).route, &route_a);
    weft_match m = match("//persons///7/", WEFT_M_GET);
    cr_assert_eq(m.status, 200);
    cr_assert_eq(m.route, &route_b);
    expect_param(&m, 0, "id", "7");
}

Test(router, very_deep_paths_are_404_without_crash)
{
    add_ok("/a", WEFT_M_GET, &route_a);
    add_ok("/{x}", WEFT_M_GET, &route_b);
    add_ok("/{x}/{y}", WEFT_M_GET, &route_c);
    static char path[200000];
    path[0] = '\0';
    for (int i = 0; i < 20000; i++)
        strcat(path + (size_t)i * 2, "/a");
    weft_match m = match(path, WEFT_M_GET);
    cr_assert_eq(m.status, 404);
    cr_assert_null(m.route);
    cr_assert_leq(m.n_params, WEFT_MAX_PARAMS);
}

Test(router, segment_limit_boundary)
{
    char pat[512] = "";
    for (int i = 0; i < WEFT_MAX_SEGMENTS; i++)
        strcat(pat, "/s");
    add_ok(pat, WEFT_M_GET, &route_a);
    cr_assert_eq(match(pat, WEFT_M_GET).status, 200, "a 64-segment route must be reachable");
    strcat(pat, "/s");
    cr_assert_eq(match(pat, WEFT_M_GET).status, 404, "65 segments");
}

/* ---- many siblings: the 200,001-route fragment ---- */

/* Each literal child is found by hash, not by scanning its siblings: with
 * the scan, adding these took ~115 s of the control thread (O(n^2)); now
 * well under a second. The assertions are on what is routed; the suite's
 * timeout (a 100x margin over the hashed build, even under ASan) is only
 * what turns a quadratic build into a failure rather than a hang. The
 * timing itself: bench/router_build.sh. */
Test(router, two_hundred_thousand_siblings, .timeout = 60)
{
    enum { N = 200001 };
    static int routes[N];
    char p[32];
    for (int i = 0; i < N; i++) {
        snprintf(p, sizeof(p), "/r/%d", i);
        add_ok(p, WEFT_M_GET, &routes[i]);
    }
    snprintf(p, sizeof(p), "/r/%d", N / 2);
    char why[256];
    void *conflict = NULL;
    cr_assert_eq(weft_router_add(router, p, WEFT_M_GET, &route_a, &conflict, why, sizeof(why)), -1);
    cr_assert_eq(conflict, &routes[N / 2]);
    for (int i = 0; i < N; i += 997) {
        snprintf(p, sizeof(p), "/r/%d", i);
        weft_match m = match(p, WEFT_M_GET);
        cr_assert_eq(m.status, 200, "%s", p);
        cr_assert_eq(m.route, &routes[i], "%s", p);
    }
    cr_assert_eq(match("/r/200000", WEFT_M_GET).route, &routes[200000]);
    cr_assert_eq(match("/r/200001", WEFT_M_GET).status, 404);
    cr_assert_eq(match("/r/00", WEFT_M_GET).status, 404);
    cr_assert_eq(match("/r/1", WEFT_M_POST).status, 405);
}

/* http.c routes a plain path as it is, skipping weft_path_normalize: that is
 * only right if normalizing would give the same bytes back. */
Test(router, a_plain_path_is_its_own_normal_form)
{
    const char *plain[] = {"/", "/5b.txt", "/assets/app.js", "/dir/", "/a/b.c/d", "/x..y", "/a.", "/~u/f-1_2"};
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        const char *p = plain[i];
        char out[64];
        cr_assert_eq(weft_path_is_plain(p, strlen(p)), 1, "%s should be plain", p);
        long n = weft_path_normalize(p, strlen(p), out);
        cr_assert(n == (long)strlen(p) && memcmp(out, p, (size_t)n) == 0, "%s normalizes to %.*s", p, (int)n, out);
    }
}

Test(router, a_path_with_escapes_dots_or_empty_segments_is_not_plain)
{
    const char *not_plain[] = {"", "a/b", "//a", "/a//b", "/.", "/..", "/a/./b", "/a/../b", "/.git/config",
                               "/a/.env", "/a%2Fb", "/%2e%2e/x", "/%41", "/a/%00"};
    for (size_t i = 0; i < sizeof(not_plain) / sizeof(not_plain[0]); i++)
        cr_assert_eq(weft_path_is_plain(not_plain[i], strlen(not_plain[i])), 0, "'%s' is not plain", not_plain[i]);
    /* The length bounds the scan: what follows it (the query) is not the path's. */
    cr_assert_eq(weft_path_is_plain("/a?//.%", 2), 1);
}

/* Matching stops where nothing lies below (no endpoint for the patterns, no
 * prefix for the prefixes): the answers must be those of a full walk. */
Test(router, early_stops_give_the_answers_of_a_full_walk)
{
    char why[256];
    void *conflict;
    cr_assert_eq(weft_router_add_prefix(router, "/", WEFT_M_GET, &route_a, &conflict, why, sizeof(why)), 0);
    weft_match m = match("/deep/er/file.txt", WEFT_M_GET);
    cr_assert(m.status == 200 && m.route == &route_a && m.prefix && m.prefix_len == 0);
    m = match("/deep", WEFT_M_POST);
    cr_assert(m.status == 405 && m.allow == WEFT_M_GET);
    /* A pattern and a prefix added later, both deep: the prefix root "/" still covers the rest. */
    add_ok("/api/v1/items/{id}", WEFT_M_GET, &route_b);
    cr_assert_eq(weft_router_add_prefix(router, "/api/static", WEFT_M_GET, &route_c, &conflict, why, sizeof(why)), 0);
    m = match("/api/v1/items/7", WEFT_M_GET);
    cr_assert(m.status == 200 && m.route == &route_b && !m.prefix);
    expect_param(&m, 0, "id", "7");
    m = match("/api/v1/items/7", WEFT_M_DELETE);
    cr_assert(m.status == 405 && m.allow == WEFT_M_GET, "the deep pattern's Allow, got %d", m.status);
    m = match("/api/v1", WEFT_M_GET); /* a node on the way, no endpoint of its own */
    cr_assert(m.status == 200 && m.route == &route_a && m.prefix_len == 0);
    m = match("/api/static/css/site.css", WEFT_M_GET);
    cr_assert(m.status == 200 && m.route == &route_c && m.prefix_len == 11);
    m = match("/api/other", WEFT_M_GET);
    cr_assert(m.route == &route_a);
}
