/*
 * Clients behind proxies: listen[].trusted_proxies (Forwarded, X-Forwarded-For
 * walked right to left, X-Forwarded-Proto) and listen[].proxy_protocol (PROXY
 * v1 and v2, refused without a valid header), seen by the plugin's
 * req_peer_addr under every policy, by the access log's %h and by
 * limits.max_connections_per_ip. The test's own connections come from chosen
 * loopback addresses: 127.0.0.1 is the trusted proxy, 127.0.0.2 a client
 * that lies.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fromaddr.h"
#include "harness.h"

/* listen[0]: trusts 127.0.0.1 and 10/8; listen[1]: PROXY protocol;
 * listen[2]: PROXY protocol from a balancer in 192.0.2.0/24 that also sets X-Forwarded-For;
 * listen[3]: like listen[0], with proxies that set Forwarded. */
static void start(wt_server *s, const char *limits)
{
    wt_startf(s,
              "threads = 2;\n"
              "listen = ( { address = \"127.0.0.1:0\"; trusted_proxies = [\"127.0.0.1\", \"10.0.0.0/8\"]; },\n"
              "           { address = \"127.0.0.1:0\"; proxy_protocol = true; },\n"
              "           { address = \"127.0.0.1:0\"; proxy_protocol = true; trusted_proxies = [\"192.0.2.0/24\"]; },\n"
              "           { address = \"127.0.0.1:0\"; trusted_proxies = [\"127.0.0.1\", \"10.0.0.0/8\"];\n"
              "             client_header = \"Forwarded\"; } );\n"
              "limits = { %s };\n"
              "log = { level = \"info\"; access_log = \"%s/access.log\"; };\n"
              "routes = (\n" WT_EACH_POLICY("/info/{id}", "reqinfo", "") ",\n" WT_HELLO_ROUTE ");\n",
              limits, s->dir);
}

static char *access_log_of(const wt_server *s)
{
    static char path[320];
    snprintf(path, sizeof(path), "%s/access.log", s->dir);
    return path;
}

/* The plugin's "peer=ADDR:PORT" line of a reqinfo answer, into out. */
static const char *peer_of(const char *resp, char *out, size_t size)
{
    cr_assert_eq(from_status(resp), 200, "%s", resp);
    const char *p = strstr(resp, "\npeer=");
    cr_assert_not_null(p, "%s", resp);
    p += 6;
    const char *e = strchr(p, '\n');
    snprintf(out, size, "%.*s", (int)(e - p), p);
    return out;
}

static void expect_peer(const char *src, int port, const char *path, const char *headers, const char *want)
{
    char *r = from_get(src, port, path, headers);
    char peer[128];
    peer_of(r, peer, sizeof(peer));
    /* "ADDR:" stands for the socket's own peer, whatever its port */
    size_t wl = strlen(want);
    if (want[wl - 1] == ':')
        cr_expect(strncmp(peer, want, wl) == 0, "%s with %s: %s", path, headers != NULL ? headers : "no header", r);
    else
        cr_expect_str_eq(peer, want, "%s with %s: %s", path, headers != NULL ? headers : "no header", r);
    free(r);
}

