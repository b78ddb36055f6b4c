#include "base/cidr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int weft_addr_parse(const char *text, size_t len, uint8_t out[16])
{
    char buf[INET6_ADDRSTRLEN];
    if (len == 0 || len >= sizeof(buf))
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    struct in_addr v4;
    if (inet_pton(AF_INET, buf, &v4) == 1) {
        memset(out, 0, 10);
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &v4, 4);
        return 0;
    }
    return inet_pton(AF_INET6, buf, out) == 1 ? 0 : -1;
}

int weft_cidr_parse(const char *text, weft_cidr *out, char *why, size_t size)
{
    const char *slash = strchr(text, '/');
    size_t alen = slash != NULL ? (size_t)(slash - text) : strlen(text);
    if (weft_addr_parse(text, alen, out->addr) != 0) {
        snprintf(why, size, "'%s' is not an IPv4 or IPv6 address or ADDRESS/PREFIX range", text);
        return -1;
    }
    int v4 = memchr(text, ':', alen) == NULL;
    unsigned max = v4 ? 32 : 128, prefix = max;
    if (slash != NULL) {
        char *end = NULL;
        errno = 0;
        unsigned long p = strtoul(slash + 1, &end, 10);
        if (errno != 0 || end == slash + 1 || *end != '\0' || p > max) {
            snprintf(why, size, "'%s': the prefix length must be 0-%u", text, max);
            return -1;
        }
        prefix = (unsigned)p;
    }
    out->prefix = prefix + (v4 ? 96 : 0);
    for (unsigned bit = out->prefix; bit < 128; bit++) {
        if (out->addr[bit / 8] & (0x80u >> (bit % 8))) {
            snprintf(why, size, "'%s' has bits set past its /%u prefix (did you mean another range?)", text, prefix);
            return -1;
        }
    }
    return 0;
}

static int in_range(const weft_cidr *c, const uint8_t a[16])
{
    unsigned full = c->prefix / 8, rest = c->prefix % 8;
    if (memcmp(c->addr, a, full) != 0)
        return 0;
    if (rest == 0)
        return 1;
    uint8_t mask = (uint8_t)(0xff00u >> rest);
    return (a[full] & mask) == c->addr[full];
}

int weft_cidr_match(const weft_cidr *list, size_t n, const uint8_t a[16])
{
    for (size_t i = 0; i < n; i++)
        if (in_range(&list[i], a))
            return 1;
    return 0;
}
