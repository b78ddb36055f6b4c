#include "core/proxyproto.h"

#include <arpa/inet.h>
#include <string.h>

#include "core/loop.h"

static const unsigned char v2_sig[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};

/* A decimal port of 1-5 digits, no sign, no leading garbage. */
static int parse_port(const char *s, size_t n, unsigned *out)
{
    if (n == 0 || n > 5)
        return -1;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > 65535)
        return -1;
    *out = v;
    return 0;
}

/* "PROXY TCP4 192.0.2.1 198.51.100.1 56324 443\r\n", "PROXY UNKNOWN ...\r\n". */
static long parse_v1(const unsigned char *buf, size_t len, struct sockaddr_storage *sa, socklen_t *salen)
{
    static const char prefix[] = "PROXY ";
    size_t cmp = len < 6 ? len : 6;
    if (memcmp(buf, prefix, cmp) != 0)
        return -1;
    const unsigned char *eol = memchr(buf, '\n', len < 107 ? len : 107);
    if (eol == NULL)
        return len < 107 ? 0 : -1;
    if (eol == buf || eol[-1] != '\r')
        return -1;
    size_t n = (size_t)(eol - 1 - buf);
    char line[108];
    memcpy(line, buf, n);
    line[n] = '\0';
    if (strncmp(line + 6, "UNKNOWN", 7) == 0 && (line[13] == '\0' || line[13] == ' ')) {
        *salen = 0;
        return (long)(eol - buf) + 1;
    }
    /* Exactly five fields after "PROXY", one space apart. */
    char *f[5];
    char *p = line + 6;
    for (int i = 0; i < 5; i++) {
        f[i] = p;
        char *sp = strchr(p, ' ');
        if ((sp == NULL) != (i == 4) || (sp != NULL && sp == p))
            return -1;
        if (sp != NULL) {
            *sp = '\0';
            p = sp + 1;
        }
    }
    if (*f[4] == '\0')
        return -1;
    int family = strcmp(f[0], "TCP4") == 0 ? AF_INET : strcmp(f[0], "TCP6") == 0 ? AF_INET6 : -1;
    unsigned char src[16], dst[16];
    unsigned sport, dport;
    if (family < 0 || inet_pton(family, f[1], src) != 1 || inet_pton(family, f[2], dst) != 1 ||
        parse_port(f[3], strlen(f[3]), &sport) != 0 || parse_port(f[4], strlen(f[4]), &dport) != 0)
        return -1;
    memset(sa, 0, sizeof(*sa));
    if (family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)sa;
        in->sin_family = AF_INET;
        memcpy(&in->sin_addr, src, 4);
        in->sin_port = htons((uint16_t)sport);
        *salen = sizeof(*in);
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
        in6->sin6_family = AF_INET6;
        memcpy(&in6->sin6_addr, src, 16);
        in6->sin6_port = htons((uint16_t)sport);
        *salen = sizeof(*in6);
    }
    return (long)(eol - buf) + 1;
}

/* 12-byte signature, version 2 + command, family + transport, length, addresses, TLVs. */
static long parse_v2(const unsigned char *buf, size_t len, struct sockaddr_storage *sa, socklen_t *salen)
{
    if (len < 16)
        return 0;
    unsigned ver = buf[12] >> 4, cmd = buf[12] & 0x0f, fam = buf[13] >> 4, proto = buf[13] & 0x0f;
    size_t body = ((size_t)buf[14] << 8) | buf[15];
    if (ver != 2 || cmd > 1 || 16 + body > WEFT_PROXYPROTO_MAX)
        return -1;
    if (len < 16 + body)
        return 0;
    *salen = 0;
    if (cmd == 0 || (proto != 1 && proto != 2))
        return (long)(16 + body); /* LOCAL (the balancer's own health check), or no address to take */
    memset(sa, 0, sizeof(*sa));
    if (fam == 1) {
        if (body < 12)
            return -1;
        struct sockaddr_in *in = (struct sockaddr_in *)sa;
        in->sin_family = AF_INET;
        memcpy(&in->sin_addr, buf + 16, 4);
        memcpy(&in->sin_port, buf + 24, 2);
        *salen = sizeof(*in);
    } else if (fam == 2) {
        if (body < 36)
            return -1;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
        in6->sin6_family = AF_INET6;
        memcpy(&in6->sin6_addr, buf + 16, 16);
        memcpy(&in6->sin6_port, buf + 48, 2);
        *salen = sizeof(*in6);
    } else if (fam != 0 && fam != 3) {
        return -1;
    }
    return (long)(16 + body);
}

long weft_proxyproto_parse(const unsigned char *buf, size_t len, struct sockaddr_storage *sa, socklen_t *salen)
{
    if (len == 0)
        return 0;
    if (buf[0] == v2_sig[0]) {
        size_t cmp = len < sizeof(v2_sig) ? len : sizeof(v2_sig);
        if (memcmp(buf, v2_sig, cmp) != 0)
            return -1;
        return len < sizeof(v2_sig) ? 0 : parse_v2(buf, len, sa, salen);
    }
    return parse_v1(buf, len, sa, salen);
}

/* ---- reading it off an accepted socket ---- */

static void finish(weft_conn *c, int rc)
{
    weft_timers_cancel(c->loop->timers, &c->pp_timer);
    h2o_socket_read_stop(c->sock);
    void (*done)(weft_conn *, int) = c->pp_done;
    c->pp_done = NULL;
    done(c, rc);
}

static void on_timeout(weft_timer *t)
{
    weft_conn *c = H2O_STRUCT_FROM_MEMBER(weft_conn, pp_timer, t);
    finish(c, -1);
}

static void on_read(h2o_socket_t *sock, const char *err)
{
    weft_conn *c = sock->on_close.data;
    if (err != NULL) {
        finish(c, -1);
        return;
    }
    struct sockaddr_storage sa;
    socklen_t salen = 0;
    long n = weft_proxyproto_parse((const unsigned char *)sock->input->bytes, sock->input->size, &sa, &salen);
    if (n == 0 && sock->input->size < WEFT_PROXYPROTO_MAX)
        return; /* the rest of it is still on its way */
    if (n <= 0) {
        finish(c, -1);
        return;
    }
    h2o_buffer_consume(&sock->input, (size_t)n);
    if (salen != 0)
        h2o_socket_setpeername(sock, (struct sockaddr *)&sa, salen);
    finish(c, 0);
}

void weft_proxyproto_read(weft_conn *c, unsigned timeout_ms, void (*done)(weft_conn *c, int rc))
{
    c->pp_done = done;
    /* Without memory for the timer a header that never comes waits for the
     * client to leave; refusing the connection is the better failure. */
    if (weft_timers_add(c->loop->timers, &c->pp_timer, timeout_ms, on_timeout) != 0) {
        c->pp_done = NULL;
        done(c, -1);
        return;
    }
    h2o_socket_read_start(c->sock, on_read);
}