ParameterizedTestParameters(proxies, headers_count_from_trusted_peers_only) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, proxies, headers_count_from_trusted_peers_only, .timeout = 60)
{
    wt_server s = {0};
    start(&s, "");
    int port = listen_port(&s, 0);
    char path[64], v[64];
    snprintf(path, sizeof(path), "/%s/info/1", p->name);
    /* Right to left past the trusted hops (10.1.2.3, then the socket's 127.0.0.1). */
    expect_peer("127.0.0.1", port, path, "X-Forwarded-For: 203.0.113.1, 198.51.100.7, 10.1.2.3\r\n", "198.51.100.7:0");
    /* Every hop trusted: the leftmost is the client. */
    expect_peer("127.0.0.1", port, path, "X-Forwarded-For: 10.0.0.5, 10.0.0.6\r\n", "10.0.0.5:0");
    /* Proxies said to set X-Forwarded-For pass a client's Forwarded through untouched: it counts for nothing. */
    expect_peer("127.0.0.1", port, path, "Forwarded: for=198.51.100.50\r\n", "127.0.0.1:");
    expect_peer("127.0.0.1", port, path, "Forwarded: for=198.51.100.50\r\nX-Forwarded-For: 198.51.100.51\r\n",
                "198.51.100.51:0");
    /* client_header = "Forwarded": the other way round; an IPv6 node with its port; proto= sets the scheme. */
    int fport = listen_port(&s, 3);
    expect_peer("127.0.0.1", fport, path, "X-Forwarded-For: 198.51.100.52\r\n", "127.0.0.1:");
    char *r = from_get("127.0.0.1", fport, path,
                       "Forwarded: for=\"[2001:db8:cafe::17]:4711\";proto=https, for=10.9.9.9\r\n"
                       "X-Forwarded-For: 198.51.100.99\r\n");
    cr_assert_str_eq(peer_of(r, v, sizeof(v)), "2001:db8:cafe::17:4711", "%s", r);
    cr_assert_not_null(strstr(r, "\nh.x-forwarded-proto=https\n"), "%s", r);
    free(r);
    /* Two header lines are one list, in order. */
    expect_peer("127.0.0.1", port, path, "X-Forwarded-For: 198.51.100.1\r\nX-Forwarded-For: 10.0.0.1\r\n",
                "198.51.100.1:0");
    /* X-Forwarded-Proto from the trusted proxy, one value for the plugin. */
    r = from_get("127.0.0.1", port, path, "X-Forwarded-For: 198.51.100.8\r\nX-Forwarded-Proto: https\r\n");
    cr_assert_not_null(strstr(r, "\nh.x-forwarded-proto=https\n"), "%s", r);
    free(r);
    /* The same headers from a client that is no proxy change nothing, and
     * the scheme it claims is replaced by the connection's own. */
    r = from_get("127.0.0.2", port, path,
                 "X-Forwarded-For: 198.51.100.7\r\nForwarded: for=198.51.100.7\r\nX-Forwarded-Proto: https\r\n");
    cr_assert(strncmp(peer_of(r, v, sizeof(v)), "127.0.0.2:", 10) == 0, "%s", r);
    cr_assert_not_null(strstr(r, "\nh.x-forwarded-proto=http\n"), "%s", r);
    cr_assert_null(strstr(r, "x-forwarded-proto=https"), "%s", r);
    free(r);
    /* The access log's first field is the client, not the proxy. */
    const char *want[] = {"198.51.100.7 - - ", path, NULL};
    free(access_line(access_log_of(&s), want, 5000));
    const char *want6[] = {"2001:db8:cafe::17 - - ", path, NULL};
    free(access_line(access_log_of(&s), want6, 5000));
    const char *spoofed[] = {"127.0.0.2 - - ", path, NULL};
    free(access_line(access_log_of(&s), spoofed, 5000));
    wt_finish(&s);
}

Test(proxies, malformed_headers_are_ignored_and_logged_once_in_a_while, .timeout = 60)
{
    wt_server s = {0};
    start(&s, "");
    int port = listen_port(&s, 0);
    /* A hop that is no address stops the walk at the nearest trusted one. */
    for (int i = 0; i < 3; i++)
        expect_peer("127.0.0.1", port, "/pool/info/1", "X-Forwarded-For: 198.51.100.7, bogus!\r\n", "127.0.0.1:");
    expect_peer("127.0.0.1", port, "/pool/info/1", "X-Forwarded-For: 198.51.100.7, 10.0.0.1,, \r\n", "127.0.0.1:");
    expect_peer("127.0.0.1", port, "/pool/info/1", "X-Forwarded-For: 198.51.100.7, 10.0.0.300\r\n", "127.0.0.1:");
    expect_peer("127.0.0.1", port, "/pool/info/1", "X-Forwarded-For: [::1]:99999\r\n", "127.0.0.1:");
    /* Past the bogus hop further left nothing is read: the client is what it should be. */
    expect_peer("127.0.0.1", port, "/pool/info/1", "X-Forwarded-For: <script>, 198.51.100.7\r\n", "198.51.100.7:0");
    /* RFC 7239's unknown and obfuscated nodes end the walk too, unlogged. */
    int fport = listen_port(&s, 3);
    expect_peer("127.0.0.1", fport, "/pool/info/1", "Forwarded: for=unknown\r\n", "127.0.0.1:");
    expect_peer("127.0.0.1", fport, "/pool/info/1", "Forwarded: for=_hidden, for=10.0.0.2\r\n", "10.0.0.2:0");
    expect_peer("127.0.0.1", fport, "/pool/info/1", "Forwarded: by=10.0.0.3\r\n", "127.0.0.1:");
    expect_peer("127.0.0.1", fport, "/pool/info/1", "Forwarded: for=198.51.100.7;proto=https;by=10.0.0.9\r\n",
                "198.51.100.7:0");
    /* A chain of trusted hops longer than 32: the 32nd from the right stands. */
    char chain[8192] = "X-Forwarded-For: ";
    for (int i = 1; i <= 200; i++)
        snprintf(chain + strlen(chain), sizeof(chain) - strlen(chain), "10.0.%d.%d%s", i / 256, i % 256,
                 i < 200 ? ", " : "\r\n");
    expect_peer("127.0.0.1", port, "/pool/info/1", chain, "10.0.0.169:0");
    char *log = wt_wait_log(&s, "ignoring a malformed X-Forwarded-For hop from a trusted proxy", 5000);
    const char *first = strstr(log, "ignoring a malformed");
    cr_assert_null(strstr(first + 1, "ignoring a malformed"), "logged more than once in 10 s:\n%s", log);
    cr_assert_null(strstr(log, "'Forwarded'"), "%s", log);
    free(log);
    wt_finish(&s);
}

