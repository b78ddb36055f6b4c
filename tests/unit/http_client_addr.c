/*
 * Tests for server/http/client_addr.c on a real loop's h2o: requests come
 * over loopback TCP (support/unitloop.h wt_h1_listen, so the peer is
 * 127.0.0.1) to an h2o handler that calls weft_client_addr() with the
 * test's listener settings and answers with what it decided: the client's
 * address, whether it came from a header, the scheme, the X-Forwarded-Proto
 * a plugin would read and the "weft-client" entry the access log reads.
 * Checked: an untrusted peer's X-Forwarded-For and X-Forwarded-Proto change
 * nothing (and a made-up proto is replaced by the connection's own); a
 * trusted peer's are walked right to left past trusted hops (the rightmost
 * untrusted hop is the client, never the spoofable leftmost); a malformed
 * hop leaves the nearest trusted one standing; with client_header =
 * "Forwarded" only RFC 7239's header counts (IPv6 with a port, proto=).
 */
#include "http/client_addr.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "base/cidr.h"
#include "rawhttp.h"
#include "request/respond.h"
#include "unitloop.h"

static weft_listen_cfg lc;
static weft_cidr trusted[2];

static void teardown(void) { wt_loops_stop(); }

TestSuite(http_client_addr, .fini = teardown, .timeout = 60);

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    weft_client c;
    weft_client_addr(req, NULL, &lc, &c);
    char addr[INET6_ADDRSTRLEN] = "none";
    if (c.sa.sa.sa_family == AF_INET)
        inet_ntop(AF_INET, &c.sa.in.sin_addr, addr, sizeof(addr));
    else if (c.sa.sa.sa_family == AF_INET6)
        inet_ntop(AF_INET6, &c.sa.in6.sin6_addr, addr, sizeof(addr));
    ssize_t p = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-forwarded-proto"), -1);
    const h2o_iovec_t *env = h2o_req_getenv(req, H2O_STRLIT("weft-client"), 0);
    char text[256];
    snprintf(text, sizeof(text), "client=%s header=%d scheme=%.*s xfp=%.*s log=%.*s", addr, c.from_header,
             (int)req->scheme->name.len, req->scheme->name.base, p >= 0 ? (int)req->headers.entries[p].value.len : 1,
             p >= 0 ? req->headers.entries[p].value.base : "-", env != NULL ? (int)env->len : 1,
             env != NULL ? env->base : "-");
    weft_respond_text(req, 200, text);
    return 0;
}

/* Trusts the given ranges (NULL: none) and starts the loop. */
static void start(const char *a, const char *b, int forwarded)
{
    char why[128];
    memset(&lc, 0, sizeof(lc));
    const char *ranges[2] = {a, b};
    for (int i = 0; i < 2 && ranges[i] != NULL; i++) {
        cr_assert_eq(weft_cidr_parse(ranges[i], &trusted[i], why, sizeof(why)), 0, "%s: %s", ranges[i], why);
        lc.n_trusted++;
    }
    lc.trusted = trusted;
    lc.forwarded = forwarded;
    wt_loops_handler(on_req);
    wt_loops_start(1);
}

static void expect(const char *headers, const char *want)
{
    wt_raw_resp r;
    wt_raw_http(wt_h1_listen(0), "GET", "/who", headers, NULL, &r);
    cr_assert_eq(r.status, 200, "%s", r.head);
    char line[256];
    snprintf(line, sizeof(line), "%s\n", want);
    cr_assert_str_eq(r.body, line, "with headers: %s", headers);
    wt_raw_free(&r);
}

Test(http_client_addr, an_untrusted_peer_headers_change_nothing)
{
    start("10.0.0.0/8", NULL, 0);
    expect("X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Proto: https\r\n",
           "client=127.0.0.1 header=0 scheme=http xfp=http log=-");
}

Test(http_client_addr, without_trusted_proxies_headers_change_nothing)
{
    start(NULL, NULL, 0);
    expect("X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Proto: https\r\n",
           "client=127.0.0.1 header=0 scheme=http xfp=https log=-");
}

Test(http_client_addr, a_trusted_peer_is_walked_right_to_left_past_trusted_hops)
{
    start("127.0.0.1", "10.0.0.0/8", 0);
    expect("X-Forwarded-For: 198.51.100.1, 203.0.113.7, 10.1.1.1\r\n",
           "client=203.0.113.7 header=1 scheme=http xfp=http log=203.0.113.7");
}

Test(http_client_addr, every_hop_trusted_leaves_the_leftmost)
{
    start("127.0.0.1", "10.0.0.0/8", 0);
    expect("X-Forwarded-For: 10.9.9.9, 10.1.1.1\r\n", "client=10.9.9.9 header=1 scheme=http xfp=http log=10.9.9.9");
}

Test(http_client_addr, a_trusted_peer_sets_the_scheme)
{
    start("127.0.0.1", NULL, 0);
    expect("X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Proto: https, http\r\n",
           "client=203.0.113.7 header=1 scheme=https xfp=https log=203.0.113.7");
}

Test(http_client_addr, a_malformed_hop_leaves_the_nearest_trusted_one)
{
    start("127.0.0.1", "10.0.0.0/8", 0);
    expect("X-Forwarded-For: 203.0.113.7, garbage, 10.1.1.1\r\n",
           "client=10.1.1.1 header=1 scheme=http xfp=http log=10.1.1.1");
    expect("X-Forwarded-For: garbage\r\n", "client=127.0.0.1 header=0 scheme=http xfp=http log=-");
}

Test(http_client_addr, forwarded_mode_reads_rfc7239_only)
{
    start("127.0.0.1", NULL, 1);
    expect("Forwarded: for=\"[2001:db8::1]:4711\";proto=https\r\nX-Forwarded-For: 203.0.113.7\r\n",
           "client=2001:db8::1 header=1 scheme=https xfp=https log=2001:db8::1");
    expect("X-Forwarded-For: 203.0.113.7\r\n", "client=127.0.0.1 header=0 scheme=http xfp=http log=-");
}
