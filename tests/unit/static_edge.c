/*
 * Tests for the pieces of a static route that need no server: the router's
 * prefixes (config/router.c), which Range headers reach h2o
 * (edge/static_range.c) and how the path below the prefix is decoded and
 * refused (edge/static_guard.c).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "config/methods.h"
#include "config/router.h"
#include "edge/static_guard.h"
#include "edge/static_range.h"

static int plugin_route, assets, root, deep;

static void match(weft_router *r, const char *path, unsigned method, weft_match *m)
{
    weft_router_match(r, path, strlen(path), method, m);
}

Test(static_edge, the_longest_prefix_wins_and_a_pattern_route_beats_any_prefix)
{
    weft_router *r = weft_router_new();
    void *conflict;
    char why[256];
    cr_assert_eq(weft_router_add(r, "/assets/api", WEFT_M_POST, &plugin_route, &conflict, why, sizeof(why)), 0);
    cr_assert_eq(weft_router_add_prefix(r, "/assets", WEFT_M_GET | WEFT_M_HEAD, &assets, &conflict, why, sizeof(why)), 0);
    cr_assert_eq(weft_router_add_prefix(r, "/", WEFT_M_GET | WEFT_M_HEAD, &root, &conflict, why, sizeof(why)), 0);
    cr_assert_eq(weft_router_add_prefix(r, "/assets/img/big", WEFT_M_GET, &deep, &conflict, why, sizeof(why)), 0);
    weft_match m;
    match(r, "/assets/app.js", WEFT_M_GET, &m);
    cr_assert(m.status == 200 && m.route == &assets && m.prefix && m.prefix_len == 7);
    match(r, "/assets", WEFT_M_GET, &m);
    cr_assert(m.status == 200 && m.route == &assets && m.prefix_len == 7);
    match(r, "/assets/img/big/x.png", WEFT_M_GET, &m);
    cr_assert(m.route == &deep && m.prefix_len == 15);
    match(r, "/assets/img/x.png", WEFT_M_GET, &m);
    cr_assert(m.route == &assets);
    match(r, "/other/page.html", WEFT_M_GET, &m);
    cr_assert(m.status == 200 && m.route == &root && m.prefix_len == 0);
    /* The pattern route's path is its own, for any method. */
    match(r, "/assets/api", WEFT_M_POST, &m);
    cr_assert(m.status == 200 && m.route == &plugin_route && !m.prefix);
    match(r, "/assets/api", WEFT_M_GET, &m);
    cr_assert(m.status == 405 && !m.prefix);
    /* A prefix with the wrong method: 405 with its methods. */
    match(r, "/assets/app.js", WEFT_M_POST, &m);
    cr_assert(m.status == 405 && m.allow == (WEFT_M_GET | WEFT_M_HEAD) && m.prefix);
    /* One route per prefix; no parameters in one. */
    cr_assert_eq(weft_router_add_prefix(r, "/assets", WEFT_M_GET, &deep, &conflict, why, sizeof(why)), -1);
    cr_assert_eq(conflict, &assets);
    cr_assert_eq(weft_router_add_prefix(r, "/x/{id}", WEFT_M_GET, &deep, &conflict, why, sizeof(why)), -1);
    weft_router_free(r);
}

Test(static_edge, ranges_one_of_any_form_or_several_explicit_disjoint_ascending)
{
    const char *ok[] = {"bytes=0-9", "bytes=-5", "bytes=100-", "bytes=0-0,2-2,4-4", "bytes=0-9, 20-29",
                        "BYTES=0-1", "items=0-1" /* another unit: h2o answers 416 */};
    const char *no[] = {"bytes=0-,0-",       "bytes=0-9,5-14",   "bytes=10-19,0-9", "bytes=-5,0-1",
                        "bytes=0-1,,4-5",    "bytes=",           "bytes=a-b",       "bytes=9-0,20-21",
                        "bytes=0-99999999999999999999999"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        cr_assert(weft_range_acceptable(ok[i], strlen(ok[i])), "%s", ok[i]);
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        cr_assert(!weft_range_acceptable(no[i], strlen(no[i])), "%s", no[i]);
    char many[512] = "bytes=";
    for (int i = 0; i <= WEFT_RANGE_MAX_PARTS; i++)
        sprintf(many + strlen(many), "%s%d-%d", i ? "," : "", i * 10, i * 10 + 1);
    cr_assert(!weft_range_acceptable(many, strlen(many)), "%d parts", WEFT_RANGE_MAX_PARTS + 1);
    *strrchr(many, ',') = '\0';
    cr_assert(weft_range_acceptable(many, strlen(many)), "%d parts", WEFT_RANGE_MAX_PARTS);
}

static long decode(const char *in, char *out) { return weft_static_decode(in, strlen(in), out); }

Test(static_edge, the_path_below_the_prefix_is_decoded_once_and_hidden_or_split_names_refused)
{
    char out[256];
    cr_assert_eq(decode("/a%20b.txt", out), 8);
    cr_assert_str_eq(out, "/a b.txt");
    cr_assert_eq(decode("/%252e%252e/x", out), 9); /* decoded once: a name, not a dot segment */
    cr_assert_str_eq(out, "/%2e%2e/x");
    cr_assert_eq(decode("", out), 0);
    cr_assert_eq(decode("/.env", out), -404);
    cr_assert_eq(decode("/%2eenv", out), -404);
    cr_assert_eq(decode("/sub/.git/config", out), -404);
    cr_assert_eq(decode("/a%2fb", out), -404);
    cr_assert_eq(decode("/a%2Fb", out), -404);
    cr_assert_eq(decode("/a%5cb", out), -404);
    cr_assert_eq(decode("/a%00", out), -400);
    cr_assert_eq(decode("/a%zz", out), -400);
    cr_assert_eq(decode("/a%2", out), -400);
    cr_assert_eq(decode("/file.with.dots", out), 15);
}