/* PROXY protocol v2: signature, version/command, family/transport, length, addresses, TLVs. */
static size_t v2_header(unsigned char *out, int command, int family, const char *src, int sport, const char *tlv,
                        size_t tlv_len)
{
    static const unsigned char sig[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};
    memcpy(out, sig, 12);
    out[12] = (unsigned char)(0x20 | command);
    out[13] = (unsigned char)(family == 0 ? 0 : (family == 4 ? 0x11 : 0x21));
    size_t n = 16, alen = family == 0 ? 0 : family == 4 ? 12 : 36;
    if (family == 4) {
        inet_pton(AF_INET, src, out + n);
        inet_pton(AF_INET, "127.0.0.1", out + n + 4);
        out[n + 8] = (unsigned char)(sport >> 8), out[n + 9] = (unsigned char)sport, out[n + 10] = 0, out[n + 11] = 80;
    } else if (family == 6) {
        inet_pton(AF_INET6, src, out + n);
        inet_pton(AF_INET6, "::1", out + n + 16);
        out[n + 32] = (unsigned char)(sport >> 8), out[n + 33] = (unsigned char)sport, out[n + 34] = 0, out[n + 35] = 80;
    }
    n += alen;
    if (tlv_len > 0)
        memcpy(out + n, tlv, tlv_len);
    n += tlv_len;
    out[14] = (unsigned char)((n - 16) >> 8);
    out[15] = (unsigned char)(n - 16);
    return n;
}

static char *proxied_get(int port, const void *hdr, size_t hlen, const char *path, const char *headers)
{
    char req[4096];
    memcpy(req, hdr, hlen);
    int n = snprintf(req + hlen, sizeof(req) - hlen, "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n%s\r\n", path,
                     headers != NULL ? headers : "");
    return from_exchange("127.0.0.1", port, req, hlen + (size_t)n);
}

static void expect_proxied(int port, const void *hdr, size_t hlen, const char *path, const char *want)
{
    char *r = proxied_get(port, hdr, hlen, path, NULL);
    char peer[128];
    peer_of(r, peer, sizeof(peer));
    cr_expect_str_eq(peer, want, "%s: %s", path, r);
    free(r);
}

ParameterizedTestParameters(proxies, proxy_protocol_v1_and_v2_name_the_client) { return wt_policy_params(); }
ParameterizedTest(wt_policy *p, proxies, proxy_protocol_v1_and_v2_name_the_client, .timeout = 60)
{
    wt_server s = {0};
    start(&s, "");
    int port = listen_port(&s, 1);
    char path[64];
    snprintf(path, sizeof(path), "/%s/info/2", p->name);
    const char v1[] = "PROXY TCP4 203.0.113.9 127.0.0.1 5555 80\r\n";
    expect_proxied(port, v1, sizeof(v1) - 1, path, "203.0.113.9:5555");
    const char v1_6[] = "PROXY TCP6 2001:db8::9 ::1 6666 443\r\n";
    expect_proxied(port, v1_6, sizeof(v1_6) - 1, path, "2001:db8::9:6666");
    /* UNKNOWN (the balancer could not tell): the socket's own peer stands. */
    const char v1_unknown[] = "PROXY UNKNOWN\r\n";
    char *r = proxied_get(port, v1_unknown, sizeof(v1_unknown) - 1, path, NULL);
    char v[96];
    cr_assert(strncmp(peer_of(r, v, sizeof(v)), "127.0.0.1:", 10) == 0, "%s", r);
    free(r);
    unsigned char h[256];
    size_t n = v2_header(h, 1, 4, "198.51.100.44", 4242, NULL, 0);
    expect_proxied(port, h, n, path, "198.51.100.44:4242");
    /* With TLVs after the addresses (skipped). */
    n = v2_header(h, 1, 6, "2001:db8::99", 4243, "\x04\x00\x02" "ab\x01\x00\x02h2", 10);
    expect_proxied(port, h, n, path, "2001:db8::99:4243");
    /* LOCAL: the balancer's own health check; the socket's peer stands. */
    n = v2_header(h, 0, 0, NULL, 0, NULL, 0);
    r = proxied_get(port, h, n, path, NULL);
    cr_assert(strncmp(peer_of(r, v, sizeof(v)), "127.0.0.1:", 10) == 0, "%s", r);
    free(r);
    /* HTTP/1.1 keep-alive after the header: both requests are the proxied client's. */
    char two[512];
    int tl = snprintf(two, sizeof(two),
                      "PROXY TCP4 203.0.113.10 127.0.0.1 7777 80\r\nGET %s HTTP/1.1\r\nHost: t\r\n\r\n"
                      "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
                      path, path);
    r = from_exchange("127.0.0.1", port, two, (size_t)tl);
    const char *second = strstr(r + 1, "HTTP/1.1 200");
    cr_assert_not_null(second, "%s", r);
    cr_assert_not_null(strstr(r, "peer=203.0.113.10:7777"), "%s", r);
    cr_assert_not_null(strstr(second, "peer=203.0.113.10:7777"), "%s", r);
    free(r);
    const char *want[] = {"203.0.113.9 - - ", path, NULL};
    free(access_line(access_log_of(&s), want, 5000));
    /* PROXY from a trusted balancer that also sets X-Forwarded-For: the header's client. */
    int chained = listen_port(&s, 2);
    const char lb[] = "PROXY TCP4 192.0.2.10 127.0.0.1 5555 80\r\n";
    r = proxied_get(chained, lb, sizeof(lb) - 1, path, "X-Forwarded-For: 198.51.100.3\r\n");
    cr_assert_str_eq(peer_of(r, v, sizeof(v)), "198.51.100.3:0", "%s", r);
    free(r);
    /* An untrusted PROXY address's X-Forwarded-For counts for nothing. */
    const char other[] = "PROXY TCP4 203.0.113.77 127.0.0.1 5555 80\r\n";
    r = proxied_get(chained, other, sizeof(other) - 1, path, "X-Forwarded-For: 198.51.100.3\r\n");
    cr_assert_str_eq(peer_of(r, v, sizeof(v)), "203.0.113.77:5555", "%s", r);
    free(r);
    wt_finish(&s);
}

Test(proxies, proxy_protocol_refuses_connections_without_a_valid_header, .timeout = 60)
{
    wt_server s = {0};
    start(&s, "request_timeout_ms = 500;");
    int port = listen_port(&s, 1);
    const char *bad[] = {
        "GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",         /* none */
        "PROXY TCP4 999.1.1.1 127.0.0.1 5555 80\r\nGET /hello HTTP/1.1\r\n\r\n", /* bad address */
        "PROXY TCP4 203.0.113.1 127.0.0.1 5555\r\nGET /hello HTTP/1.1\r\n\r\n",  /* a field short */
        "PROXY TCP4 203.0.113.1 127.0.0.1 5555 80 9\r\nGET /hello HTTP/1.1\r\n\r\n",
        "PROXY TCP4 203.0.113.1 127.0.0.1 +555 80\r\nGET /hello HTTP/1.1\r\n\r\n",
        "PROXY TCP4 203.0.113.1 127.0.0.1 5555 80\nGET /hello HTTP/1.1\r\n\r\n", /* bare LF */
        "PROXY TCP4 203.0.113.1 127.0.0.1 5555 80", /* never finished: the timeout */
        "\r\n\r\n", /* a v2 signature's start, never finished */
    };
    int n_bad = (int)(sizeof(bad) / sizeof(bad[0]));
    for (int i = 0; i < n_bad; i++) {
        char *r = from_exchange("127.0.0.1", port, bad[i], strlen(bad[i]));
        cr_expect_str_eq(r, "", "case %d answered: %s", i, r);
        free(r);
    }
    /* A v1 line longer than the protocol's 107 bytes. */
    char longline[300] = "PROXY TCP4 ";
    memset(longline + 11, '1', 200);
    strcpy(longline + 211, "\r\n");
    char *r = from_exchange("127.0.0.1", port, longline, strlen(longline));
    cr_expect_str_eq(r, "", "%s", r);
    free(r);
    /* v2 with a wrong version, and one claiming more bytes than weft reads. */
    unsigned char h[64];
    size_t hn = v2_header(h, 1, 4, "198.51.100.44", 4242, NULL, 0);
    h[12] = 0x31;
    r = from_exchange("127.0.0.1", port, h, hn);
    cr_expect_str_eq(r, "", "%s", r);
    free(r);
    hn = v2_header(h, 1, 4, "198.51.100.44", 4242, NULL, 0);
    h[14] = 0xff, h[15] = 0xff;
    r = from_exchange("127.0.0.1", port, h, hn);
    cr_expect_str_eq(r, "", "%s", r);
    free(r);
    wt_await_metric(&s, "weft_connections_refused_total{reason=\"proxy_protocol\"}", 1, n_bad + 3, 5000);
    free(wt_wait_log(&s, "no valid PROXY v1/v2 header", 2000));
    /* A header that arrives in pieces is fine (two writes: on loopback the
     * server mostly reads the first alone; when not, the case is the one above). */
    int fd = from_connect("127.0.0.1", port);
    from_send(fd, "PROXY TCP4 203.0.", 17);
    const char rest[] = "113.5 127.0.0.1 1 80\r\nGET /pool/info/3 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    from_send(fd, rest, sizeof(rest) - 1);
    r = from_read_all(fd, 15000);
    close(fd);
    cr_assert_not_null(strstr(r, "peer=203.0.113.5:1"), "%s", r);
    free(r);
    /* The other listeners never wanted a header. */
    r = from_get("127.0.0.1", listen_port(&s, 0), "/hello", NULL);
    cr_assert_eq(from_status(r), 200, "%s", r);
    free(r);
    wt_finish(&s);
}

/* Two open connections per client address: the PROXY header's address is the one counted. */
Test(proxies, proxy_protocol_address_is_the_one_connection_caps_count, .timeout = 60)
{
    wt_server s = {0};
    start(&s, "max_connections_per_ip = 2;");
    int port = listen_port(&s, 1);
    const char a[] = "PROXY TCP4 203.0.113.50 127.0.0.1 5555 80\r\nGET /hello HTTP/1.1\r\nHost: t\r\n\r\n";
    int fds[2];
    for (int i = 0; i < 2; i++) {
        fds[i] = from_connect("127.0.0.1", port);
        from_send(fds[i], a, sizeof(a) - 1);
        char buf[512];
        struct pollfd pf = {.fd = fds[i], .events = POLLIN};
        cr_assert_eq(poll(&pf, 1, 10000), 1);
        ssize_t n = read(fds[i], buf, sizeof(buf) - 1);
        cr_assert_gt(n, 12);
        cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%.*s", (int)n, buf);
    }
    /* A third from that client: refused, though every socket comes from 127.0.0.1. */
    char *r = from_exchange("127.0.0.1", port, a, sizeof(a) - 1);
    cr_assert_str_eq(r, "", "%s", r);
    free(r);
    wt_await_metric(&s, "weft_connections_refused_total{reason=\"per_ip\"}", 1, 1, 5000);
    /* Another client behind the same balancer is still served. */
    const char b[] = "PROXY TCP4 203.0.113.51 127.0.0.1 5555 80\r\nGET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    r = from_exchange("127.0.0.1", port, b, sizeof(b) - 1);
    cr_assert_eq(from_status(r), 200, "%s", r);
    free(r);
    close(fds[0]);
    close(fds[1]);
    wt_finish(&s);
}

/* HAProxy in TCP mode in front of weft's TLS: the PROXY header comes first,
 * in clear, then the TLS handshake. The client is Python's ssl module. */
Test(proxies, proxy_protocol_in_front_of_tls, .timeout = 60)
{
    wt_server s = {0};
    wt_write_conf(&s, "# placeholder\n");
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout server.key -out server.crt -days 2 "
             "-subj /CN=localhost >/dev/null 2>&1",
             s.dir);
    cr_assert_eq(system(cmd), 0, "openssl req failed");
    wt_startf(&s,
              "threads = 2;\n"
              "listen = ( \"127.0.0.1:0\", { address = \"127.0.0.1:0\"; proxy_protocol = true;\n"
              "  tls = { certificate = \"server.crt\"; key = \"server.key\"; }; } );\n"
              "routes = (\n" WT_EACH_POLICY("/info/{id}", "reqinfo", "") ");\n");
    int port = 0;
    char *log = wt_read_log(&s);
    const char *https = strstr(log, "listening on https://127.0.0.1:");
    cr_assert_not_null(https, "%s", log);
    port = atoi(https + strlen("listening on https://127.0.0.1:"));
    free(log);
    char script[320];
    snprintf(script, sizeof(script), "%s/client.py", s.dir);
    FILE *f = fopen(script, "w");
    cr_assert_not_null(f);
    fprintf(f, "import socket, ssl, sys\n"
               "s = socket.create_connection(('127.0.0.1', %d), timeout=15)\n"
               "s.sendall(b'PROXY TCP4 203.0.113.77 127.0.0.1 5555 443\\r\\n')\n"
               "c = ssl.create_default_context(); c.check_hostname = False; c.verify_mode = ssl.CERT_NONE\n"
               "t = c.wrap_socket(s, server_hostname='localhost')\n"
               "t.sendall(b'GET /coroutine/info/1 HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n')\n"
               "out = b''\n"
               "while True:\n"
               "    b = t.recv(4096)\n"
               "    if not b: break\n"
               "    out += b\n"
               "sys.stdout.write(out.decode())\n",
            port);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s 2>&1", script);
    FILE *p = popen(cmd, "r");
    char out[8192];
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    cr_assert_eq(pclose(p), 0, "%s", out);
    cr_assert_not_null(strstr(out, "HTTP/1.1 200"), "%s", out);
    cr_assert_not_null(strstr(out, "\npeer=203.0.113.77:5555\n"), "%s", out);
    wt_finish(&s);
}

static char *check(wt_server *s, const char *conf, int *rc)
{
    char *out;
    wt_write_conf(s, conf);
    const char *args[] = {"-t", "-c", s->conf, NULL};
    *rc = wt_run(&out, args, NULL);
    return out;
}

Test(proxies, config_errors_name_file_and_line, .timeout = 30)
{
    wt_server s = {0};
    int rc;
    char *out = check(&s,
                      "listen = ( { address = \"127.0.0.1:0\";\n"
                      "  trusted_proxies = [\"10.0.0.0/33\", \"10.0.0.1/8\", \"banana\", \"::1/129\"]; },\n"
                      "  { address = \"127.0.0.1:0\"; trusted_proxies = []; proxy_protocol = \"yes\";\n"
                      "    client_header = \"X-Real-IP\"; } );\n"
                      WT_HELLO_ROUTES "\n",
                      &rc);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, ":2: listen[0].trusted_proxies: '10.0.0.0/33': the prefix length must be 0-32"), "%s", out);
    cr_assert_not_null(strstr(out, ":2: listen[0].trusted_proxies: '10.0.0.1/8' has bits set past its /8 prefix"), "%s", out);
    cr_assert_not_null(strstr(out, ":2: listen[0].trusted_proxies: 'banana' is not an IPv4 or IPv6 address"), "%s", out);
    cr_assert_not_null(strstr(out, "'::1/129': the prefix length must be 0-128"), "%s", out);
    cr_assert_not_null(strstr(out, ":3: listen[1].trusted_proxies: an empty list trusts nobody"), "%s", out);
    cr_assert_not_null(strstr(out, ":3: listen[1].proxy_protocol"), "%s", out);
    cr_assert_not_null(strstr(out, ":4: listen[1].client_header: 'X-Real-IP' is not one of X-Forwarded-For, Forwarded"),
                       "%s", out);
    free(out);
}
